package spaceapps

import (
	"encoding/json"
	"time"
)

// record is what the engine's store keeps of one app (bucket space_apps):
// its registration, its sandbox configuration and what its last launch
// really got, so launch counts and needs-restart survive the engine's
// restarts.
type record struct {
	Manifest Manifest `json:"manifest"`
	// Registration is new at each registration (the manifest, the files
	// or the environment may have changed): a launch of an earlier one
	// needs a restart.
	Registration string `json:"registration"`
	// Dir is where the app runs: the engine's copy (apps/<id>/) or, in
	// place, the folder it was registered from.
	Dir     string `json:"dir"`
	InPlace bool   `json:"inPlace"`
	// Source is where it was registered from: a folder, or "zip upload".
	Source string            `json:"source"`
	Env    map[string]string `json:"env"`
	// Tenant is the slug of the tenant the app belongs to; empty is the
	// owner's own.
	Tenant string `json:"tenant,omitempty"`
	// Sandbox is the configuration; Forced says the manifest forces it.
	Sandbox SandboxSettings `json:"sandbox"`
	Forced  bool            `json:"forced"`
	// DisabledBy says who turned the sandbox off, when it is: "manifest"
	// (its sandbox block says enabled: false) or "owner" (changed since).
	DisabledBy string `json:"disabledBy,omitempty"`
	// Port is the port it serves on (the manifest's, or the one the
	// engine picked for port 0, kept across launches).
	Port int `json:"port"`
	// StoppedByUser: a person stopped it; the supervisor does not
	// restart it and autostart skips it until someone starts it.
	StoppedByUser bool `json:"stoppedByUser"`
	// Launches counts launches since it was last started by a person
	// (automatic restarts and autostarts add to it); TotalLaunches all.
	Launches      int       `json:"launches"`
	TotalLaunches int       `json:"totalLaunches"`
	RegisteredAt  time.Time `json:"registeredAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
	// Last is the last launch's facts, stored when it started.
	Last *LaunchFacts `json:"lastLaunch,omitempty"`
}

// LaunchFacts are what one launch really got, recorded when it started
// and never recomputed: needs restart compares them with the saved
// configuration.
type LaunchFacts struct {
	// N is the launch's number (TotalLaunches when it started).
	N  int       `json:"n"`
	At time.Time `json:"at"`
	// RunID is the run record of the launch.
	RunID string `json:"runId"`
	// Pid is the host pid the backend started.
	Pid int `json:"pid"`
	// Isolation is what the run's record says it got: bwrap, docker,
	// none, ...; Backend the backend that ran it.
	Isolation string `json:"isolation"`
	Backend   string `json:"backend"`
	// Settings is the configuration the launch was made from.
	Settings SandboxSettings `json:"settings"`
	// Registration is the registration it ran.
	Registration string `json:"registration"`
	Command      string `json:"command"`
	Port         int    `json:"port"`
	// Marker is the launch's environment marker (KEY=VALUE): what is
	// left of it after a crash of the engine is found by it; UID is who
	// it ran as.
	Marker string `json:"marker"`
	UID    int    `json:"uid"`
	// EndedAt and Ended say when and how it ended ("" while running).
	EndedAt *time.Time `json:"endedAt,omitempty"`
	Ended   string     `json:"ended,omitempty"`
}

func decodeRecord(data []byte) (*record, error) {
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	if r.Env == nil {
		r.Env = map[string]string{}
	}
	return &r, nil
}
