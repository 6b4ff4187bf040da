package windows

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"
	"unicode/utf16"
	"unsafe"

	"github.com/senclaw/sandbox/backends"
	"golang.org/x/sys/windows"
)

var (
	advapi32                  = windows.NewLazySystemDLL("advapi32.dll")
	procCreateRestrictedToken = advapi32.NewProc("CreateRestrictedToken")
)

const (
	disableMaxPrivilege                = 0x1
	jobObjectCPURateControlInfo        = 15
	jobCPURateControlEnable            = 0x1
	jobCPURateControlHardCap           = 0x4
	createNoWindow                     = 0x08000000
	tokenAccessForRestricted    uint32 = windows.TOKEN_DUPLICATE | windows.TOKEN_QUERY | windows.TOKEN_ASSIGN_PRIMARY | windows.TOKEN_ADJUST_DEFAULT
)

// Probe runs a trial process with the same token and job as real runs: it
// must write into its workspace and fail to write next to it.
func (b *Backend) Probe(ctx context.Context) backends.Capability {
	c := backends.Capability{Backend: Name, Isolates: true, Enforces: []string{}, CheckedAt: time.Now()}
	if err := b.trial(ctx); err != nil {
		c.Reason = "never seen working: " + err.Error()
		return b.state(c, false)
	}
	c.Enforces = Enforces
	c.Reason = "a trial process with the restricted token wrote into its workspace and was denied a write outside it; the network is not isolated, so runs with the network off are refused"
	return b.state(c, true)
}

func (b *Backend) trial(ctx context.Context) error {
	dir, err := os.MkdirTemp(b.opts.TempRoot, "senclaw-windows-probe-")
	if err != nil {
		return fmt.Errorf("creating the trial workspace: %w", err)
	}
	defer os.RemoveAll(dir)
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o700); err != nil {
		return fmt.Errorf("creating the trial workspace: %w", err)
	}
	outside := filepath.Join(dir, "outside.txt")
	sys := os.Getenv("SystemRoot")
	if sys == "" {
		sys = `C:\Windows`
	}
	spec := &backends.Spec{
		SandboxID: "probe-" + randomID(), Workspace: ws, FsMode: backends.FsStrict, Network: true,
		Argv: []string{filepath.Join(sys, "System32", "cmd.exe"), "/d", "/c", "echo in>" + filepath.Join(ws, "inside.txt") + " & echo out>" + outside},
		Env:  []string{"SystemRoot=" + sys, "PATH=" + filepath.Join(sys, "System32")},
	}
	p, err := b.Start(ctx, spec)
	if err != nil {
		return fmt.Errorf("the trial process did not start: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = p.Kill() })
	defer stop()
	if _, err := p.Wait(); err != nil {
		return fmt.Errorf("the trial process failed: %w", err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("the trial process did not finish in time: %w", ctx.Err())
	}
	if _, err := os.Stat(filepath.Join(ws, "inside.txt")); err != nil {
		return errors.New("the trial process could not write into its own workspace")
	}
	if _, err := os.Stat(outside); err == nil {
		return errors.New("the trial process wrote outside its workspace: the restricted token does not confine here")
	}
	return nil
}

// Start carries out Plan: the ACEs, the token, the job, the suspended
// process, its assignment to the job, and only then its first instruction.
// Whatever fails undoes what was done, and nothing runs.
func (b *Backend) Start(ctx context.Context, spec *backends.Spec) (backends.Process, error) {
	user, err := currentUserSID()
	if err != nil {
		return nil, err
	}
	host := Host{UserSID: user, Home: b.opts.Home, CPUs: runtime.NumCPU()}
	for _, name := range []string{"python.exe", "node.exe"} {
		if p, ok := findOnPath(name, spec.Env); ok {
			host.InterpreterDirs = append(host.InterpreterDirs, filepath.Dir(p))
		}
	}
	plan, err := Plan(spec, host)
	if err != nil {
		return nil, err
	}
	undo := func() { revoke(plan) }
	if err := grant(plan); err != nil {
		undo()
		return nil, err
	}
	proc, err := launch(plan, spec)
	if err != nil {
		undo()
		return nil, err
	}
	proc.undo = undo
	return proc, nil
}

// grant adds the plan's ACEs, in order.
func grant(p *RunPlan) error {
	for _, a := range p.Add {
		mode := windows.GRANT_ACCESS
		if a.Deny {
			mode = windows.DENY_ACCESS
		}
		inherit := uint32(windows.SUB_CONTAINERS_AND_OBJECTS_INHERIT)
		if a.Inherit == InheritNone {
			inherit = windows.NO_INHERITANCE
		}
		if err := editDACL(a.Path, a.SID, windows.ACCESS_MASK(a.Mask), windows.ACCESS_MODE(mode), inherit); err != nil {
			return fmt.Errorf("starting windows: %s on %s: %w", a.Why, a.Path, err)
		}
	}
	return nil
}

// revoke removes every entry of the capability SID from the paths the plan
// touched (the undo), best effort: a path that is gone has nothing left.
func revoke(p *RunPlan) {
	seen := map[string]bool{}
	for _, a := range p.Undo {
		if seen[a.Path] {
			continue
		}
		seen[a.Path] = true
		_ = editDACL(a.Path, a.SID, 0, windows.REVOKE_ACCESS, windows.NO_INHERITANCE)
	}
}

func editDACL(path, sidText string, mask windows.ACCESS_MASK, mode windows.ACCESS_MODE, inherit uint32) error {
	sid, err := windows.StringToSid(sidText)
	if err != nil {
		return err
	}
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return err
	}
	old, _, err := sd.DACL()
	if err != nil {
		return err
	}
	acl, err := windows.ACLFromEntries([]windows.EXPLICIT_ACCESS{{
		AccessPermissions: mask, AccessMode: mode, Inheritance: inherit,
		Trustee: windows.TRUSTEE{TrusteeForm: windows.TRUSTEE_IS_SID, TrusteeType: windows.TRUSTEE_IS_UNKNOWN, TrusteeValue: windows.TrusteeValueFromSID(sid)},
	}}, old)
	if err != nil {
		return err
	}
	return windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION, nil, nil, acl, nil)
}

