package apitype

import "github.com/senclaw/sandbox/backends"

// AppList is the answer of GET /api/space/apps.
type AppList struct {
	Apps     []AppView   `json:"apps"`
	Overview AppOverview `json:"overview"`
}

// AppView is one app as lists and the card show it.
type AppView struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	// Dir is where it runs; InPlace says it is the registered folder
	// itself, not the engine's copy.
	Dir     string `json:"dir"`
	InPlace bool   `json:"inPlace"`
	// Tenant is the tenant the app belongs to ("" the owner's own).
	Tenant string `json:"tenant,omitempty"`
	// Port and URL: where it serves, on 127.0.0.1 only (0 and "" until
	// the engine picked a port for a port-0 app).
	Port       int    `json:"port"`
	URL        string `json:"url"`
	HealthPath string `json:"healthPath"`
	Restart    string `json:"restart"`
	Autostart  bool   `json:"autostart"`
	// State is stopped, starting, running, stopping, backoff,
	// crash-looping, exited, failed, port-taken or outside; StateText
	// says it in words.
	State         string `json:"state"`
	StateText     string `json:"stateText"`
	StoppedByUser bool   `json:"stoppedByUser"`
	// Pid is the running launch's host pid (for outside, the pid of the
	// process that holds the port); 0 when none.
	Pid         int   `json:"pid"`
	StartedAtMs int64 `json:"startedAtMs"`
	UptimeSec   int64 `json:"uptimeSec"`
	// Launches since a person last started it (the card warns above 3),
	// and in all.
	Launches      int       `json:"launches"`
	TotalLaunches int       `json:"totalLaunches"`
	Health        AppHealth `json:"health"`
	// CPUPercent (100 is one core) and RSSMB are of the app's whole
	// process tree, without the sandbox's helpers (bwrap, the forwarder);
	// Spark is their last 30 samples (one a second), measured the same way.
	CPUPercent float64           `json:"cpuPercent"`
	RSSMB      float64           `json:"rssMb"`
	Spark      []StatsPoint      `json:"spark"`
	Sandbox    AppSandboxSummary `json:"sandbox"`
	// NeedsRestart: what the running process got at launch differs from
	// the saved configuration; the reasons say how.
	NeedsRestart        bool     `json:"needsRestart"`
	NeedsRestartReasons []string `json:"needsRestartReasons"`
	// NextAttemptAtMs is when a backing-off app is restarted.
	NextAttemptAtMs int64 `json:"nextAttemptAtMs,omitempty"`
	// LastLog are the log's last lines when it gave up or failed.
	LastLog []string `json:"lastLog"`
	// PortHolder is the process that holds the app's port (port-taken,
	// outside); the engine leaves it alone.
	PortHolder *PortHolder `json:"portHolder,omitempty"`
}

// AppHealth is what the last health probe said.
type AppHealth struct {
	// Status is ok, failing or unknown (not probed yet).
	Status      string `json:"status"`
	HTTPStatus  int    `json:"httpStatus,omitempty"`
	LatencyMs   int64  `json:"latencyMs"`
	LastError   string `json:"lastError,omitempty"`
	CheckedAtMs int64  `json:"checkedAtMs,omitempty"`
}

// AppSandboxSummary is the Sandbox, Read mode and Network columns of a row.
type AppSandboxSummary struct {
	// Enabled and Forced are the configuration; DisabledBy says, when it
	// is off, who turned it off: "manifest" (its sandbox.enabled is
	// false) or "owner" (changed since).
	Enabled    bool   `json:"enabled"`
	Forced     bool   `json:"forced"`
	DisabledBy string `json:"disabledBy,omitempty"`
	// Isolation is what the running process actually got (bwrap, docker,
	// none, ...), "" when it does not run; Backend is its backend, or the
	// configured one when it does not run.
	Isolation string `json:"isolation"`
	Backend   string `json:"backend"`
	ReadMode  string `json:"readMode"`
	Network   string `json:"network"`
	HostCount int    `json:"hostCount"`
	// Denied and RecentDenied are the proxy's refusals since the engine
	// started (the last 12 distinct hosts, newest last); Allowed the
	// connections it let through.
	Denied       int      `json:"denied"`
	RecentDenied []string `json:"recentDenied"`
	Allowed      int      `json:"allowed"`
}

