package envexec

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/reexec"
)

func TestMain(m *testing.M) {
	reexec.Init()
	os.Exit(m.Run())
}

func TestParse(t *testing.T) {
	t.Parallel()
	drop := &backends.Credential{UID: 65534, GID: 65533}
	r, err := parse(Argv("/self", 5, drop, []string{"/bin/sh", "-c", "--uid 0"})[2:])
	if err != nil || r.envFD != 5 || *r.drop != *drop || !slices.Equal(r.argv, []string{"/bin/sh", "-c", "--uid 0"}) {
		t.Fatalf("parse = %+v, %v", r, err)
	}
	for _, bad := range [][]string{
		{"--env-fd", "5", "--"},                                          // no command
		{"--env-fd", "1", "--", "/bin/true"},                             // a standard descriptor
		{"--", "/bin/true"},                                              // no descriptor
		{"--env-fd", "5", "--uid", "7", "--", "/bin/true"},               // uid without gid
		{"--env-fd", "5", "--uid", "0", "--gid", "0", "--", "/bin/true"}, // root
		{"--env-fd", "5", "--", "true"},                                  // not absolute
		{"--env-fd", "5", "--shell", "1", "--", "/bin/true"},             // unknown option
		{"--env-fd", "x", "--", "/bin/true"},
	} {
		if _, err := parse(bad); err == nil {
			t.Errorf("parse(%q) accepted it", bad)
		}
	}
}

func TestEnvData(t *testing.T) {
	t.Parallel()
	env := []string{"A=1", "EMPTY=", "B=x=y"}
	data, err := EnvData(env)
	if err != nil || !slices.Equal(splitEnv(data), env) {
		t.Fatalf("round trip %q: %q, %v", data, splitEnv(data), err)
	}
	if got := splitEnv(nil); len(got) != 0 {
		t.Errorf("empty: %q", got)
	}
	if _, err := EnvData([]string{"A=x\x00LD_PRELOAD=/x.so"}); err == nil {
		t.Error("a NUL was accepted")
	}
}

// The launcher gives the command exactly the environment from its
// descriptor (none of its own), closes that descriptor, and drops to the
// user it is told.
func TestLauncherExecsWithTheGivenEnvironment(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/bin:/bin", "ONLY=this one"}
	data, _ := EnvData(env)
	go func() { w.Write(data); w.Close() }()
	var drop *backends.Credential
	if os.Geteuid() == 0 {
		drop = &backends.Credential{UID: 65534, GID: 65534}
	}
	cmd := exec.Command(self, Argv(self, 3, drop, []string{"/bin/sh", "-c", "id -u; id -G; readlink /proc/$$/fd/3 || echo closed; env"})[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "ENGINE_SECRET=x"}
	cmd.ExtraFiles = []*os.File{r}
	out, err := cmd.CombinedOutput()
	r.Close()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := "0"
	if drop != nil {
		want = "65534"
	} else {
		want = strings.TrimSpace(string(must(exec.Command("id", "-u").Output())))
	}
	if lines[0] != want || (drop != nil && lines[1] != "65534") {
		t.Errorf("ran as %q %q, want %s", lines[0], lines[1], want)
	}
	// The descriptor it read is closed before the exec.
	if lines[2] != "closed" {
		t.Errorf("the command has the environment's descriptor: %q", lines[2])
	}
	rest := lines[3:]
	got := slices.DeleteFunc(rest, func(s string) bool { return strings.HasPrefix(s, "PWD=") })
	if !slices.Equal(got, env) {
		t.Errorf("environment %q, want %q", got, env)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
