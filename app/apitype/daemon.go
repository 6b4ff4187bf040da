package apitype

import "path/filepath"

// Leftover is something of this engine that nothing owns any more: what
// a crash, or a failed clean-up, left (senclaw doctor). The
// engine's start removes what it knows of; Leftovers finds the rest.
type Leftover struct {
	// Kind is "workspace" (a one-shot run's), "files" (a deleted
	// sandbox's workspace, kept: rm without --purge leaves it on
	// purpose), "cgroup", "container" or "process".
	Kind string `json:"kind"`
	// What names it: a path, a container's name, a pid.
	What string `json:"what"`
	// Owner is the run or sandbox it was of.
	Owner string `json:"owner,omitempty"`
	// Removable: Leftovers(remove) removes it.
	Removable bool   `json:"removable"`
	Removed   bool   `json:"removed,omitempty"`
	Error     string `json:"error,omitempty"`
}

// DaemonInfo is what a running daemon tells the others (in info.json).
type DaemonInfo struct {
	Pid    int    `json:"pid"`
	Socket string `json:"socket"`
	URL    string `json:"url,omitempty"`
	// Note says what a person must know of the listeners: a port taken
	// and fallen back from, or not served.
	Note string `json:"note,omitempty"`
	// LAN is the LAN listener, when there is one.
	LAN *LANInfo `json:"lan,omitempty"`
}

// LANInfo says where the LAN listener is, for the info file and status.
type LANInfo struct {
	URL string `json:"url"`
	// Fingerprint is the SHA-256 of its certificate: a client that pins
	// it knows it talks to this engine.
	Fingerprint string `json:"fingerprint"`
}

// Status is the answer of GET /status.
type Status struct {
	Version   string `json:"version"`
	State     string `json:"state"`
	Summary   string `json:"summary"`
	UptimeSec int64  `json:"uptimeSec"`
	Sandboxes int    `json:"sandboxes"`
	Running   int    `json:"running"`
	// DataDir and Pid are shown to the owner only.
	DataDir string `json:"dataDir,omitempty"`
	Pid     int    `json:"pid,omitempty"`
	// LAN is the LAN listener, when it is on.
	LAN *LANInfo `json:"lan,omitempty"`
	// Runs says how many runs execute, wait in the queue and go on in
	// the background: the whole engine's, so never shown to a tenant
	// (all zero).
	Runs QueueStats `json:"runs"`
}

// DoctorCheck is one finding: what was looked at, how it stands, why, and what
// to do when it is not ok.
type DoctorCheck struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// DoctorReport is what the doctor found (and, after Repair, did).
type DoctorReport struct {
	// OK is true when no check failed.
	OK        bool          `json:"ok"`
	Checks    []DoctorCheck `json:"checks"`
	Leftovers []Leftover    `json:"leftovers"`
	// Repaired says what Repair did, one line each.
	Repaired []string `json:"repaired,omitempty"`
	// Restart: the store was replaced by a repaired one, which the
	// daemon opens when it starts again (it stops after answering).
	Restart bool `json:"restart,omitempty"`
}

// SocketPath is where the API socket of the daemon of runtimeDir is.
func SocketPath(runtimeDir string) string { return filepath.Join(runtimeDir, "api.sock") }

// InfoFile is the daemon's info file (a DaemonInfo) in its runtime dir,
// and MaxInfo what a reader takes of it.
const (
	InfoFile = "info.json"
	MaxInfo  = 64 << 10
)