// NoSandbox says, for an app whose sandbox is off, why: "no sandbox
// (manifest)" or "no sandbox (owner)"; "" when it is on.
func (s AppSandboxSummary) NoSandbox() string {
	switch {
	case s.Enabled:
		return ""
	case s.DisabledBy == "":
		return "no sandbox"
	}
	return "no sandbox (" + s.DisabledBy + ")"
}

// AppOverview sums up every app for the card's header and the tray.
type AppOverview struct {
	Apps    int `json:"apps"`
	Running int `json:"running"`
	// Sandboxed and Unsandboxed count running apps by what they got.
	Sandboxed    int `json:"sandboxed"`
	Unsandboxed  int `json:"unsandboxed"`
	NeedsRestart int `json:"needsRestart"`
	CrashLooping int `json:"crashLooping"`
	Denied       int `json:"denied"`
	// Isolation is the engine's recommended backend for new launches
	// ("" when none can isolate).
	Isolation string `json:"isolation"`
}

// AppSandboxSettings are an app's stored sandbox configuration, with the
// reference's names.
type AppSandboxSettings struct {
	// Enabled runs the app in a sandbox; off runs it on this machine with
	// no barrier (isolation "none").
	Enabled bool `json:"enabled"`
	// ReadMode is what it may read: strict, allowlist or open.
	ReadMode string `json:"readMode"`
	// Network is all (any public address; this machine's services only
	// through Loopback), hosts (only the names in Hosts) or off.
	Network string `json:"network"`
	// Hosts are the names the hosts mode allows: exact, or "*.name" for
	// the name and its subdomains.
	Hosts []string `json:"hosts"`
	// AllowHTTP, in the hosts mode, limits what the app may ask of its
	// hosts by method and path (the proxy looks into their connections).
	AllowHTTP []backends.HTTPRule `json:"allowHttp"`
	// Loopback are this machine's service ports the app may call.
	Loopback []int `json:"loopback"`
	// Folders are host folders the app sees inside its directory, at
	// their base name.
	Folders []AppFolder `json:"folders"`
	// Backend is auto, or an isolating backend of this engine (bwrap,
	// docker, ...).
	Backend string `json:"backend"`
	// Image is the container image for a container backend ("" is the
	// engine's default image).
	Image string `json:"image"`
	// DaemonAPI gives the app a token of its own for the engine's API,
	// which reaches only its own runtime and logs.
	DaemonAPI bool `json:"daemonApi"`
}

// AppFolder is a host folder an app is given.
type AppFolder struct {
	Path     string `json:"path"`
	ReadOnly bool   `json:"readOnly"`
}

// AppSandboxPatch changes some of an app's sandbox settings: a field left
// out (null) keeps its value; a list given replaces the old one.
type AppSandboxPatch struct {
	Enabled   *bool                `json:"enabled"`
	ReadMode  *string              `json:"readMode"`
	Network   *string              `json:"network"`
	Hosts     *[]string            `json:"hosts"`
	AllowHTTP *[]backends.HTTPRule `json:"allowHttp"`
	Loopback  *[]int               `json:"loopback"`
	Folders   *[]AppFolder         `json:"folders"`
	Backend   *string              `json:"backend"`
	Image     *string              `json:"image"`
	DaemonAPI *bool                `json:"daemonApi"`
}

// The network modes of an app's sandbox.
const (
	AppNetworkAll   = "all"
	AppNetworkHosts = "hosts"
	AppNetworkOff   = "off"
)

// AppRegisterRequest registers an app from a folder.
type AppRegisterRequest struct {
	// Dir is the app's folder (absolute), with senclaw-app.json at its
	// root.
	Dir string `json:"dir"`
	// InPlace runs it where it is, after the same guards as sandbox
	// mounts; otherwise it is copied into the engine's apps/<id>/.
	InPlace bool `json:"inPlace"`
	// Env is the app's own environment (requires.env names what must be
	// in it). Nil keeps what an earlier registration gave.
	Env map[string]string `json:"env"`
}

// AppRegisterReply is the answer of a registration.
type AppRegisterReply struct {
	App AppView `json:"app"`
	// Created is false when an app of that id was updated.
	Created bool   `json:"created"`
	Note    string `json:"note"`
}

// AppStartReply is the answer of Start and Restart.
type AppStartReply struct {
	// OK says the app answered 2xx on its health path (or, with wait
	// off, that it was launched).
	OK bool `json:"ok"`
	// Note says what happened in words.
	Note string  `json:"note"`
	App  AppView `json:"app"`
}

