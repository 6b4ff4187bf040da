package apitype

import "time"

// Run sources: who asked for a run.
const (
	SourceMCP        = "mcp"
	SourceREST       = "rest"
	SourceCLI        = "cli"
	SourceAgentShell = "agent-shell"
	SourceScheduler  = "scheduler"
	SourceCode       = "code"
	SourceSpaceApp   = "space-app"
)

// RunRecord is what is kept of one execution.
type RunRecord struct {
	ID          string `json:"id"`
	SandboxID   string `json:"sandboxId"`
	SandboxName string `json:"sandboxName"`
	Source      string `json:"source"`
	// Tenant is the tenant the run's sandbox belongs to ("" the owner's
	// own); Principal who asked for it (principal.Label: owner,
	// agent:NAME, tenant:NAME, app:ID).
	Tenant    string `json:"tenant,omitempty"`
	Principal string `json:"principal,omitempty"`
	// Kind is "exec", "code", "install" or "oneshot".
	Kind     string `json:"kind"`
	Command  string `json:"command,omitempty"`
	Language string `json:"language,omitempty"`
	Backend  string `json:"backend"`
	// Engine is the named Docker engine the run went to ("" this
	// machine's).
	Engine string `json:"engine,omitempty"`
	// Isolation is what was really applied: "bwrap", "docker", "none",
	// "none (degraded)" or "refused: <reason>".
	Isolation string `json:"isolation"`
	// Enforced lists the limits that held; Missing what was asked for and
	// not enforced.
	Enforced []string `json:"enforced,omitempty"`
	Missing  []string `json:"missing,omitempty"`
	// Guard is what the shell guard matched in a run it let go on
	// because it only warns in a sandbox (guard.sandbox warn): one line
	// a match, "group: why: part".
	Guard []string `json:"guard,omitempty"`
	// Policy says what the project's policy file (.senclaw/policy.json)
	// ignored because it would have widened the owner's policy, and what
	// of the request it took down: one line each.
	Policy []string `json:"policy,omitempty"`
	// Network is true when the run could reach other hosts (the network
	// on, or connect ports); listen and loopback ports alone leave it
	// false.
	Network    bool `json:"network"`
	Background bool `json:"background,omitempty"`
	// TTLMs and IdleTTLMs are a background run's deadline and idle TTL
	// (0: none; it runs until it is stopped).
	TTLMs     int `json:"ttlMs,omitempty"`
	IdleTTLMs int `json:"idleTtlMs,omitempty"`
	// TimeoutMs is a foreground run's timeout, the one it got (0: none,
	// as for a person's interactive shell with none given).
	TimeoutMs int `json:"timeoutMs,omitempty"`
	// Terminal is true when the run had a pseudo-terminal.
	Terminal bool `json:"terminal,omitempty"`
	// Interactive is true when a person was attached to the run (senclaw
	// shell): its stdin came from them, and it had no deadline unless one
	// was given.
	Interactive bool `json:"interactive,omitempty"`
	// Agent names the agent whose shell asked for an agent-shell run
	// (claude-code, gemini-cli, shell).
	Agent string `json:"agent,omitempty"`
	// State is "running" for a background run still going, else "done".
	State     string `json:"state"`
	ExitCode  *int   `json:"exitCode"`
	TimedOut  bool   `json:"timedOut"`
	Truncated bool   `json:"truncated"`
	// Killed says why the engine killed the run, if it did.
	Killed     string `json:"killed,omitempty"`
	DurationMs int64  `json:"durationMs"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	LogFile    string `json:"logFile,omitempty"`
	// LogSize is a finished background run's log's size; its Stdout
	// keeps the log's last bytes (which stay when the log goes with a
	// one-shot's workspace).
	LogSize   int64     `json:"logSize,omitempty"`
	Error     string    `json:"error,omitempty"`
	StartedAt time.Time `json:"startedAt"`
	// ScheduleID is the schedule that fired the run (source scheduler).
	ScheduleID string `json:"scheduleId,omitempty"`
	// UID is the host uid a root engine ran the code as: its sandbox's
	// own (Sandbox.UID); absent when it ran as the engine's own user (an
	// engine that is not root, the documented off paths).
	UID uint32 `json:"uid,omitempty"`
	// AheadID is the id a one-shot's sandbox was made ahead under, when
	// the run took one the engine had ready: its cgroups carry that id,
	// not the run's (which is given when the run starts, so that runs
	// sort by their start).
	AheadID string `json:"aheadId,omitempty"`
	// Refusals are what the sandbox was refused while the run went, each
	// with how to allow it.
	Refusals []Refusal `json:"refusals,omitempty"`
	// ProjectDir is the project whose policy file (.senclaw/policy.json)
	// bounded the run: an agent shell's sandboxed run, senclaw run
	// --here. Learn mode proposes that file's policy from such a run.
	ProjectDir string `json:"projectDir,omitempty"`
}

// OK reports whether the run exited 0 without timing out.
func (r *RunRecord) OK() bool {
	return r.ExitCode != nil && *r.ExitCode == 0 && !r.TimedOut && r.Killed == ""
}

// Lifetime says in words how a background run ends, for the reply that
// starts it and for `senclaw ps`: a background run has no deadline unless
// it was given one.
func (r *RunRecord) Lifetime() string {
	if !r.Background {
		return ""
	}
	s := "runs until it exits, is killed (senclaw kill " + r.ID + "), its sandbox is stopped or deleted, or the engine stops"
	if r.TTLMs > 0 {
		s += "; killed after " + (time.Duration(r.TTLMs) * time.Millisecond).String() + " (its TTL)"
	}
	if r.IdleTTLMs > 0 {
		s += "; killed after " + (time.Duration(r.IdleTTLMs) * time.Millisecond).String() + " without CPU use or output (its idle TTL)"
	}
	return s
}

// RunLog is a part of a run's output: a background run's log, what a
// foreground run going on writes (both streams in the order they came),
// or what a finished run's record keeps.
type RunLog struct {
	RunID string `json:"runId"`
	// Offset is where Data starts in the log; Size is the log's size now.
	// Offset is past the one asked for when the bytes there were not
	// kept.
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
	Data   string `json:"data"`
	// Running is true while the run goes on (the log may grow).
	Running bool `json:"running"`
	// Kept is true when the part comes from the run's record, which
	// keeps the last bytes of a finished run's output (its log's, for a
	// background run whose log file is gone).
	Kept bool `json:"kept,omitempty"`
	// StderrAt, for a finished foreground run (whose record keeps its
	// streams apart), is where its stderr starts in the log: the bytes
	// before are its stdout.
	StderrAt *int64 `json:"stderrAt,omitempty"`
}

// QueueStats says what the runner does now.
type QueueStats struct {
	Running    int `json:"running"`
	Waiting    int `json:"waiting"`
	Background int `json:"background"`
}

// MaxTimeoutMs is the longest timeout a run may be given: 24 hours, for
// builds and test suites (npm ci, a full go test).
const MaxTimeoutMs = 24 * 60 * 60 * 1000

// MaxCodeBytes bounds the source of one code run.
const MaxCodeBytes = 4 << 20

// DefaultInstallTimeoutMs is an install's timeout when none is given.
const DefaultInstallTimeoutMs = 300000

// RunReply is what a run answers.
type RunReply struct {
	Run    RunRecord `json:"run"`
	OK     bool      `json:"ok"`
	Stdout string    `json:"stdout"`
	Stderr string    `json:"stderr"`
	// Notes: the rules the run asked for and did not get are its
	// warnings, named in the note (empty when everything held); the
	// details are the limits that held.
	Notes
	// Lifetime, for a background run, says how it ends: no deadline
	// unless it was given a TTL.
	Lifetime string `json:"lifetime,omitempty"`
	// Refusals are what the sandbox was refused during the run, each
	// with how to allow it (the record's, repeated last).
	Refusals []Refusal `json:"refusals"`
}
