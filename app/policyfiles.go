package app

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/senclaw/sandbox/app/jailfs"
	"github.com/senclaw/sandbox/app/netproxy"
	"github.com/senclaw/sandbox/app/policyfile"
	"github.com/senclaw/sandbox/backends"
)

// The policy files (app/policyfile): the owner's in the engine's config
// dir, which the engine reads and writes and the settings and exec
// policy mirror, and a project's, which may only narrow it and applies
// to the runs whose writable folder is that project (the agent shell's
// project sandbox, senclaw run --here).
const (
	OwnerPolicyFile   = "policy.json"
	ProjectPolicyFile = ".senclaw/policy.json"
)

// ownerPolicyState caches the owner's file by its modification time
// and size, so that a run costs one stat of it.
type ownerPolicyState struct {
	mu    sync.Mutex
	mtime time.Time
	size  int64
	extra policyfile.File // the keys no setting holds
	known bool
}

func (e *Engine) ownerPolicyPath() string {
	if e.opts.ConfigDir == "" {
		return ""
	}
	return filepath.Join(e.opts.ConfigDir, OwnerPolicyFile)
}

// ownerPolicyFile is the owner's policy as the file holds it: the
// settings and the exec policy, with the keys only the file holds.
func ownerPolicyFile(s Settings, p ExecPolicy, extra policyfile.File) policyfile.File {
	f := extra
	f.Schema = ""
	f.FsMode = string(s.DefaultFsMode)
	f.Allowlist = slices.Clone(s.Allowlist)
	f.Network = &s.DefaultNetwork
	f.Limits = &policyfile.Limits{CPUs: &s.DefaultCPUs, MemoryMB: &s.DefaultMemoryMB, Pids: &s.DefaultPids, TimeoutMs: &s.DefaultTimeoutMs, DiskMB: &s.DefaultDiskMB}
	f.MountAllow = slices.Clone(s.MountAllow)
	f.AllowDirect = &s.AllowDirect
	f.AllowedSockets = slices.Clone(s.AllowedSockets)
	f.AgentShell = &policyfile.AgentShell{Sandboxed: &p.ExecShell, FsMode: string(p.ExecFsMode), Network: &p.ExecNetwork, Loopback: slices.Clone(p.ExecLoopback)}
	return f
}

// saveOwnerPolicy writes the owner's policy file after a change of the
// settings or the exec policy, which are saved already: a file that
// cannot be written is logged, and written at the next change.
func (e *Engine) saveOwnerPolicy() {
	if err := e.writeOwnerPolicy(); err != nil {
		e.log.Warn("The owner's policy file could not be written.", "err", err)
	}
}

// writeOwnerPolicy writes the owner's file from the settings and exec
// policy now (owner-only, renamed into place). Nothing without a config
// dir.
func (e *Engine) writeOwnerPolicy() error {
	path := e.ownerPolicyPath()
	if path == "" {
		return nil
	}
	st := &e.ownerPolicy
	st.mu.Lock()
	defer st.mu.Unlock()
	return e.writeOwnerPolicyLocked(path)
}

func (e *Engine) writeOwnerPolicyLocked(path string) error {
	st := &e.ownerPolicy
	data := policyfile.Marshal(ownerPolicyFile(e.Settings(), e.Policy(), st.extra))
	if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("writing the owner's policy file: %w", err)
	}
	tmp := path + ".senclaw-tmp"
	// Made anew, through no link: a config folder others may write could
	// hold one where the temporary file goes.
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollowOpen, 0o600)
	if err != nil {
		return fmt.Errorf("writing the owner's policy file: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing the owner's policy file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing the owner's policy file: %w", err)
	}
	if fi, err := os.Stat(path); err == nil {
		st.mtime, st.size, st.known = fi.ModTime(), fi.Size(), true
	}
	return nil
}

// OwnerPolicy reads the owner's policy file when it changed since the
// engine last read or wrote it, applies what it says to the settings and
// the exec policy, and returns the owner's layer. A broken file is a
// *policyfile.Error; a missing one is written.
func (e *Engine) OwnerPolicy() (policyfile.Layer, error) {
	path := e.ownerPolicyPath()
	st := &e.ownerPolicy
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := e.ownerPolicyFreshLocked(path); err != nil {
		return policyfile.Layer{}, err
	}
	if path == "" {
		path = "the settings"
	}
	return policyfile.Layer{Path: path, File: ownerPolicyFile(e.Settings(), e.Policy(), st.extra)}, nil
}

// ownerPolicyFresh is OwnerPolicy for a run that needs only the
// settings to say what the file says: one stat when nothing changed.
func (e *Engine) ownerPolicyFresh() (extra bool, err error) {
	st := &e.ownerPolicy
	st.mu.Lock()
	defer st.mu.Unlock()
	err = e.ownerPolicyFreshLocked(e.ownerPolicyPath())
	x := st.extra
	return len(x.AllowedDomains) > 0 || len(x.HTTPRules) > 0 || x.Ports != nil || x.Env != nil || x.Secrets != nil, err
}

func (e *Engine) ownerPolicyFreshLocked(path string) error {
	st := &e.ownerPolicy
	if path == "" {
		return nil
	}
	fi, err := os.Lstat(path)
	if err == nil {
		err = ownerFileTrusted(path, fi)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// None yet: the settings hold, and are written out as the file.
		if err := e.writeOwnerPolicyLocked(path); err != nil {
			e.log.Warn("The owner's policy file could not be written.", "err", err)
		}
		return nil
	case errors.As(err, new(*policyfile.Error)):
		return err
	case err != nil:
		return fmt.Errorf("reading the owner's policy file: %w", err)
	case !st.known || !fi.ModTime().Equal(st.mtime) || fi.Size() != st.size:
		return e.syncOwnerPolicy(path)
	}
	return nil
}

