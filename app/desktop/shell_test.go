package desktop

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestNoSessionBus checks that without a bus the tray is skipped with an
// error to log, and that the stop it returns is safe to call.
func TestNoSessionBus(t *testing.T) {
	t.Parallel()
	stop, err := StartTray(context.Background(), TrayOptions{})
	if !errors.Is(err, ErrNoSessionBus) {
		t.Fatalf("StartTray with no bus: %v, want ErrNoSessionBus", err)
	}
	stop()
	stop, err = StartTray(context.Background(), TrayOptions{BusAddress: "unix:path=" + filepath.Join(t.TempDir(), "no-bus")})
	if err == nil {
		t.Fatal("StartTray with a bus that is not there succeeded")
	}
	stop()
}

func TestSessionBusAddress(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, err := net.Listen("unix", filepath.Join(dir, "bus"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	notSocket := t.TempDir()
	os.WriteFile(filepath.Join(notSocket, "bus"), nil, 0o600)
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"env_wins", map[string]string{"DBUS_SESSION_BUS_ADDRESS": "unix:path=/x", "XDG_RUNTIME_DIR": dir}, "unix:path=/x"},
		{"runtime_dir_socket", map[string]string{"XDG_RUNTIME_DIR": dir}, "unix:path=" + filepath.Join(dir, "bus")},
		{"autolaunch_is_none", map[string]string{"DBUS_SESSION_BUS_ADDRESS": "autolaunch:", "XDG_RUNTIME_DIR": notSocket}, ""},
		{"plain_file_is_none", map[string]string{"XDG_RUNTIME_DIR": notSocket}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// uid -1: no /run/user fallback can match on the test machine.
			if got := SessionBusAddress(func(k string) string { return tc.env[k] }, -1); got != tc.want {
				t.Errorf("SessionBusAddress = %q, want %q", got, tc.want)
			}
		})
	}
}