// restrictedToken makes the plan's token from the engine's: every
// privilege but change-notify dropped, the restricting SIDs added, and a
// default DACL that lets the process use what it creates.
func restrictedToken(p *RunPlan) (windows.Token, error) {
	var self windows.Token
	if err := windows.OpenProcessToken(windows.CurrentProcess(), tokenAccessForRestricted, &self); err != nil {
		return 0, fmt.Errorf("opening the engine's token: %w", err)
	}
	defer self.Close()
	restrict := make([]windows.SIDAndAttributes, len(p.RestrictingSIDs))
	for i, s := range p.RestrictingSIDs {
		sid, err := windows.StringToSid(s)
		if err != nil {
			return 0, err
		}
		restrict[i] = windows.SIDAndAttributes{Sid: sid}
	}
	var tok windows.Token
	r, _, err := procCreateRestrictedToken.Call(uintptr(self), disableMaxPrivilege, 0, 0, 0, 0,
		uintptr(len(restrict)), uintptr(unsafe.Pointer(&restrict[0])), uintptr(unsafe.Pointer(&tok)))
	if r == 0 {
		return 0, fmt.Errorf("CreateRestrictedToken: %w", err)
	}
	var entries []windows.EXPLICIT_ACCESS
	for _, s := range p.DefaultDACL {
		sid, err := windows.StringToSid(s)
		if err != nil {
			tok.Close()
			return 0, err
		}
		entries = append(entries, windows.EXPLICIT_ACCESS{AccessPermissions: windows.GENERIC_ALL, AccessMode: windows.GRANT_ACCESS,
			Trustee: windows.TRUSTEE{TrusteeForm: windows.TRUSTEE_IS_SID, TrusteeType: windows.TRUSTEE_IS_UNKNOWN, TrusteeValue: windows.TrusteeValueFromSID(sid)}})
	}
	acl, err := windows.ACLFromEntries(entries, nil)
	if err != nil {
		tok.Close()
		return 0, err
	}
	dacl := struct{ acl *windows.ACL }{acl}
	if err := windows.SetTokenInformation(tok, windows.TokenDefaultDacl, (*byte)(unsafe.Pointer(&dacl)), uint32(unsafe.Sizeof(dacl))); err != nil {
		tok.Close()
		return 0, fmt.Errorf("setting the token's default DACL: %w", err)
	}
	return tok, nil
}

