package landlock

import (
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/limits"
)

// Descriptors the helper gets, as ExtraFiles (the first is fd 3).
const (
	// setupFD is the read end of the pipe the engine writes the helper's
	// setup to, once the helper is in the run's cgroups; EOF ends it.
	setupFD = 3
	// statusFD is the write end of the pipe the helper reports a setup
	// failure on. It is close-on-exec: EOF without a word means the
	// command was executed.
	statusFD = 4
	// guardFD is the helper's end of the Unix socket guard's handoff
	// (unixguard), when the run has network: it loads the guard's filter
	// on its own thread and sends the listener to the engine.
	guardFD = 5
)

// setup is everything the helper does, as the engine decided it. It
// crosses a pipe as JSON: the run's environment and command never appear
// in the helper's own environment or argv, where a host-side reader (or
// the dynamic loader, for LD_PRELOAD) would act on them.
type setup struct {
	// Parent is the engine's pid: the helper ends if it is gone.
	Parent int `json:"parent"`
	// User is who the command runs as when the engine is root; nil keeps
	// the engine's own (unprivileged) user.
	User *backends.Credential `json:"user,omitempty"`
	// Rlimits are set by the helper on itself right before it execs.
	Rlimits []limits.Rlimit `json:"rlimits,omitempty"`
	// Seccomp is the filter, as seccompfilter.ProgramFor assembles it.
	Seccomp []byte `json:"seccomp"`
	// ABI is the Landlock ABI whose every right the ruleset handles.
	ABI    int     `json:"abi"`
	Grants []Grant `json:"grants"`
	// ConnectTCP and BindTCP are the only TCP ports the command may
	// connect to and bind (ABI 4 and later).
	ConnectTCP []uint16 `json:"connectTcp,omitempty"`
	BindTCP    []uint16 `json:"bindTcp,omitempty"`
	// Links are made by the helper under Landlock as the sandbox user: a
	// symlink at each mount's target in the workspace to its source, since
	// Landlock cannot put a directory elsewhere than where it is.
	Links []link `json:"links,omitempty"`
	// MkDirs are directories made (as the sandbox user) before the exec:
	// the private TMPDIR in the workspace.
	MkDirs []string `json:"mkdirs,omitempty"`
	// Supervise keeps the helper, confined like the command, as its
	// parent and the run's subreaper (when there is no cgroup to find and
	// kill the run's processes by): see supervise.
	Supervise bool `json:"supervise,omitempty"`
	// Guard, when set, is the descriptor the helper installs the guard
	// over (guardFD), last, right before the exec.
	Guard int `json:"guard,omitempty"`

	Dir  string   `json:"dir"`
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
}

// link is one symlink the helper makes: Path (in the workspace) -> Target.
type link struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}