// AppRuntime is what the Monitor panel shows of one app.
type AppRuntime struct {
	AppID     string `json:"appId"`
	State     string `json:"state"`
	StateText string `json:"stateText"`
	Pid       int    `json:"pid"`
	UptimeSec int64  `json:"uptimeSec"`
	Launches  int    `json:"launches"`
	// TotalLaunches counts every launch since it was registered.
	TotalLaunches int `json:"totalLaunches"`
	// Health is the last probe, History the last 60.
	Health        AppHealth        `json:"health"`
	HealthHistory []AppHealthPoint `json:"healthHistory"`
	// CPUPercent and RSSMB are of the app's whole process tree now,
	// without the sandbox's helpers; History is the same, one point a
	// second, up to five minutes.
	CPUPercent    float64       `json:"cpuPercent"`
	RSSMB         float64       `json:"rssMb"`
	MemoryLimitMB int           `json:"memoryLimitMb"`
	History       []StatsPoint  `json:"history"`
	Processes     []ProcessInfo `json:"processes"`
	// Sockets are the tree's sockets, listening first, at most 200.
	Sockets          []Socket `json:"sockets"`
	SocketsTruncated bool     `json:"socketsTruncated"`
	// Proxy is what the engine's proxy let through and refused.
	Proxy AppProxyCounts `json:"proxy"`
	// Launch is the running (or last) launch: what it got, its command
	// and environment (secret values masked).
	Launch *AppLaunch `json:"launch"`
	// LastLog are the log's last lines when it gave up or failed.
	LastLog []string `json:"lastLog"`
	// Note says what could not be measured.
	Note string `json:"note,omitempty"`
}

// AppProxyCounts are the egress proxy's counts for an app, since the engine
// started.
type AppProxyCounts struct {
	Allowed int `json:"allowed"`
	Denied  int `json:"denied"`
	// RecentDenied are the last 12 distinct refused hosts, newest last.
	RecentDenied []string `json:"recentDenied"`
}

// AppLaunch is a launch's facts as shown.
type AppLaunch struct {
	N         int    `json:"n"`
	AtMs      int64  `json:"atMs"`
	RunID     string `json:"runId"`
	Pid       int    `json:"pid"`
	Isolation string `json:"isolation"`
	Backend   string `json:"backend"`
	Command   string `json:"command"`
	Port      int    `json:"port"`
	// Env is the launch's environment as the engine set it; values of
	// variables that look secret are masked. Empty for a launch of an
	// earlier engine.
	Env       map[string]string  `json:"env"`
	Settings  AppSandboxSettings `json:"settings"`
	EndedAtMs int64              `json:"endedAtMs,omitempty"`
	Ended     string             `json:"ended,omitempty"`
}

// AppHealthPoint is one health probe.
type AppHealthPoint struct {
	AtMs      int64  `json:"atMs"`
	OK        bool   `json:"ok"`
	Status    int    `json:"status,omitempty"`
	LatencyMs int64  `json:"latencyMs"`
	Error     string `json:"error,omitempty"`
}

// AppLogChunk is the end of an app's log.
type AppLogChunk struct {
	AppID string `json:"appId"`
	// Text is the last Bytes bytes (invalid UTF-8 shows as U+FFFD).
	Text  string `json:"text"`
	Bytes int    `json:"bytes"`
	// Truncated says that older output was left out (read more with a
	// larger limit, up to 1 MiB).
	Truncated bool `json:"truncated"`
	// SizeBytes is the size of the current file; Files lists the log's
	// files, the current one first.
	SizeBytes int64    `json:"sizeBytes"`
	Files     []string `json:"files"`
}

// AppSandboxView is an app's sandbox configuration and what its running
// process got.
type AppSandboxView struct {
	AppID    string             `json:"appId"`
	Settings AppSandboxSettings `json:"settings"`
	// Forced: the manifest forces the sandbox (sandbox.force), so it
	// cannot be disabled; LockReason says so in words.
	Forced     bool   `json:"forced"`
	LockReason string `json:"lockReason,omitempty"`
	// Running is the configuration the running launch was made from
	// (with live changes applied), and Isolation what it got; both empty
	// when it does not run.
	Running   *AppSandboxSettings `json:"running"`
	Isolation string              `json:"isolation"`
	// NeedsRestart and its reasons, as in AppView.
	NeedsRestart        bool     `json:"needsRestart"`
	NeedsRestartReasons []string `json:"needsRestartReasons"`
	// LiveFields apply to a running app at once; RestartFields from its
	// next launch.
	LiveFields    []string `json:"liveFields"`
	RestartFields []string `json:"restartFields"`
	// Backends are the values backend may take here.
	Backends []string `json:"backends"`
}

