package doctor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/internal/testutil"
)

// TestDoctorSaysWhatOtherUsersCouldTake: a config dir another user may
// write, an API token others may read, a runtime dir the second user
// made, and the dashboard's port held by the second user are each a
// failed check with what to do; the engine's own, closed dirs and a
// free port are not.
func TestDoctorSaysWhatOtherUsersCouldTake(t *testing.T) {
	u := testutil.SecondUser(t)
	root := testutil.SandboxDir(t, "senclaw-doctor-")
	os.Chmod(root, 0o1777)
	config, runtime := filepath.Join(root, "config"), filepath.Join(root, "run")
	os.Mkdir(config, 0o700)
	os.WriteFile(filepath.Join(config, "api-token"), []byte("t\n"), 0o600)
	os.Mkdir(runtime, 0o700)
	port := testutil.FreePort(t)
	listen := "127.0.0.1:" + strconv.Itoa(port)
	d := New(Options{EngineErr: errors.New("no engine in this test"), DataDir: filepath.Join(root, "data"), EUID: os.Geteuid(),
		ConfigDir: config, RuntimeDir: runtime, Listen: listen})
	find := func(r *Report, name, about string) Check {
		for _, c := range r.Checks {
			if c.Name == name && strings.Contains(c.Detail, about) {
				return c
			}
		}
		t.Fatalf("no %s check about %s: %+v", name, about, r.Checks)
		return Check{}
	}
	r := d.Check(context.Background())
	for _, c := range []Check{find(r, "permissions", config+" is"), find(r, "permissions", "api-token"), find(r, "runtime dir", runtime)} {
		if c.Status != OK {
			t.Errorf("the engine's own: %+v", c)
		}
	}
	if c := find(r, "dashboard port", listen); c.Status != Warn {
		t.Errorf("a free port: %+v", c)
	}

	os.Chmod(config, 0o777)
	os.Chmod(filepath.Join(config, "api-token"), 0o644)
	os.Remove(runtime)
	u.Run(t, "mkdir", "-m", "0700", runtime)
	pid, _ := u.HoldPort(t, port)
	r = d.Check(context.Background())
	for _, c := range []struct {
		check Check
		says  string
	}{
		{find(r, "permissions", config+" is"), "chmod 0700 " + config},
		{find(r, "permissions", "api-token"), "chmod 0600"},
		{find(r, "runtime dir", runtime), u.Name},
		{find(r, "dashboard port", "port "+strconv.Itoa(port)), "pid " + strconv.Itoa(pid) + " (python3) of uid " + strconv.Itoa(u.UID)},
	} {
		if c.check.Status != Fail || c.check.Fix == "" || !strings.Contains(c.check.Detail+c.check.Fix, c.says) {
			t.Errorf("want a failed check saying %q: %+v", c.says, c.check)
		}
	}
}
