package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/internal/testutil"
)

// agentUser is an ordinary user's session for a real agent CLI's test:
// the second user, with a home holding a project and a folder beside it
// (only the host's to write), a runtime dir, and the senclaw of this
// build, whose daemon the session's first senclaw call starts and whose
// stop ends the test.
type agentUser struct {
	t                          *testing.T
	u                          testutil.OtherUser
	bin                        string
	home, run, project, beside string
	env                        []string
}

func newAgentUser(t *testing.T, prefix string, more ...string) *agentUser {
	t.Helper()
	a := &agentUser{t: t, u: testutil.SecondUser(t), bin: testutil.Senclaw(t)}
	root := testutil.SandboxDir(t, prefix)
	a.home, a.run = filepath.Join(root, "home"), filepath.Join(root, "run")
	a.project, a.beside = filepath.Join(a.home, "project"), filepath.Join(a.home, "beside")
	dirs := []string{a.home, a.run, a.project, a.beside}
	for _, d := range more {
		dirs = append(dirs, filepath.Join(a.home, d))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, a.u.UID, a.u.GID); err != nil {
			t.Fatal(err)
		}
	}
	testutil.StopDaemonAtCleanup(t, filepath.Join(a.run, "senclaw"))
	a.env = []string{"HOME=" + a.home, "XDG_RUNTIME_DIR=" + a.run, "XDG_CONFIG_HOME=" + filepath.Join(a.home, ".config"),
		"SENCLAW_DATA_DIR=" + filepath.Join(a.home, ".local", "share", "senclaw"), "SENCLAW_LISTEN=127.0.0.1:0"}
	t.Cleanup(func() { a.as(a.home, nil, a.bin, "stop") })
	return a
}

// as runs name as the user in dir, with the session's environment and
// extra, and returns what it printed.
func (a *agentUser) as(dir string, extra []string, name string, args ...string) (string, error) {
	cmd := a.u.Command(name, args...)
	cmd.Env = append(append(cmd.Env, a.env...), extra...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// senclaw runs senclaw as the user, failing the test if it fails.
func (a *agentUser) senclaw(args ...string) string {
	a.t.Helper()
	out, err := a.as(a.home, nil, a.bin, args...)
	if err != nil {
		a.t.Fatalf("senclaw %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// lastRun is the user's engine's newest run record.
func (a *agentUser) lastRun() apitype.RunRecord {
	a.t.Helper()
	var runs []apitype.RunRecord
	if err := json.Unmarshal([]byte(a.senclaw("runs", "--json", "--limit", "1")), &runs); err != nil || len(runs) == 0 {
		a.t.Fatalf("senclaw runs --json: %v %d", err, len(runs))
	}
	return runs[0]
}
