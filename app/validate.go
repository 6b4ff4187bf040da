package app

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/imageref"
	"github.com/senclaw/sandbox/app/safetext"
	"github.com/senclaw/sandbox/backends"
)

// Limits ranges. Create and update use the same checks.
const (
	MinCPUs      = 0.1
	MaxCPUs      = 32
	MinMemoryMB  = 64
	MaxMemoryMB  = 65536
	MinPids      = 16
	MaxPids      = 8192
	MinTimeoutMs = 1000
	MaxTimeoutMs = apitype.MaxTimeoutMs
	MinDiskMB    = 16
	MaxDiskMB    = 1 << 20
	MaxPorts     = 16
	MaxMounts    = 32
)

func checkCPUs(field string, v float64) error {
	if v < MinCPUs || v > MaxCPUs || v != v {
		return badField(field, v, "must be between %g and %g", MinCPUs, float64(MaxCPUs))
	}
	return nil
}

func checkRange(field string, v, lo, hi int, unit string) error {
	if v < lo || v > hi {
		return badField(field, v, "must be between %d and %d%s", lo, hi, unit)
	}
	return nil
}

func checkMemory(field string, v int) error {
	return checkRange(field, v, MinMemoryMB, MaxMemoryMB, " MB")
}
func checkPids(field string, v int) error { return checkRange(field, v, MinPids, MaxPids, "") }
func checkTimeout(field string, v int) error {
	return checkRange(field, v, MinTimeoutMs, MaxTimeoutMs, " ms (1 s to 24 h)")
}
func checkDisk(field string, v int) error { return checkRange(field, v, MinDiskMB, MaxDiskMB, " MB") }

func checkFsMode(field, v string) (backends.FsMode, error) {
	m := backends.FsMode(v)
	if !m.Valid() {
		return "", badField(field, v, "unknown fs mode: use strict, allowlist or open")
	}
	return m, nil
}

// checkPorts validates one port list and returns it sorted and deduplicated.
func checkPorts(field string, ports []int, min int) ([]int, error) {
	out := slices.Clone(ports)
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > MaxPorts {
		return nil, badField(field, len(out), "at most %d ports per list", MaxPorts)
	}
	for _, p := range out {
		if p < min || p > 65535 {
			if min > 1 {
				return nil, badField(field, p, "ports must be between %d and 65535 (ports below %d are privileged)", min, min)
			}
			return nil, badField(field, p, "ports must be between 1 and 65535")
		}
	}
	if out == nil {
		out = []int{}
	}
	return out, nil
}

func checkPortRules(listen, connect, loopback []int) (backends.PortRules, error) {
	var r backends.PortRules
	var err error
	if r.Listen, err = checkPorts("listenPorts", listen, 1024); err != nil {
		return r, err
	}
	if r.Connect, err = checkPorts("connectPorts", connect, 1); err != nil {
		return r, err
	}
	if r.Loopback, err = checkPorts("loopbackPorts", loopback, 1); err != nil {
		return r, err
	}
	return r, nil
}

var envKeyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// reservedEnv are variables the engine sets and a caller may not replace:
// they tell sandboxed code where it is.
var reservedEnv = []string{"SENCLAW_SANDBOX"}

func checkEnv(field string, env map[string]string) error {
	for k, v := range env {
		if !envKeyRE().MatchString(k) {
			return badField(field, k, "environment variable names are letters, digits and _, not starting with a digit")
		}
		if slices.Contains(reservedEnv, k) {
			return badField(field, k, "is set by the engine")
		}
		if strings.ContainsRune(v, 0) {
			return badField(field+"."+k, nil, "value contains a NUL byte")
		}
		if len(v) > 128<<10 {
			return badField(field+"."+k, nil, "value longer than 128 KiB")
		}
	}
	return nil
}

// checkCommand refuses what no program can be started with: an argv
// whose program is empty, and a command line or an argument holding a
// NUL byte, which would end it early.
func checkCommand(req RunRequest) error {
	if strings.ContainsRune(req.Command, 0) {
		return badField("command", nil, "contains a NUL byte, which would cut the command short; remove it")
	}
	for i, a := range req.Argv {
		field := fmt.Sprintf("argv[%d]", i)
		switch {
		case i == 0 && strings.TrimSpace(a) == "":
			return badField(field, a, "names no program; give the program to run first")
		case strings.ContainsRune(a, 0):
			return badField(field, nil, "contains a NUL byte, which would cut the argument short; remove it")
		}
	}
	return nil
}

// checkText applies the one character policy for stored strings that
// people will see (safetext.Printable) to v: a name, an image, a mount
// target shows in terminals and lists, where a control or bidi character
// would rewrite what is shown around it.
func checkText(field, v string) error {
	if r, ok := safetext.Valid(v); !ok {
		what := fmt.Sprintf("the character %U", r)
		if r == utf8.RuneError {
			what = "bytes that are not UTF-8"
		}
		return badField(field, v, "contains %s; allowed are %s", what, safetext.Policy)
	}
	return nil
}