// newJob makes the Job Object with the plan's limits.
func newJob(j JobLimits) (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, fmt.Errorf("creating the job object: %w", err)
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if j.MemoryBytes > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_JOB_MEMORY
		info.JobMemoryLimit = uintptr(j.MemoryBytes)
	}
	if j.ActiveProcesses > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS
		info.BasicLimitInformation.ActiveProcessLimit = j.ActiveProcesses
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, fmt.Errorf("setting the job's limits: %w", err)
	}
	if j.CPURate > 0 {
		rate := struct{ flags, value uint32 }{jobCPURateControlEnable | jobCPURateControlHardCap, j.CPURate}
		if _, err := windows.SetInformationJobObject(job, jobObjectCPURateControlInfo,
			uintptr(unsafe.Pointer(&rate)), uint32(unsafe.Sizeof(rate))); err != nil {
			windows.CloseHandle(job)
			return 0, fmt.Errorf("setting the job's CPU rate: %w", err)
		}
	}
	return job, nil
}

// launch starts the process suspended with only its three standard
// handles inherited, puts it in the job, and resumes it.
func launch(p *RunPlan, spec *backends.Spec) (*process, error) {
	tok, err := restrictedToken(p)
	if err != nil {
		return nil, fmt.Errorf("starting windows: %w", err)
	}
	defer tok.Close()
	job, err := newJob(p.Job)
	if err != nil {
		return nil, fmt.Errorf("starting windows: %w", err)
	}
	pr := &process{job: job, done: make(chan struct{})}
	stdio, err := pr.pipes(spec)
	if err != nil {
		windows.CloseHandle(job)
		return nil, err
	}
	attrs, err := windows.NewProcThreadAttributeList(1)
	if err != nil {
		pr.closeAll()
		return nil, err
	}
	defer attrs.Delete()
	handles := []windows.Handle{stdio[0], stdio[1], stdio[2]}
	if err := attrs.Update(windows.PROC_THREAD_ATTRIBUTE_HANDLE_LIST, unsafe.Pointer(&handles[0]), uintptr(len(handles))*unsafe.Sizeof(handles[0])); err != nil {
		pr.closeAll()
		return nil, err
	}
	si := &windows.StartupInfoEx{ProcThreadAttributeList: attrs.List()}
	si.Cb = uint32(unsafe.Sizeof(*si))
	si.Flags = windows.STARTF_USESTDHANDLES
	si.StdInput, si.StdOutput, si.StdErr = stdio[0], stdio[1], stdio[2]
	cmdline, err := windows.UTF16PtrFromString(p.CommandLine)
	if err != nil {
		pr.closeAll()
		return nil, err
	}
	dir, err := windows.UTF16PtrFromString(spec.Workspace)
	if err != nil {
		pr.closeAll()
		return nil, err
	}
	env := utf16Block(p.Block)
	var pi windows.ProcessInformation
	flags := uint32(windows.CREATE_SUSPENDED | windows.CREATE_UNICODE_ENVIRONMENT | windows.EXTENDED_STARTUPINFO_PRESENT | createNoWindow)
	if err := windows.CreateProcessAsUser(tok, nil, cmdline, nil, nil, true, flags, &env[0], dir, &si.StartupInfo, &pi); err != nil {
		pr.closeAll()
		return nil, fmt.Errorf("starting windows: CreateProcessAsUser: %w", err)
	}
	pr.closeChildEnds()
	if err := windows.AssignProcessToJobObject(job, pi.Process); err != nil {
		_ = windows.TerminateProcess(pi.Process, 1)
		windows.CloseHandle(pi.Thread)
		windows.CloseHandle(pi.Process)
		pr.closeAll()
		return nil, fmt.Errorf("starting windows: putting the process in its job: %w", err)
	}
	if _, err := windows.ResumeThread(pi.Thread); err != nil {
		_ = windows.TerminateJobObject(job, 1)
		windows.CloseHandle(pi.Thread)
		windows.CloseHandle(pi.Process)
		pr.closeAll()
		return nil, fmt.Errorf("starting windows: resuming the process: %w", err)
	}
	windows.CloseHandle(pi.Thread)
	pr.handle, pr.pid = pi.Process, int(pi.ProcessId)
	pr.enf = backends.Enforcement{Isolation: Name, Limits: limitWords(p.Job), Missing: p.Missing}
	if spec.Trace != nil {
		pr.enf.Missing = append(pr.enf.Missing, "trace: runs of the Windows backend cannot be traced")
	}
	go pr.reap()
	return pr, nil
}

