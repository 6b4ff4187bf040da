package windows

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/senclaw/sandbox/backends"
)

// Host is what Plan needs to know about the machine. Start fills it in
// on Windows; tests write it by hand.
type Host struct {
	// UserSID is the engine user's SID (the sandbox's token is a
	// restricted copy of the engine's).
	UserSID string
	// Home is the user's profile folder (C:\Users\ann).
	Home string
	// InterpreterDirs are the folders of the interpreters on the run's
	// PATH (python.exe, node.exe), granted read and execute.
	InterpreterDirs []string
	// CPUs is the number of logical processors, for the CPU rate.
	CPUs int
}

// Access masks of the ACEs, as NTFS file rights.
const (
	// MaskRead is FILE_GENERIC_READ | FILE_EXECUTE (read and execute).
	MaskRead uint32 = 0x001200A9
	// MaskModify is read, write, execute and delete (the "Modify" right).
	MaskModify uint32 = 0x001301BF
	// MaskDenyWrite is every right that changes a file or folder (write
	// data, append, write attributes and extended attributes, delete, delete
	// child), for a read-only mount inside a read-write one.
	MaskDenyWrite uint32 = 0x00010156
	// MaskDenyAll is GENERIC_ALL, for the DENY ACEs on secret folders and
	// masked programs.
	MaskDenyAll uint32 = 0x10000000
)

// Inheritance of an ACE: on the folder itself, its subfolders and files
// (OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE), or on a file alone.
const (
	InheritTree = "container+object"
	InheritNone = "none"
)

// ACE is one access control entry the plan adds to a path's DACL (and
// removes again).
type ACE struct {
	Path    string `json:"path"`
	SID     string `json:"sid"`
	Deny    bool   `json:"deny"`
	Mask    uint32 `json:"mask"`
	Inherit string `json:"inherit"`
	// Why says what the entry is for.
	Why string `json:"why"`
}

// JobLimits are the Job Object's limits.
type JobLimits struct {
	KillOnClose bool `json:"killOnClose"`
	// MemoryBytes is JOB_OBJECT_LIMIT_JOB_MEMORY (0: none).
	MemoryBytes uint64 `json:"memoryBytes"`
	// ActiveProcesses is JOB_OBJECT_LIMIT_ACTIVE_PROCESS (0: none).
	ActiveProcesses uint32 `json:"activeProcesses"`
	// CPURate is the hard cap in 1/100 of a percent of the machine
	// (JOB_OBJECT_CPU_RATE_CONTROL_HARD_CAP; 0: none).
	CPURate uint32 `json:"cpuRate"`
}

// RunPlan is everything Start does, decided before anything is done.
type RunPlan struct {
	// CapabilitySID is the sandbox's own SID: the token's restricting SID
	// that the workspace and mounts are granted to.
	CapabilitySID string `json:"capabilitySid"`
	// RestrictingSIDs are the token's restricting SIDs: an access must be
	// granted both to the user and to one of them.
	RestrictingSIDs []string `json:"restrictingSids"`
	// DefaultDACL is granted on what the process creates (its threads,
	// pipes): without the capability SID it could not use its own objects.
	DefaultDACL []string `json:"defaultDacl"`
	// Add are the ACEs put in place before the run; Undo removes exactly
	// them (the same entries), when the run ends.
	Add  []ACE `json:"add"`
	Undo []ACE `json:"undo"`
	Job  JobLimits
	// CommandLine is argv quoted for CreateProcess.
	CommandLine string `json:"commandLine"`
	// Environment is the sorted block's entries; Block the block itself.
	Environment []string `json:"environment"`
	Block       string   `json:"-"`
	Dir         string   `json:"dir"`
	// Missing is what the run does not get, in words.
	Missing []string `json:"missing"`
}

// allAppPackages (ALL APPLICATION PACKAGES) is granted read and execute
// on the system folders and the registry's system keys, and nothing
// else: as a restricting SID it lets the process load the system without
// reaching the user's files.
const allAppPackages = "S-1-15-2-1"

