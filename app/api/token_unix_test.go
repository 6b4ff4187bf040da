//go:build linux

package api

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/internal/testutil"
)

// TestATokenOthersCouldReadIsReplaced: another local user who could read
// the owner's token file (0644, from a backup, say) and keeps it open
// learns nothing of the token that replaces it: the engine writes a new
// file and renames it into place, the old token stops being the one, and
// the other user can open neither the new file nor read the new token
// through the old descriptor.
func TestATokenOthersCouldReadIsReplaced(t *testing.T) {
	other := testutil.SecondUser(t)
	dir := filepath.Join(testDir(t), "cfg")
	if err := os.MkdirAll(dir, 0o711); err != nil { // others may pass, as ~/.config often lets them
		t.Fatal(err)
	}
	path := filepath.Join(dir, "api-token")
	old := strings.Repeat("a", 64)
	if err := os.WriteFile(path, []byte(old+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	for p := filepath.Dir(dir); p != "/"; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o001 == 0 {
			t.Skipf("%s is not open to others; the second user cannot reach the token", p)
		}
	}
	// The other user opens the file and holds it: it reads again when
	// told (a line on stdin), from its old descriptor, and tries the path.
	cmd := other.Command("/usr/bin/python3", "-c", `
import sys
f = open(sys.argv[1])
print(f.read().strip(), flush=True)
sys.stdin.readline()
f.seek(0)
print(f.read().strip(), flush=True)
try:
    print(open(sys.argv[1]).read().strip(), flush=True)
except OSError as e:
    print("refused", e.errno, flush=True)
`, path)
	in, _ := cmd.StdinPipe()
	outp, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	out := bufio.NewReader(outp)
	line := func() string { s, _ := out.ReadString('\n'); return strings.TrimSpace(s) }
	if got := line(); got != old {
		t.Fatalf("the other user read %q before, want the old token", got)
	}

	tok, replaced, err := LoadOrCreateToken(path)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(in, "\n")
	through, again := line(), line()
	in.Close()
	if !replaced || tok == old || len(tok) != 64 {
		t.Fatalf("LoadOrCreateToken = %q, replaced %v; want a new token, replaced", tok, replaced)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the new token file: %v, %v; want mode 0600", fi.Mode(), err)
	}
	if through != old {
		t.Errorf("through its old descriptor the other user read %q, want the old token only", through)
	}
	if !strings.HasPrefix(again, "refused 13") {
		t.Errorf("opening the token again, the other user got %q, want permission denied", again)
	}
	if again, replaced, err := LoadOrCreateToken(path); err != nil || replaced || again != tok {
		t.Errorf("the next start read %q (replaced %v, %v), want the new token kept", again, replaced, err)
	}
}

// TestAConfigDirOthersControlIsRefused: a config dir that is a link,
// another user's, or open to others' writes holds a token someone else
// may have chosen; the daemon does not start on it, and says what to do.
// A token file that is a link is replaced, never followed.
func TestAConfigDirOthersControlIsRefused(t *testing.T) {
	other := testutil.SecondUser(t)
	base := testDir(t)
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	theirs := filepath.Join(base, "theirs")
	if err := os.Mkdir(theirs, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, other.UID, other.GID); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(theirs, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{open, "chmod 0700"},
		{theirs, "belongs to uid " + strconv.Itoa(other.UID)},
		{link, "is not a folder"},
	} {
		_, _, err := LoadOrCreateToken(filepath.Join(c.dir, "api-token"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("config dir %s: %v, want a refusal that says %q", c.dir, err, c.want)
		}
	}

	own := filepath.Join(base, "own")
	if err := os.Mkdir(own, 0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(base, "elsewhere")
	if err := os.WriteFile(target, []byte(strings.Repeat("b", 64)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(own, "api-token")); err != nil {
		t.Fatal(err)
	}
	tok, replaced, err := LoadOrCreateToken(filepath.Join(own, "api-token"))
	if err != nil || !replaced || tok == strings.Repeat("b", 64) {
		t.Fatalf("a token file that is a link: %q replaced %v %v; want a new token in a file of its own", tok, replaced, err)
	}
	if fi, err := os.Lstat(filepath.Join(own, "api-token")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the token is not a plain file after: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(target); string(b) != strings.Repeat("b", 64) {
		t.Errorf("the link's target was written: %q", b)
	}
}