func checkName(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" || utf8.RuneCountInString(v) > 100 {
		return "", badField("name", v, "must be 1 to 100 characters")
	}
	if err := checkText("name", v); err != nil {
		return "", err
	}
	return v, nil
}

// checkImage validates a container image: printable (checkText), then a
// Docker image reference, which is all a container backend accepts.
func checkImage(field, v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", nil
	}
	if err := checkText(field, v); err != nil {
		return "", err
	}
	if err := imageref.Check(v); err != nil {
		return "", badField(field, v, "is not a container image reference (NAME[:TAG][@DIGEST], the name in lower case, as in debian:bookworm-slim): %v", err)
	}
	return v, nil
}

// checkHostDir validates a host directory a sandbox is given (a mount
// source, an allowlist entry, an agent project dir; writable when the
// sandbox may write it) and returns its canonical path. It must be
// absolute and existing; it must not be the whole disk, a system root, the
// home directory itself, or anything the guard refuses (hostDirGuard.why:
// the engine's own dirs, secret folders, other engines' dirs, the host's
// services, and for writing the system trees), nor an ancestor of those
// (mounting ~/.config would expose ~/.config/gcloud).
func checkHostDir(field, path string, g hostDirGuard, writable bool) (string, error) {
	if !filepath.IsAbs(path) {
		return "", badField(field, path, "must be an absolute path")
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", badField(field, path, "does not exist")
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.IsDir() {
		return "", badField(field, path, "is not a directory")
	}
	if slices.Contains(systemRoots, real) {
		return "", badField(field, path, "is a system directory; give a folder of your own")
	}
	if g.paths.home != "" && real == canonical(g.paths.home) {
		return "", badField(field, path, "is your whole home directory; give a folder inside it")
	}
	if why, _ := g.why(real, writable); why != "" {
		return "", badField(field, path, "%s", why)
	}
	return real, nil
}

// reservedTargets are workspace names the engine uses itself.
var reservedTargets = []string{".runs", ".tmp", ".senclaw", runtimeTarget}

func checkMounts(mounts []backends.Mount, check func(field, path string, writable bool) (string, error)) ([]backends.Mount, error) {
	if len(mounts) > MaxMounts {
		return nil, badField("mounts", len(mounts), "at most %d mounts", MaxMounts)
	}
	out := make([]backends.Mount, 0, len(mounts))
	seen := map[string]bool{}
	for i, m := range mounts {
		src, err := check("mounts["+strconv.Itoa(i)+"].source", m.Source, !m.ReadOnly)
		if err != nil {
			return nil, err
		}
		target, err := checkTarget("mounts["+strconv.Itoa(i)+"].target", m.Target, src)
		if err != nil {
			return nil, err
		}
		if seen[target] {
			return nil, badField("mounts["+strconv.Itoa(i)+"].target", target, "is already used by another mount")
		}
		seen[target] = true
		out = append(out, backends.Mount{Source: src, Target: target, ReadOnly: m.ReadOnly, Copy: m.Copy})
	}
	return out, nil
}

func checkTarget(field, target, source string) (string, error) {
	if target == "" {
		target = filepath.Base(source)
	}
	if err := checkText(field, target); err != nil {
		return "", err
	}
	if filepath.IsAbs(target) {
		return "", badField(field, target, "must be relative to the workspace (drop the leading /)")
	}
	for _, part := range strings.Split(target, "/") {
		if part == ".." {
			return "", badField(field, target, "must not contain ..")
		}
	}
	clean := filepath.Clean(target)
	if clean == "." || clean == "" {
		return "", badField(field, target, "must name a folder inside the workspace")
	}
	first := strings.SplitN(clean, "/", 2)[0]
	for _, r := range reservedTargets {
		if first == r || strings.HasPrefix(first, r) {
			return "", badField(field, target, "is reserved for the engine (%s)", r)
		}
	}
	return clean, nil
}

// checkLANListen validates the lanListen setting: empty, or IP:PORT of
// this machine's network (not loopback, which --listen serves).
func checkLANListen(addr string) error {
	if addr == "" {
		return nil
	}
	ap, err := netip.ParseAddrPort(addr)
	switch {
	case err != nil:
		return badField("lanListen", addr, "must be IP:PORT (an address of this machine, or 0.0.0.0 for all of them), or empty for no LAN listener")
	case ap.Addr().IsLoopback():
		return badField("lanListen", addr, "is a loopback address: the LAN listener is for other machines")
	case ap.Port() == 0:
		return badField("lanListen", addr, "needs a port")
	}
	return nil
}