// winSecrets are folders under the profile folder that hold credentials
// and browser profiles, denied in every mode.
var winSecrets = []string{
	".ssh", ".aws", ".gnupg", ".kube", ".docker", ".azure", ".netrc", ".git-credentials", ".npmrc", ".pypirc", ".senclaw",
	`AppData\Roaming\gcloud`, `AppData\Roaming\Microsoft\Credentials`, `AppData\Local\Microsoft\Credentials`,
	`AppData\Roaming\Microsoft\Protect`, `AppData\Local\Google\Chrome\User Data`, `AppData\Local\Microsoft\Edge\User Data`,
	`AppData\Roaming\Mozilla\Firefox`, `AppData\Local\BraveSoftware`, `AppData\Roaming\GitHub CLI`,
}

// CapabilitySID derives the sandbox's SID from its id: the same sandbox
// gets the same SID on every run, two sandboxes never share one.
func CapabilitySID(sandboxID string) string {
	sum := sha256.Sum256([]byte("senclaw-sandbox:" + sandboxID))
	parts := []string{"S-1-15-3-1024"}
	for i := 0; i < 8; i++ {
		parts = append(parts, strconv.FormatUint(uint64(binary.LittleEndian.Uint32(sum[i*4:])), 10))
	}
	return strings.Join(parts, "-")
}

// NoNetworkReason is why a run with the network off is refused: nothing
// on Windows can cut a restricted token off the network.
const NoNetworkReason = "the Windows backend cannot turn the network off: its restricted token does not isolate the network, and no firewall rule can be made for the sandbox's capability SID (Windows Firewall matches a rule's users by an access check, and a restricted token is granted no access its user is not, so a rule cannot tell the sandbox from you); turn the network on for this sandbox and accept that its network is not isolated, or use another backend"

