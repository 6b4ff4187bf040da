package limits

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// Host is how this engine limits its runs, found once and kept: the
// cgroups it may make itself (as root, or in a subtree delegated to it),
// else those of a scope of its own that systemd's user manager delegates
// to it when asked (as rootless Podman and Flatpak get theirs), else
// rlimits alone.
type Host struct {
	opts   HostOptions
	once   sync.Once
	layout Layout
	held   Held
	// detail says in words where the cgroups are, or why there are none.
	detail string
	unit   string
	// version is the machine's cgroup version ("v1", "v2", "none").
	version string
}

// HostOptions configure a Host.
type HostOptions struct {
	// Scope is the name (without ".scope") of the transient scope the
	// engine asks systemd's user manager for when it may make no cgroup
	// of its own; "" never asks. It is stable for one data dir, so that
	// an engine adopts the scope a dead one of the same data dir left,
	// and finds the runs left in it (Layout.Leftover).
	Scope string
	// Getenv reads DBUS_SESSION_BUS_ADDRESS and XDG_RUNTIME_DIR
	// (os.Getenv in the engine).
	Getenv func(string) string
	Logger *slog.Logger
}

// Held says how a run's limits hold on this machine.
type Held string

// The three ways.
const (
	HeldDelegated Held = "cgroups delegated by systemd"
	HeldWritable  Held = "cgroups writable"
	HeldRlimits   Held = "rlimits only"
)

// FacilityName names the Host's row among the capabilities.
const FacilityName = "cgroups"

// delegateTimeout bounds the whole request to systemd.
const delegateTimeout = 10 * time.Second

// NewHost returns a Host; nothing is looked at before Layout.
func NewHost(opts HostOptions) *Host {
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Host{opts: opts}
}

// Layout is where run cgroups are made (a Layout with none when the
// limits are rlimits). The first call finds it, asking systemd if need be.
func (h *Host) Layout() Layout {
	h.once.Do(h.find)
	return h.layout
}

// Held says how the limits hold, and in words where or why.
func (h *Host) Held() (Held, string) {
	h.once.Do(h.find)
	return h.held, h.detail
}

// Probe is the Host's row among the capabilities: healthy with cgroups
// (delegated by systemd, or writable), not available with rlimits alone.
func (h *Host) Probe() backends.Capability {
	h.once.Do(h.find)
	c := backends.Capability{Backend: FacilityName, Version: "cgroup " + h.version, CheckedAt: time.Now(),
		Details: map[string]string{"limits": string(h.held)}, Reason: string(h.held) + ": " + h.detail}
	if h.unit != "" {
		c.Details["unit"] = h.unit
	}
	if h.held == HeldRlimits {
		c.State = backends.NeverSeen
		return c
	}
	c.State = backends.Healthy
	c.Details["dir"] = h.layout.base()
	c.Enforces = []string{"memory", "pids"}
	if h.layout.hasCPU() {
		c.Enforces = append(c.Enforces, "cpu")
	}
	return c
}

func (h *Host) find() {
	l := Detect()
	h.version = l.Name()
	err := l.usable()
	if err == nil {
		h.layout, h.held = l, HeldWritable
		h.detail = fmt.Sprintf("the engine makes each sandbox's cgroup (%s) under %s; memory, pids and CPU are limits of it", l.Name(), l.base())
		return
	}
	h.held, h.detail = HeldRlimits, rlimitsOnly(err)
	if h.opts.Scope == "" || os.Geteuid() == 0 {
		return
	}
	if l.version != 2 {
		h.detail = rlimitsOnly(fmt.Errorf("%v; and this machine's cgroups are v1 (memory, pids and cpu are v1 controllers), of which systemd delegates none to an ordinary user", err))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), delegateTimeout)
	defer cancel()
	dl, unit, err := delegate(ctx, h.opts, l)
	if err == nil {
		err = dl.usable()
		if err != nil {
			err = fmt.Errorf("systemd delegated %s, but %w", unit, err)
		}
	}
	if err != nil {
		h.detail = rlimitsOnly(fmt.Errorf("no cgroup is writable and systemd's user manager gave none: %w", err))
		h.opts.Logger.Info("Limits fall back to rlimits: systemd's user manager delegated no cgroup.", "err", err)
		return
	}
	h.layout, h.held, h.unit = dl, HeldDelegated, unit
	h.detail = fmt.Sprintf("the engine's scope %s (%s); each sandbox's cgroup is made in it, and memory, pids and CPU are limits of it", unit, dl.base())
	h.opts.Logger.Info("systemd's user manager delegated a cgroup scope to the engine.", "unit", unit, "dir", dl.base())
}

// rlimitsOnly says what rlimits hold, and why nothing better does.
func rlimitsOnly(why error) string {
	return "memory is limited per process (RLIMIT_DATA), the process count per user (RLIMIT_NPROC), CPU not at all; " + why.Error()
}

// usable checks that run cgroups with the memory and pids controllers
// can be made: a tracking cgroup alone (Writable) is not enough, since
// a cgroup v2 that holds processes itself (the engine's own, a desktop's
// terminal scope) cannot hand controllers down, and every run's limits
// would then fail to be set.
func (l Layout) usable() error {
	if l.version == 0 {
		return errors.New("no cgroup hierarchy is mounted")
	}
	id := "probe-" + RandomID()
	cg, err := l.Create(id, id, []string{"memory", "pids"})
	if errors.Is(err, ErrNoCgroups) {
		return fmt.Errorf("the engine may not make cgroups under %s", l.base())
	}
	if err != nil {
		return err
	}
	defer cg.Remove()
	for c, file := range map[string]string{"memory": "memory.max", "pids": "pids.max"} {
		if cg.version == 1 && c == "memory" {
			file = "memory.limit_in_bytes"
		}
		if !cg.sandbox.has(c, file) {
			return fmt.Errorf("the %s controller is not available in the cgroups the engine makes under %s", c, l.base())
		}
	}
	return nil
}

// base is where the engine's senclaw/ cgroup goes (the memory
// hierarchy's on v1).
func (l Layout) base() string {
	if l.version == 1 {
		return l.v1["memory"]
	}
	return l.v2
}

// hasCPU reports whether runs get the cpu controller.
func (l Layout) hasCPU() bool {
	if l.version == 1 {
		return l.v1["cpu"] != ""
	}
	b, err := os.ReadFile(filepath.Join(l.v2, "cgroup.controllers"))
	return err == nil && strings.Contains(" "+string(b)+" ", " cpu ")
}