func limitWords(j JobLimits) []string {
	w := []string{"fs: restricted token (the capability SID's grants), writes only to the workspace and read-write mounts", "kill-on-close: job object"}
	if j.MemoryBytes > 0 {
		w = append(w, fmt.Sprintf("memory: job object, %d MiB", j.MemoryBytes>>20))
	}
	if j.ActiveProcesses > 0 {
		w = append(w, fmt.Sprintf("pids: job object, %d processes", j.ActiveProcesses))
	}
	if j.CPURate > 0 {
		w = append(w, fmt.Sprintf("cpu: job object hard cap, %.2f%% of the machine", float64(j.CPURate)/100))
	}
	return w
}

// utf16Block encodes the environment block, NULs included.
func utf16Block(block string) []uint16 { return utf16.Encode([]rune(block)) }

// process is a started sandboxed process and its job.
type process struct {
	job    windows.Handle
	handle windows.Handle
	pid    int
	enf    backends.Enforcement
	undo   func()

	mine, theirs []*os.File // the engine's and the child's ends of the pipes
	copies       sync.WaitGroup

	done   chan struct{}
	status backends.ExitStatus
	err    error
}

// pipes makes the child's standard handles, inheritable, and starts
// copying between them and spec's readers and writers.
func (p *process) pipes(spec *backends.Spec) ([3]windows.Handle, error) {
	var hs [3]windows.Handle
	ends := []struct {
		in bool
		rw any
	}{{true, spec.Stdin}, {false, spec.Stdout}, {false, spec.Stderr}}
	for i, e := range ends {
		r, w, err := os.Pipe()
		if err != nil {
			p.closeAll()
			return hs, err
		}
		child, own := w, r
		if e.in {
			child, own = r, w
		}
		p.mine, p.theirs = append(p.mine, own), append(p.theirs, child)
		h := windows.Handle(child.Fd())
		if err := windows.SetHandleInformation(h, windows.HANDLE_FLAG_INHERIT, windows.HANDLE_FLAG_INHERIT); err != nil {
			p.closeAll()
			return hs, err
		}
		hs[i] = h
		if !e.in {
			// The output copies end when the job's last handle closes;
			// reap waits for them. Stdin may never end: not waited for.
			p.copies.Add(1)
		}
		go func(in bool, rw any, own *os.File) {
			if !in {
				defer p.copies.Done()
			}
			if in {
				if r, ok := rw.(io.Reader); ok && r != nil {
					_, _ = io.Copy(own, r)
				}
				own.Close()
				return
			}
			w, ok := rw.(io.Writer)
			if !ok || w == nil {
				w = io.Discard
			}
			_, _ = io.Copy(w, own)
		}(e.in, e.rw, own)
	}
	return hs, nil
}

func (p *process) closeChildEnds() {
	for _, f := range p.theirs {
		f.Close()
	}
	p.theirs = nil
}

func (p *process) closeAll() {
	p.closeChildEnds()
	for _, f := range p.mine {
		f.Close()
	}
	if p.job != 0 {
		windows.CloseHandle(p.job)
		p.job = 0
	}
}

func (p *process) reap() {
	defer close(p.done)
	_, _ = windows.WaitForSingleObject(p.handle, windows.INFINITE)
	var code uint32
	if err := windows.GetExitCodeProcess(p.handle, &code); err != nil {
		p.err = err
	}
	p.status = backends.ExitStatus{Code: int(code)}
	// The leader is gone: end the rest of the job, then let the copies
	// drain and take the grants back.
	_ = windows.TerminateJobObject(p.job, 1)
	windows.CloseHandle(p.handle)
	p.copies.Wait()
	p.closeAll()
	if p.undo != nil {
		p.undo()
	}
}

func (p *process) Pid() int                          { return p.pid }
func (p *process) Enforcement() backends.Enforcement { return p.enf }
func (p *process) Pids() []int                       { return []int{p.pid} }

func (p *process) Wait() (backends.ExitStatus, error) {
	<-p.done
	return p.status, p.err
}

// Kill ends every process of the job.
func (p *process) Kill() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	return windows.TerminateJobObject(p.job, 1)
}

func currentUserSID() (string, error) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return "", fmt.Errorf("reading the engine's user: %w", err)
	}
	return u.User.Sid.String(), nil
}

func findOnPath(name string, env []string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		k, v, _ := cutEnv(env[i])
		if equalFold(k, "PATH") {
			for _, dir := range filepath.SplitList(v) {
				p := filepath.Join(dir, name)
				if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
					return p, true
				}
			}
			return "", false
		}
	}
	return "", false
}

func cutEnv(kv string) (string, string, bool) {
	for i := 1; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i]|0x20, b[i]|0x20
		if x != y {
			return false
		}
	}
	return true
}

func randomID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