// Plan decides what Start does for spec: a pure function of spec and
// host, with no system call.
func Plan(spec *backends.Spec, host Host) (*RunPlan, error) {
	if !spec.FsMode.Valid() {
		return nil, fmt.Errorf("windows: invalid fs mode %q", spec.FsMode)
	}
	if spec.SandboxID == "" {
		return nil, fmt.Errorf("windows: the spec has no sandbox id, and the capability SID is made from it")
	}
	if !spec.Network && spec.Ports.Empty() {
		return nil, fmt.Errorf("windows: refusing a run with the network off: %s", NoNetworkReason)
	}
	cap := CapabilitySID(spec.SandboxID)
	p := &RunPlan{
		CapabilitySID:   cap,
		RestrictingSIDs: []string{cap, allAppPackages},
		DefaultDACL:     []string{host.UserSID, cap, "S-1-5-18"},
		Job:             jobLimits(spec.Limits, host.CPUs),
	}
	ws, err := Normalize("workspace", spec.Workspace)
	if err != nil {
		return nil, err
	}
	p.Dir = ws
	grant := func(where, what string, mask uint32, why string) error {
		n, err := Normalize(what, where)
		if err != nil {
			return err
		}
		p.Add = append(p.Add, ACE{Path: n, SID: cap, Mask: mask, Inherit: InheritTree, Why: why})
		return nil
	}
	if err := grant(spec.Workspace, "workspace", MaskModify, "the workspace: read and write"); err != nil {
		return nil, err
	}
	for _, m := range spec.Mounts {
		mask, why := MaskModify, "a read-write mount"
		if m.ReadOnly {
			mask, why = MaskRead, "a read-only mount"
		}
		if err := grant(m.Source, "mount source", mask, why+", at its own path (Windows cannot remap it)"); err != nil {
			return nil, err
		}
	}
	// A read-only mount inside a read-write one inherits its write grant:
	// an explicit deny keeps it read-only.
	for _, m := range spec.Mounts {
		if !m.ReadOnly {
			continue
		}
		src, _ := Normalize("mount source", m.Source)
		for _, o := range spec.Mounts {
			if rw, _ := Normalize("mount source", o.Source); !o.ReadOnly && within(src, rw) && src != rw {
				p.Add = append(p.Add, ACE{Path: src, SID: cap, Deny: true, Mask: MaskDenyWrite, Inherit: InheritTree, Why: "a read-only mount inside a read-write one: no writes"})
				break
			}
		}
	}
	for _, d := range host.InterpreterDirs {
		if err := grant(d, "interpreter folder", MaskRead, "an interpreter's folder: read and execute"); err != nil {
			return nil, err
		}
	}
	switch spec.FsMode {
	case backends.FsAllowlist:
		for _, r := range spec.ReadPaths {
			if err := grant(r, "allowlist path", MaskRead, "an allowlist path: read"); err != nil {
				return nil, err
			}
		}
	case backends.FsOpen:
		if host.Home == "" {
			return nil, fmt.Errorf("windows: open mode needs the profile folder, and none is known")
		}
		if err := grant(host.Home, "profile folder", MaskRead, "open mode: the profile folder, read (the secret folders are denied below)"); err != nil {
			return nil, err
		}
	}
	// Denies: the secret folders and the engine's data in every mode, and
	// the masked programs. DENY ACEs come first in a DACL, so they win.
	var denied []string
	for _, h := range spec.Hidden {
		n, err := Normalize("hidden path", h)
		if err != nil {
			return nil, err
		}
		denied = append(denied, n)
	}
	if host.Home != "" {
		for _, s := range winSecrets {
			n, err := Normalize("secret folder", host.Home+`\`+s)
			if err != nil {
				return nil, err
			}
			denied = append(denied, n)
		}
	}
	// A grant inside a secret folder is refused. The workspace may lie
	// in the engine's data dir (the engine puts it there): its explicit
	// grant comes before the data dir's inherited deny, so it alone opens.
	for _, a := range p.Add[1:] {
		for _, d := range denied {
			if within(a.Path, d) {
				return nil, fmt.Errorf("windows: %s lies inside %s, which no sandbox may see", a.Path, d)
			}
		}
	}
	for _, d := range outermost(denied) {
		p.Add = append(p.Add, ACE{Path: d, SID: cap, Deny: true, Mask: MaskDenyAll, Inherit: InheritTree, Why: "a secret folder or the engine's data: no access"})
	}
	for _, m := range spec.Masked {
		n, err := Normalize("masked program", m)
		if err != nil {
			return nil, err
		}
		p.Add = append(p.Add, ACE{Path: n, SID: cap, Deny: true, Mask: MaskDenyAll, Inherit: InheritNone, Why: "a program the run may not execute or read"})
	}
	p.Undo = slices.Clone(p.Add)
	slices.Reverse(p.Undo)
	if p.CommandLine, err = CommandLine(spec.Argv); err != nil {
		return nil, err
	}
	if p.Environment, p.Block, err = EnvironmentBlock(spec.Env); err != nil {
		return nil, err
	}
	p.Missing = missing(spec)
	return p, nil
}

func jobLimits(l backends.Limits, cpus int) JobLimits {
	j := JobLimits{KillOnClose: true}
	if l.MemoryMB > 0 {
		j.MemoryBytes = uint64(l.MemoryMB) << 20
	}
	if l.Pids > 0 {
		j.ActiveProcesses = uint32(l.Pids)
	}
	if l.CPUs > 0 && cpus > 0 {
		rate := uint32(l.CPUs / float64(cpus) * 10000)
		j.CPURate = min(max(rate, 1), 10000)
	}
	return j
}

func missing(spec *backends.Spec) []string {
	m := []string{
		"network: not isolated: the restricted token does not limit the network, so the sandbox reaches every address and port, this machine's services included; port and domain rules are not enforced",
		"reads: folders granted to ALL APPLICATION PACKAGES (the system's) stay readable in every mode",
		"disk: no quota",
	}
	if len(spec.Mounts) > 0 {
		m = append(m, "mounts: each mount is at its own path, not under the workspace (Windows cannot remap it)")
	}
	if len(spec.Protected) > 0 {
		m = append(m, "agents' and git's files: not kept read-only inside the writable folders (the Windows backend grants a folder whole): "+strings.Join(spec.Protected, ", "))
	}
	return m
}

// outermost drops paths inside another of the list.
func outermost(list []string) []string {
	var out []string
	for _, p := range list {
		if slices.Contains(out, p) {
			continue
		}
		if !slices.ContainsFunc(list, func(q string) bool { return q != p && within(p, q) }) {
			out = append(out, p)
		}
	}
	return out
}