// AppSandboxReply is the answer of PutSandbox: exactly what applied how.
type AppSandboxReply struct {
	Sandbox AppSandboxView `json:"sandbox"`
	// Changed lists the fields that changed; AppliedLive those the
	// running process got at once; PendingRestart those it gets only
	// when restarted.
	Changed        []string `json:"changed"`
	AppliedLive    []string `json:"appliedLive"`
	PendingRestart []string `json:"pendingRestart"`
	// NeedsRestart says whether the app now needs a restart (for these
	// changes or earlier ones).
	NeedsRestart bool   `json:"needsRestart"`
	Note         string `json:"note"`
}

// AppIsolation is the effective isolation of an app: what its running
// process got, what the configuration would give, and in words what is
// enforced and what is not.
type AppIsolation struct {
	AppID string `json:"appId"`
	// Running says whether a launch runs; Isolation and Backend are what
	// it got (or, when it does not run, what a launch would get).
	Running   bool   `json:"running"`
	Isolation string `json:"isolation"`
	Backend   string `json:"backend"`
	// Limits are the limits that held for the launch, as its run record
	// says; LimitsMissing those asked for and not enforced.
	Limits        []string `json:"limits"`
	LimitsMissing []string `json:"limitsMissing"`
	// Enforced and NotEnforced list in words what the confinement does
	// and does not cover.
	Enforced    []string `json:"enforced"`
	NotEnforced []string `json:"notEnforced"`
	// Note is the engine's own note on the app sandbox's network rules.
	Note string `json:"note"`
}

// PortHolder is a process that holds a port: an app's, when another
// program listens on it.
type PortHolder struct {
	Pid int `json:"pid"`
	// Command is its command line, cut to monitor.MaxCommandBytes.
	Command string `json:"command"`
	// Cwd is its working directory and Exe its executable, "" when they
	// cannot be read (another user's process).
	Cwd string `json:"cwd,omitempty"`
	Exe string `json:"exe,omitempty"`
}

// Socket is one socket of an app's process tree.
type Socket struct {
	Pid int `json:"pid"`
	// Kind is tcp4, tcp6, udp4, udp6 or unix.
	Kind string `json:"kind"`
	// Local and Remote are HOST:PORT (a path for a unix socket); Remote
	// is empty for a socket that is not connected.
	Local  string `json:"local"`
	Remote string `json:"remote,omitempty"`
	// State is the TCP state (LISTEN, ESTABLISHED, TIME_WAIT, ...), or
	// NONE for sockets without one.
	State string `json:"state"`
}

// The states of a Space App.
const (
	// AppStateStopped: not running (never started, stopped by a person or
	// with the engine).
	AppStateStopped = "stopped"
	// AppStateStarting: launched, waiting for the first 2xx from its health
	// path.
	AppStateStarting = "starting"
	// AppStateRunning: healthy once; probed every ProbeEvery since (the
	// health says whether the last probe answered).
	AppStateRunning = "running"
	// AppStateStopping: SIGTERM sent, waiting for the tree to end.
	AppStateStopping = "stopping"
	// AppStateBackoff: it ended and is restarted after a delay.
	AppStateBackoff = "backoff"
	// AppStateCrashLooping: it failed GiveUpStarts times within GiveUpWindow
	// and is no longer restarted; a manual start resets it.
	AppStateCrashLooping = "crash-looping"
	// AppStateExited: it ended and its restart policy does not restart it.
	AppStateExited = "exited"
	// AppStateFailed: it could not be started (a requirement is missing, the
	// launch was refused, or it did not become healthy and is not
	// restarted).
	AppStateFailed = "failed"
	// AppStatePortTaken: its port is held by a process the engine did not
	// start; that process is left alone.
	AppStatePortTaken = "port-taken"
	// AppStateOutside: its port is held by a process running from the app's
	// own directory: the app runs outside the engine.
	AppStateOutside = "outside"
)

// AppDefaultLogRead and AppMaxLogRead bound one read of an app's log.
const (
	AppDefaultLogRead = 128 << 10
	AppMaxLogRead     = 1 << 20
)
