package engineapi

import "time"

// The request and answer types hold only the fields SenClaw sends and
// reads, named as the Engine API documents them.

// ContainerConfig is the portable part of a container's create request.
type ContainerConfig struct {
	Hostname     string            `json:"Hostname,omitempty"`
	User         string            `json:"User,omitempty"`
	AttachStdout bool              `json:"AttachStdout,omitempty"`
	AttachStderr bool              `json:"AttachStderr,omitempty"`
	Env          []string          `json:"Env,omitempty"`
	Cmd          []string          `json:"Cmd,omitempty"`
	Image        string            `json:"Image"`
	WorkingDir   string            `json:"WorkingDir,omitempty"`
	Entrypoint   []string          `json:"Entrypoint,omitempty"`
	Labels       map[string]string `json:"Labels,omitempty"`
	StopSignal   string            `json:"StopSignal,omitempty"`
	// StopTimeout is seconds.
	StopTimeout *int `json:"StopTimeout,omitempty"`
}

// HostConfig is the host-dependent part of a create request: isolation
// and limits.
type HostConfig struct {
	NetworkMode    string            `json:"NetworkMode,omitempty"`
	RestartPolicy  *RestartPolicy    `json:"RestartPolicy,omitempty"`
	LogConfig      *LogConfig        `json:"LogConfig,omitempty"`
	AutoRemove     bool              `json:"AutoRemove,omitempty"`
	CapDrop        []string          `json:"CapDrop,omitempty"`
	CgroupnsMode   string            `json:"CgroupnsMode,omitempty"`
	IpcMode        string            `json:"IpcMode,omitempty"`
	Privileged     bool              `json:"Privileged"`
	ReadonlyRootfs bool              `json:"ReadonlyRootfs"`
	SecurityOpt    []string          `json:"SecurityOpt,omitempty"`
	Tmpfs          map[string]string `json:"Tmpfs,omitempty"`
	Memory         int64             `json:"Memory,omitempty"`
	MemorySwap     int64             `json:"MemorySwap,omitempty"`
	NanoCPUs       int64             `json:"NanoCpus,omitempty"`
	PidsLimit      *int64            `json:"PidsLimit,omitempty"`
	Ulimits        []Ulimit          `json:"Ulimits,omitempty"`
	Mounts         []Mount           `json:"Mounts,omitempty"`
	Init           *bool             `json:"Init,omitempty"`
}

// RestartPolicy says whether the daemon restarts the container ("no").
type RestartPolicy struct {
	Name string `json:"Name"`
}

// LogConfig is the container's log driver ("none").
type LogConfig struct {
	Type string `json:"Type"`
}

// Ulimit is one resource limit of the container's processes.
type Ulimit struct {
	Name string `json:"Name"`
	Soft int64  `json:"Soft"`
	Hard int64  `json:"Hard"`
}

// MountBind is a Mount's Type for a bind mount.
const MountBind = "bind"

// Mount is one mount of a container.
type Mount struct {
	Type     string `json:"Type"`
	Source   string `json:"Source"`
	Target   string `json:"Target"`
	ReadOnly bool   `json:"ReadOnly,omitempty"`
}

// createRequest is the body of a container create: the config with the
// host config beside its fields.
type createRequest struct {
	*ContainerConfig
	HostConfig *HostConfig `json:"HostConfig,omitempty"`
}

// Container is what inspecting a container tells.
type Container struct {
	ID    string `json:"Id"`
	Name  string `json:"Name"`
	State struct {
		Running bool `json:"Running"`
		Pid     int  `json:"Pid"`
	} `json:"State"`
	Config struct {
		Labels map[string]string `json:"Labels"`
	} `json:"Config"`
	ExecIDs []string `json:"ExecIDs"`
}

// ContainerSummary is one container of a list.
type ContainerSummary struct {
	ID     string            `json:"Id"`
	Names  []string          `json:"Names"`
	Labels map[string]string `json:"Labels"`
	// State is "created", "running", "exited", ...
	State string `json:"State"`
}

// ExecConfig is an exec's create request.
type ExecConfig struct {
	User         string   `json:"User,omitempty"`
	WorkingDir   string   `json:"WorkingDir,omitempty"`
	Env          []string `json:"Env,omitempty"`
	Cmd          []string `json:"Cmd"`
	AttachStdin  bool     `json:"AttachStdin"`
	AttachStdout bool     `json:"AttachStdout"`
	AttachStderr bool     `json:"AttachStderr"`
	Tty          bool     `json:"Tty"`
	// ConsoleSize is [height, width] (API 1.42 and later).
	ConsoleSize *[2]uint `json:"ConsoleSize,omitempty"`
}

// ExecStartOptions is an exec's start request (attached, not detached).
type ExecStartOptions struct {
	Tty bool `json:"Tty"`
	// ConsoleSize is [height, width] (API 1.42 and later).
	ConsoleSize *[2]uint `json:"ConsoleSize,omitempty"`
}

// ExecInspect is what inspecting an exec tells.
type ExecInspect struct {
	Running  bool `json:"Running"`
	ExitCode int  `json:"ExitCode"`
	// Pid is the exec's pid as the daemon sees it (0 until it started).
	Pid int `json:"Pid"`
}

// Top is a container's process list: one row of Titles' columns per
// process.
type Top struct {
	Titles    []string   `json:"Titles"`
	Processes [][]string `json:"Processes"`
}

// Stats is one sample of a container's resource use.
type Stats struct {
	Read      time.Time `json:"read"`
	Name      string    `json:"name"`
	PidsStats struct {
		Current uint64 `json:"current"`
	} `json:"pids_stats"`
	CPUStats    CPUStats `json:"cpu_stats"`
	PreCPUStats CPUStats `json:"precpu_stats"`
	MemoryStats struct {
		Usage uint64            `json:"usage"`
		Limit uint64            `json:"limit"`
		Stats map[string]uint64 `json:"stats"`
	} `json:"memory_stats"`
}

// CPUStats is a container's CPU time and the host's, in nanoseconds.
type CPUStats struct {
	CPUUsage struct {
		TotalUsage  uint64   `json:"total_usage"`
		PercpuUsage []uint64 `json:"percpu_usage"`
	} `json:"cpu_usage"`
	SystemUsage uint64 `json:"system_cpu_usage"`
	OnlineCPUs  uint32 `json:"online_cpus"`
}

// Image is what inspecting an image tells.
type Image struct {
	ID string `json:"Id"`
}

// Version is the daemon's version.
type Version struct {
	Version    string `json:"Version"`
	APIVersion string `json:"ApiVersion"`
	Os         string `json:"Os"`
	Arch       string `json:"Arch"`
}

// Ping is the daemon's answer to a ping.
type Ping struct {
	// APIVersion is the newest API version the daemon speaks.
	APIVersion string
	// OSType is "linux" or "windows".
	OSType string
}
