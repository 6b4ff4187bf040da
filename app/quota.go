package app

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/diskquota"
)

// diskQuota is how one run's workspace is held to its quota: by the
// kernel (the workspace is a filesystem of the quota's size: an ext4
// image for a sandbox that lasts, a tmpfs for a one-shot's), by the
// watchdog (which counts it as it changes and has the run killed past
// it), or not at all (an agent's project dir). The record's line says
// which held.
type diskQuota struct {
	// hardMB is the size of the workspace's filesystem, 0 without one;
	// kind names it.
	hardMB int
	kind   string
	// watch is set when the watchdog counts the workspace: no image, or
	// one larger than the quota (images grow, never shrink).
	watch bool
	why   string // why there is no image
}

// prepareDisk gives the run's workspace its quota before anything is
// written into it for the run. Where the engine makes hard quotas
// (Options.Disks, as root): a one-shot's workspace, which lives for the
// run, becomes a tmpfs of the quota (it costs microseconds; its pages
// count in the run's memory limit), a lasting sandbox's an ext4 image
// (made at its first run, files already there moved in). Elsewhere, and
// for a direct run (held to nothing, and with no memory limit to count a
// tmpfs in), the watchdog. b is nil when no run is starting (a container
// is being made).
func (e *Engine) prepareDisk(sb *Sandbox, b backends.Backend) diskQuota {
	if sb.DiskMB <= 0 {
		return diskQuota{}
	}
	if !sb.OwnWorkspace {
		return diskQuota{watch: true, why: "the workspace is not the engine's own directory"}
	}
	im := e.opts.Disks
	if im == nil {
		return diskQuota{watch: true, why: "the engine makes no hard quotas here"}
	}
	if b != nil && b.Name() == "direct" {
		return diskQuota{watch: true, why: "a direct run is not confined to its workspace"}
	}
	if sb.Kind == "oneshot" {
		return e.oneShotTmpfs(sb)
	}
	if ok, why := im.Usable(); !ok {
		return diskQuota{watch: true, why: why}
	}
	size, err := im.Attach(sb.Workspace, sb.DiskMB)
	if err != nil {
		if !errors.Is(err, diskquota.ErrTooBig) {
			e.log.Warn("A workspace image could not be made; the watchdog keeps the quota.", "sandbox", sb.ID, "err", err)
		}
		return diskQuota{watch: true, why: err.Error()}
	}
	return diskQuota{hardMB: size, kind: "loop ext4 image", watch: size > sb.DiskMB}
}

// maxTmpfsOneShots bounds the one-shot workspaces that are a tmpfs at
// once. Each mount on this machine is copied into every new sandbox's
// mount namespace, which makes each start slower (measured: 500 mounts
// take a bwrap start from 4 to 11 ms); the one-shots past it are counted
// by the watchdog, and their records say so.
const maxTmpfsOneShots = 32

// oneShotTmpfs makes a one-shot's workspace a tmpfs of its quota, while
// fewer than maxTmpfsOneShots are.
func (e *Engine) oneShotTmpfs(sb *Sandbox) diskQuota {
	if e.tmpfsOneShots.Add(1) > maxTmpfsOneShots {
		e.tmpfsOneShots.Add(-1)
		return diskQuota{watch: true, why: fmt.Sprintf("%d one-shot runs have a tmpfs workspace already, the most at once (each mount slows the start of every new sandbox)", maxTmpfsOneShots)}
	}
	if err := diskquota.Tmpfs(sb.Workspace, sb.DiskMB); err != nil {
		e.tmpfsOneShots.Add(-1)
		return diskQuota{watch: true, why: err.Error()}
	}
	e.mountedOneShots.Store(sb.Workspace, true)
	return diskQuota{hardMB: sb.DiskMB, kind: "tmpfs"}
}

// startedDisk checks q once a Docker one-shot started: the pool binds
// its container's workspace over the run's (a tmpfs of the same quota,
// Options.HardQuota), or, when that was a plain directory, leaves the
// run's without a filesystem of its own: the quota then goes to the
// watchdog.
func (e *Engine) startedDisk(p *plan, b backends.Backend, q diskQuota) diskQuota {
	if b.Name() != "docker" || p.sb.Kind != "oneshot" || p.sb.DiskMB <= 0 {
		return q
	}
	switch mounted := diskquota.Mounted(p.sb.Workspace); {
	case mounted:
		// The pool's, bound over the run's workspace: unmounted after
		// the run (what the engine mounted there first stays counted).
		e.mountedOneShots.LoadOrStore(p.sb.Workspace, false)
		return diskQuota{hardMB: p.sb.DiskMB, kind: "tmpfs"}
	case q.hardMB > 0:
		return diskQuota{watch: true, why: "the backend replaced the workspace's filesystem"}
	}
	return q
}

// line is the record's word on the disk quota.
func (q diskQuota) line(sb *Sandbox) string {
	switch {
	case sb.DiskMB <= 0 && sb.Kind == "agent":
		return "disk: no quota (an agent's project dir)"
	case sb.DiskMB <= 0:
		return ""
	case q.hardMB > 0 && q.watch:
		return fmt.Sprintf("disk: %s (hard) of %d MB, and the watchdog for the %d MB quota (an image does not shrink)", q.kind, q.hardMB, sb.DiskMB)
	case q.kind == "tmpfs":
		return fmt.Sprintf("disk: tmpfs (hard), %d MB and %d files, in memory: counted in the run's memory limit", q.hardMB, diskquota.Inodes(q.hardMB))
	case q.hardMB > 0:
		return fmt.Sprintf("disk: %s (hard), %d MB and %d files", q.kind, q.hardMB, diskquota.Inodes(q.hardMB))
	}
	return fmt.Sprintf("disk: watchdog, %d MB and %d files counted as they change, open unlinked files included; the run is killed past them, and a burst between two looks can overshoot (no hard quota: %s)", sb.DiskMB, diskquota.Inodes(sb.DiskMB), q.why)
}

// watchDisk starts the watchdog's count of the run's workspace when q
// needs one; nil otherwise.
func (e *Engine) watchDisk(p *plan, q diskQuota, lr *liveRun) *diskquota.Watch {
	if !q.watch || p.sb.DiskMB <= 0 {
		return nil
	}
	return e.watchdog.Watch(p.sb.Workspace, p.sb.DiskMB, lr.proc.Pids)
}

// reconcileDisks runs at engine start: the images of the sandboxes that
// exist are mounted again (or kept, when a crashed engine left them
// mounted); those of deleted sandboxes and of one-shot runs a crash cut
// short are unmounted and removed.
func (e *Engine) reconcileDisks() error {
	im := e.opts.Disks
	if im == nil {
		return nil
	}
	if ok, _ := im.Usable(); !ok {
		return nil
	}
	known := map[string]bool{}
	err := e.store.EachSandbox(func(data []byte) error {
		var sb Sandbox
		if err := json.Unmarshal(data, &sb); err != nil {
			return err
		}
		if sb.OwnWorkspace {
			known[sb.Workspace] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	return im.Reconcile([]string{e.workspacesDir()}, func(ws string) bool { return known[ws] })
}
