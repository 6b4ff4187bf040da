package limits

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"
)

// engineLeaf is the cgroup, in the delegated scope, that the engine's own
// process moves to: cgroup v2 hands controllers down only from a cgroup
// that holds no process itself, and the scope must hand them to the runs.
const engineLeaf = "engine"

// errUnitExists is systemd's answer to a StartTransientUnit of a unit
// that is there already.
const errUnitExists = "org.freedesktop.systemd1.UnitExists"

// delegate asks systemd's user manager for a transient scope with the
// engine's pid in it and Delegate=yes (StartTransientUnit, as rootless
// Podman does), moves the engine into a leaf of it and enables the
// controllers below the scope, and returns the layout whose runs go under
// the scope. A scope of the same name that is there already is a dead
// engine's of the same data dir (the data dir's lock is held): it is
// adopted, and what its runs left is found again.
func delegate(ctx context.Context, opts HostOptions, l Layout) (Layout, string, error) {
	conn, err := userManager(ctx, opts.Getenv)
	if err != nil {
		return Layout{}, "", err
	}
	defer conn.Close()
	unit := opts.Scope + ".scope"
	manager := conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1")
	type property struct {
		Name  string
		Value dbus.Variant
	}
	props := []property{
		{"Description", dbus.MakeVariant("SenClaw Sandbox engine and its sandboxes")},
		{"PIDs", dbus.MakeVariant([]uint32{uint32(os.Getpid())})},
		{"Delegate", dbus.MakeVariant(true)},
	}
	aux := []struct {
		Name  string
		Props []property
	}{}
	var job dbus.ObjectPath
	err = manager.CallWithContext(ctx, "org.freedesktop.systemd1.Manager.StartTransientUnit", 0, unit, "fail", props, aux).Store(&job)
	var dbusErr dbus.Error
	adopt := errors.As(err, &dbusErr) && dbusErr.Name == errUnitExists
	if err != nil && !adopt {
		return Layout{}, "", fmt.Errorf("asking systemd's user manager for the scope %s: %w", unit, err)
	}
	var rel string
	if adopt {
		if rel, err = unitCgroup(ctx, conn, unit); err != nil {
			return Layout{}, "", fmt.Errorf("adopting the scope %s that an engine of this data dir left: %w", unit, err)
		}
	} else if rel, err = waitInScope(ctx, unit); err != nil {
		return Layout{}, "", err
	}
	scope, err := unifiedDir(l, rel)
	if err != nil {
		return Layout{}, "", err
	}
	if err := ownScope(scope); err != nil {
		return Layout{}, "", fmt.Errorf("the scope %s: %w", unit, err)
	}
	leaf := filepath.Join(scope, engineLeaf)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return Layout{}, "", fmt.Errorf("making the engine's own cgroup in %s: %w", unit, err)
	}
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return Layout{}, "", fmt.Errorf("moving the engine into its own cgroup in %s: %w", unit, err)
	}
	if err := enableControllers(scope); err != nil {
		return Layout{}, "", fmt.Errorf("enabling the controllers of %s for the runs: %w", unit, err)
	}
	return Layout{version: 2, v2: scope, unit: unit}, unit, nil
}

// userManager connects to systemd's user manager: through the session
// bus, else through its private socket (as systemctl --user does). Only
// sockets of this user's own, not links, are tried: nothing is sent to a
// socket another user could have put in the way.
func userManager(ctx context.Context, getenv func(string) string) (*dbus.Conn, error) {
	runtime := getenv("XDG_RUNTIME_DIR")
	if runtime == "" {
		// No session (sudo, cron, a shell in a container): the user
		// manager's runtime dir is still there when it runs (linger).
		runtime = "/run/user/" + strconv.Itoa(os.Getuid())
	}
	type place struct {
		path string
		bus  bool // a bus (Hello first), else the manager's own socket
	}
	var places []place
	if addr := getenv("DBUS_SESSION_BUS_ADDRESS"); addr != "" {
		if p, ok := strings.CutPrefix(addr, "unix:path="); ok && !strings.ContainsAny(p, ",;") {
			places = append(places, place{p, true})
		}
	}
	places = append(places, place{filepath.Join(runtime, "bus"), true}, place{filepath.Join(runtime, "systemd", "private"), false})
	var why []string
	for _, p := range places {
		if err := ownSocket(p.path); err != nil {
			why = append(why, err.Error())
			continue
		}
		conn, err := dbus.Dial("unix:path="+p.path, dbus.WithContext(ctx))
		if err == nil {
			err = conn.Auth(nil)
			if err == nil && p.bus {
				err = conn.Hello()
			}
			if err == nil {
				return conn, nil
			}
			conn.Close()
		}
		why = append(why, fmt.Sprintf("%s: %v", p.path, err))
	}
	return nil, fmt.Errorf("systemd's user manager does not answer (%s)", strings.Join(why, "; "))
}

// ownSocket checks that path is a socket of this user's own, not a link.
func ownSocket(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("no %s", path)
		}
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if fi.Mode()&fs.ModeSocket == 0 || !ok || int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s is not a socket of uid %d's own; not used", path, os.Getuid())
	}
	return nil
}

// waitInScope waits until systemd has moved the engine into unit, and
// returns the engine's cgroup path then (the scope's).
func waitInScope(ctx context.Context, unit string) (string, error) {
	for {
		own := ownCgroups()[""]
		if strings.HasSuffix(own, "/"+unit) {
			return own, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("systemd's user manager took the scope %s but did not move the engine into it in time (it is in %q)", unit, own)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// unitCgroup asks systemd for the cgroup path of unit.
func unitCgroup(ctx context.Context, conn *dbus.Conn, unit string) (string, error) {
	var path dbus.ObjectPath
	manager := conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1")
	if err := manager.CallWithContext(ctx, "org.freedesktop.systemd1.Manager.GetUnit", 0, unit).Store(&path); err != nil {
		return "", err
	}
	var cg dbus.Variant
	err := conn.Object("org.freedesktop.systemd1", path).CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0,
		"org.freedesktop.systemd1.Scope", "ControlGroup").Store(&cg)
	if err != nil {
		return "", err
	}
	rel, ok := cg.Value().(string)
	if !ok || !strings.HasSuffix(rel, "/"+unit) {
		return "", fmt.Errorf("systemd names %v as its cgroup", cg.Value())
	}
	return rel, nil
}

// unifiedDir is the directory of the cgroup v2 path rel.
func unifiedDir(l Layout, rel string) (string, error) {
	root, err := unifiedMount()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, rel)
	if !strings.HasPrefix(dir, root+"/") || l.version != 2 {
		return "", fmt.Errorf("the scope's cgroup %q is not in the unified hierarchy at %s", rel, root)
	}
	return dir, nil
}

// unifiedMount is where cgroup v2 is mounted.
func unifiedMount() (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if ok && len(f) >= 5 && len(g) >= 1 && g[0] == "cgroup2" {
			return f[4], nil
		}
	}
	return "", errors.New("cgroup v2 is not mounted")
}

// ownScope checks that the scope's directory, and its cgroup.procs and
// cgroup.subtree_control, are this user's: what Delegate=yes gives.
func ownScope(dir string) error {
	for _, p := range []string{dir, filepath.Join(dir, "cgroup.procs"), filepath.Join(dir, "cgroup.subtree_control")} {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
			return fmt.Errorf("%s is not delegated to uid %d (owned by %d)", p, os.Getuid(), st.Uid)
		}
	}
	return nil
}
