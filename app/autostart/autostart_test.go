package autostart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnableDisableShowsWhatIsOnDisk(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "autostart")
	e := Entry{Dir: dir, Exec: "/opt/sen claw/senclaw"}
	if st, err := e.State(); err != nil || st.Enabled {
		t.Fatalf("fresh: %+v %v", st, err)
	}
	st, err := e.Set(true)
	if err != nil || !st.Enabled || st.Foreign {
		t.Fatalf("enable: %+v %v", st, err)
	}
	data, _ := os.ReadFile(e.Path())
	if !strings.Contains(string(data), "Exec=\"/opt/sen claw/senclaw\"\n") {
		t.Fatalf("the entry's Exec is not quoted: %s", data)
	}
	if st, _ := e.Set(true); !st.Enabled {
		t.Fatal("enabling twice")
	}
	// The user turns it off the XDG way, by hand: shown as off.
	os.WriteFile(e.Path(), append(data, []byte("Hidden=true\n")...), 0o644)
	if st, _ := e.State(); st.Enabled {
		t.Fatal("Hidden=true must read as disabled")
	}
	if st, err := e.Set(false); err != nil || st.Enabled {
		t.Fatalf("disable: %+v %v", st, err)
	}
	if _, err := os.Stat(e.Path()); !os.IsNotExist(err) {
		t.Fatal("the entry is still there")
	}
}

func TestForeignEntryIsLeftAlone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := Entry{Dir: dir, Exec: "/usr/bin/senclaw"}
	mine := []byte("[Desktop Entry]\nType=Application\nExec=/home/me/bin/senclaw --data-dir /x\n")
	os.WriteFile(e.Path(), mine, 0o644)
	st, err := e.State()
	if err != nil || !st.Enabled || !st.Foreign || st.Exec != "/home/me/bin/senclaw --data-dir /x" {
		t.Fatalf("foreign: %+v %v", st, err)
	}
	for _, on := range []bool{true, false} {
		if _, err := e.Set(on); err == nil || !strings.Contains(err.Error(), "not written by senclaw") {
			t.Fatalf("set(%v) on a foreign entry: %v", on, err)
		}
	}
	if data, _ := os.ReadFile(e.Path()); string(data) != string(mine) {
		t.Fatal("the foreign entry changed")
	}
}

func TestRelativeExecRefused(t *testing.T) {
	t.Parallel()
	e := Entry{Dir: t.TempDir(), Exec: "senclaw"}
	if _, err := e.Set(true); err == nil {
		t.Fatal("a relative Exec was accepted")
	}
}
