package docker

import (
	"path"
	"strconv"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/senclaw/sandbox/backends/netfwd"
)

// Paths inside every container.
const (
	workDir = "/work"
	tmpDir  = "/work/.tmp"
)

// Label keys every SenClaw container carries.
const (
	labelSandbox = "senclaw.sandbox"
	labelHash    = "senclaw.config-hash"
	labelCreated = "senclaw.created"
	// labelKind is "sandbox" (persistent), "pool" (warm, not yet taken)
	// or "oneshot" (taken or created for one run).
	labelKind = "senclaw.kind"
	// labelOwner is Options.Owner: which engine made the container.
	labelOwner = "senclaw.owner"
)

// Container kinds (labelKind values).
const (
	kindSandbox = "sandbox"
	kindPool    = "pool"
	kindOneShot = "oneshot"
)

// keeperScript is the container's main process: it idles until stopped and
// exits on SIGTERM at once. Runs are execs next to it; docker-init (Init)
// is PID 1 and reaps whatever they orphan.
const keeperScript = "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"

// tmpfsOptions is /tmp: private, writable by every user, counted in the
// container's memory.
const tmpfsOptions = "rw,nosuid,nodev,size=256m,mode=1777"

// containerName is the name of a persistent sandbox's container.
func containerName(sandboxID string) string { return "senclaw-" + sandboxID }

// labelsFor are the labels of a new container.
func labelsFor(owner, kind, sandboxID string, s shape, created time.Time) map[string]string {
	return map[string]string{
		labelOwner:   owner,
		labelKind:    kind,
		labelSandbox: sandboxID,
		labelHash:    s.hash(),
		labelCreated: created.UTC().Format(time.RFC3339Nano),
	}
}

// containerConfig is the create request for a container of shape s: a pure
// function, golden-tested. seccompJSON is the profile from profile().
func containerConfig(s shape, labels map[string]string, seccompJSON string) (*container.Config, *container.HostConfig) {
	yes := true
	stop := stopGrace
	pids := int64(s.Pids)
	memory := int64(s.MemoryMB) << 20
	cfg := &container.Config{
		Image:      s.Image,
		User:       s.User,
		WorkingDir: workDir,
		Hostname:   "sandbox",
		Env:        []string{"HOME=" + workDir, "TMPDIR=/tmp"},
		Entrypoint: []string{"/bin/sh", "-c", keeperScript},
		Labels:     labels,
		StopSignal: "SIGTERM",
		// StopTimeout is seconds.
		StopTimeout: &stop,
	}
	host := &container.HostConfig{
		NetworkMode:    container.NetworkMode(s.Network),
		RestartPolicy:  container.RestartPolicy{Name: container.RestartPolicyDisabled},
		LogConfig:      container.LogConfig{Type: "none"},
		ReadonlyRootfs: true,
		Tmpfs:          map[string]string{"/tmp": tmpfsOptions},
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges", "seccomp=" + seccompJSON},
		Privileged:     false,
		Init:           &yes,
		IpcMode:        "private",
		CgroupnsMode:   "private",
		Mounts:         mountsOf(s),
		// A daemon elsewhere binds nothing of this machine (remote.go).
		// No port is ever published: listen ports reach the host through
		// the engine's forwarding (127.0.0.1 only), like bwrap's.
		Resources: container.Resources{
			PidsLimit:  &pids,
			Memory:     memory,
			MemorySwap: memory, // equal to memory: no swap on top
		},
	}
	if s.Remote {
		host.Mounts = remoteMounts(s)
		if s.Volume == "" {
			host.Tmpfs[workDir] = oneShotWork(s)
		}
	}
	if s.CPUs != "" {
		cpus, _ := strconv.ParseFloat(s.CPUs, 64)
		host.NanoCPUs = int64(cpus * 1e9)
	}
	if s.DiskMB > 0 {
		// RLIMIT_FSIZE is in bytes: no single file may grow past the
		// quota; the engine's watchdog sums the workspace.
		limit := int64(s.DiskMB) << 20
		host.Ulimits = []*container.Ulimit{{Name: "fsize", Soft: limit, Hard: limit}}
	}
	return cfg, host
}

// mountsOf binds the workspace at /work and each mount under it.
func mountsOf(s shape) []mount.Mount {
	ms := []mount.Mount{{Type: mount.TypeBind, Source: s.Workspace, Target: workDir}}
	for _, m := range s.Mounts {
		ms = append(ms, mount.Mount{
			Type:     mount.TypeBind,
			Source:   m.Source,
			Target:   path.Join(workDir, m.Target),
			ReadOnly: m.ReadOnly,
		})
	}
	for _, p := range s.Protected {
		ms = append(ms, mount.Mount{Type: mount.TypeBind, Source: p.Source, Target: p.Target, ReadOnly: true})
	}
	if s.NetDir != "" {
		ms = append(ms,
			mount.Mount{Type: mount.TypeBind, Source: s.NetDir, Target: netfwd.MountDir},
			mount.Mount{Type: mount.TypeBind, Source: s.Forwarder, Target: netfwd.BinaryPath, ReadOnly: true})
	}
	return append(ms, maskMounts(s.Masked)...)
}
