package desktop

import (
	"os"
	"path/filepath"
	"strconv"

	"github.com/godbus/dbus/v5"
)

// SessionBusAddress is the D-Bus session bus address of an environment
// (getenv is os.Getenv in main): DBUS_SESSION_BUS_ADDRESS, else the socket
// "bus" in $XDG_RUNTIME_DIR or in /run/user/<uid> when it exists (where
// godbus, and so systray, looks). It never starts a bus ("autolaunch:"
// counts as none): with no bus there is no tray. When the address was
// found on disk, main exports it as DBUS_SESSION_BUS_ADDRESS so that
// systray dials the same bus.
func SessionBusAddress(getenv func(string) string, uid int) string {
	if a := getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" && a != "autolaunch:" {
		return a
	}
	for _, dir := range []string{getenv("XDG_RUNTIME_DIR"), "/run/user/" + strconv.Itoa(uid)} {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, "bus")
		if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return "unix:path=" + p
		}
	}
	return ""
}

// TrayHostPresent reports whether a tray host (a StatusNotifierWatcher:
// KDE, or GNOME with the AppIndicator extension, ...) is on the session
// bus at addr. Without one the tray icon shows nowhere, so closing the
// window must quit rather than hide the app out of reach.
func TrayHostPresent(addr string) bool {
	if addr == "" {
		return false
	}
	conn, err := dbus.Connect(addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	var has bool
	err = conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, "org.kde.StatusNotifierWatcher").Store(&has)
	return err == nil && has
}
