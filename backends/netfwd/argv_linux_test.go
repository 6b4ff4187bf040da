package netfwd_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"testing"

	"github.com/senclaw/sandbox/backends/netfwd"
	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
)

// The forwarder of a sandbox made ahead runs the command it reads whole
// and nothing when the pipe closes early: a command cut where an
// argument ends runs neither as the shorter command nor at all.
func TestTheForwarderRunsNoCommandCutShort(t *testing.T) {
	fwd := netfwdtest.Path(t)
	full, err := netfwd.EncodeArgv([]string{"/bin/sh", "-c", `echo "ran with $#"`, "sh", "a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	cut := full[:len(full)-len("b\x00")]
	for _, c := range []struct {
		name string
		in   []byte
		out  string
		code int
	}{
		{"whole", full, "ran with 2\n", 0},
		{"cut_at_an_argument", cut, "", 125},
		{"cut_in_an_argument", full[:len(full)-1], "", 125},
		{"nothing", nil, "", 125},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			cmd := exec.Command(fwd, "--argv-fd", "3", "--")
			cmd.ExtraFiles = []*os.File{r}
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r.Close()
			_, werr := w.Write(c.in)
			w.Close()
			err = cmd.Wait()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if werr != nil || code != c.code || out.String() != c.out {
				t.Errorf("exit %d (want %d), stdout %q (want %q), stderr %q, write %v", code, c.code, out.String(), c.out, errb.String(), werr)
			}
		})
	}
}
