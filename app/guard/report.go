package guard

// The paths a command may take: the host (the documented off paths,
// where a match refuses) or a sandbox (where the mode says).
const (
	PathHost    = "host"
	PathSandbox = "sandbox"
)

// Report is what the guard does with one command on one path, as the
// engine's API (POST /api/sandbox/guard/check) and senclaw guard check
// answer it.
type Report struct {
	// Verdict is deny (the run would be refused), warn (it would run,
	// with what matched on its record) or pass.
	Verdict string `json:"verdict"`
	Path    string `json:"path"`
	// Mode is what a match does on the path: deny on the host; the
	// guard.sandbox setting in a sandbox.
	Mode     Mode      `json:"mode"`
	Findings []Finding `json:"findings"`
	// Off are the groups switched off, which were not checked.
	Off []Group `json:"off"`
}

// NewReport checks command (or argv, when command is "") for path, a
// sandbox's mode being sandboxMode.
func NewReport(command string, argv []string, in Input, path string, sandboxMode Mode) Report {
	mode := ModeDeny
	if path == PathSandbox {
		mode = sandboxMode
	}
	r := Report{Verdict: "pass", Path: path, Mode: mode, Findings: []Finding{}, Off: append([]Group{}, in.Off...)}
	if mode == ModeOff {
		return r
	}
	var res Result
	if command != "" {
		res = Check(command, in)
	} else {
		res = CheckArgv(argv, in)
	}
	if res.Denied() {
		r.Findings = res.Findings
		r.Verdict = string(mode)
	}
	return r
}