// syncOwnerPolicy reads the owner's file and makes the settings and the
// exec policy say what it says (through SetSettings and SetPolicy, with
// their checks); the keys it leaves out keep their values.
func (e *Engine) syncOwnerPolicy(path string) error {
	file, err := os.OpenFile(path, os.O_RDONLY|noFollowOpen, 0)
	if err != nil {
		return fmt.Errorf("reading the owner's policy file: %w", err)
	}
	defer file.Close()
	fi, err := file.Stat()
	if err == nil {
		err = ownerFileTrusted(path, fi)
	}
	if err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(file, policyfile.MaxSize+1))
	if err != nil {
		return fmt.Errorf("reading the owner's policy file: %w", err)
	}
	f, err := parsePolicy(path, data)
	if err != nil {
		return err // a *policyfile.Error
	}
	s, p := e.Settings(), e.Policy()
	if f.FsMode != "" {
		s.DefaultFsMode = backends.FsMode(f.FsMode)
	}
	if f.Allowlist != nil {
		s.Allowlist = f.Allowlist
	}
	if f.Network != nil {
		s.DefaultNetwork = *f.Network
	}
	if l := f.Limits; l != nil {
		setIf(&s.DefaultCPUs, l.CPUs)
		setIf(&s.DefaultMemoryMB, l.MemoryMB)
		setIf(&s.DefaultPids, l.Pids)
		setIf(&s.DefaultTimeoutMs, l.TimeoutMs)
		setIf(&s.DefaultDiskMB, l.DiskMB)
	}
	if f.MountAllow != nil {
		s.MountAllow = f.MountAllow
	}
	setIf(&s.AllowDirect, f.AllowDirect)
	if f.AllowedSockets != nil {
		s.AllowedSockets = f.AllowedSockets
	}
	if a := f.AgentShell; a != nil {
		setIf(&p.ExecShell, a.Sandboxed)
		setIf(&p.ExecNetwork, a.Network)
		if a.FsMode != "" {
			p.ExecFsMode = backends.FsMode(a.FsMode)
		}
		if a.Loopback != nil {
			p.ExecLoopback = a.Loopback
		}
	}
	e.ownerPolicy.extra = policyfile.File{AllowedDomains: f.AllowedDomains, HTTPRules: f.HTTPRules, Ports: f.Ports, Env: f.Env, Secrets: f.Secrets}
	if _, err := e.setSettings(s, false); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if _, err := e.setPolicy(p, false); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return e.writeOwnerPolicyLocked(path)
}

// ownerFileTrusted refuses an owner's file that another local user
// could have written: a link, not this user's, or writable by group or
// others. It says whether the agent shell runs on the host and whether
// runs may go unsandboxed, so such a file is broken, never taken.
func ownerFileTrusted(path string, fi fs.FileInfo) error {
	why := ""
	uid, _, ok := ownerOf(fi)
	switch {
	case !fi.Mode().IsRegular():
		why = "is not a regular file (a link?)"
	case ok && int(uid) != os.Geteuid():
		why = fmt.Sprintf("belongs to uid %d, not to the engine's user (uid %d)", uid, os.Geteuid())
	case ok && fi.Mode().Perm()&0o022 != 0: // Windows has no such bits: its ACLs
		why = fmt.Sprintf("has mode %v: others may write it", fi.Mode().Perm())
	default:
		return nil
	}
	return &policyfile.Error{File: path, Line: 1, Column: 1, Msg: why + ", so another user could have written it; make it a file of your own that only you may write (chown, chmod 600), or remove it and the engine writes it anew"}
}

func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// projectLayer reads dir's policy file through dir (no link followed
// below it: whatever writes the project could have planted one); nil
// when there is none.
func projectLayer(dir string) (*policyfile.Layer, error) {
	path := filepath.Join(dir, ProjectPolicyFile)
	d, err := jailfs.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the project %s: %w", dir, err)
	}
	defer d.Close()
	f, err := d.OpenRegular(ProjectPolicyFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, jailfs.ErrLink):
		return nil, refused("%s is, or lies in a folder that is, a symbolic link: senclaw reads a project's policy only inside the project and follows no link there; replace the link with the file it leads to", path)
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, policyfile.MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	pf, err := parsePolicy(path, data)
	if err != nil {
		return nil, err // a *policyfile.Error
	}
	return &policyfile.Layer{Path: path, File: pf}, nil
}

// parsePolicy is policyfile.Parse with the HTTP rules checked and
// spelled as the proxy reads them: a rule it cannot match would limit
// nothing (in the owner's file, leave its host open), so it is a broken
// file, with its line and column.
func parsePolicy(path string, data []byte) (policyfile.File, error) {
	f, err := policyfile.Parse(path, data)
	if err != nil {
		return f, err
	}
	rules, err := netproxy.NormalizeHTTPRules(f.HTTPRules)
	var he *netproxy.HTTPRuleError
	switch {
	case errors.As(err, &he):
		key := "httpRules" + strings.TrimPrefix(he.Field, "allowHttp")
		return policyfile.File{}, policyfile.ErrorAt(path, data, key, fmt.Sprintf("is %q: %v", he.Value, he.Err))
	case err != nil:
		return policyfile.File{}, policyfile.ErrorAt(path, data, "httpRules", err.Error())
	}
	if f.HTTPRules != nil {
		f.HTTPRules = rules
	}
	return f, nil
}
