package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/diskquota"
	"github.com/senclaw/sandbox/backends/docker"
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
	// engine names the engine elsewhere the workspace is on: its
	// volume's size option, a one-shot's tmpfs there, or the watchdog
	// counting through its container holds the quota.
	engine string
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
	if remoteSandbox(p.sb) && p.sb.DiskMB > 0 {
		return e.remoteDisk(p.sb, b)
	}
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

// remoteDisk is what holds the quota of sb's workspace elsewhere, as its
// started run found it.
func (e *Engine) remoteDisk(sb *Sandbox, b backends.Backend) diskQuota {
	q := diskQuota{engine: sb.Engine}
	db, ok := b.(*docker.Backend)
	if !ok {
		return diskQuota{watch: true, why: "the engine's backend says nothing of its volumes", engine: sb.Engine}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	spec := e.shapeSpec(sb, nil)
	hard, err := db.HardDisk(ctx, spec)
	switch {
	case err != nil:
		q.watch, q.why = true, "the workspace volume could not be looked at: "+err.Error()
	case hard && sb.Kind == "oneshot":
		q.hardMB, q.kind = sb.DiskMB, "tmpfs"
	case hard:
		q.hardMB, q.kind = sb.DiskMB, "the volume driver's size option"
	default:
		q.watch, q.why = true, "the engine's volume driver takes no size option (it needs project quotas on its data root)"
	}
	return q
}

// line is the record's word on the disk quota.
func (q diskQuota) line(sb *Sandbox) string {
	if q.engine != "" {
		switch {
		case sb.DiskMB <= 0:
			return ""
		case q.kind == "tmpfs":
			return fmt.Sprintf("disk: tmpfs (hard) in the container on engine %s, %d MB, in memory: counted in the run's memory limit", q.engine, q.hardMB)
		case q.hardMB > 0:
			return fmt.Sprintf("disk: %s on engine %s (hard), %d MB", q.kind, q.engine, q.hardMB)
		}
		return fmt.Sprintf("disk: watchdog over the Docker API, %d MB and %d files counted every %s through the forwarder in the container on engine %s; the run is killed past them, and a burst between two counts can overshoot (no hard quota: %s)", sb.DiskMB, diskquota.Inodes(sb.DiskMB), remoteWatchEvery, q.engine, q.why)
	}
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

// watchDisk starts the watchdog's counts the run needs: its workspace's
// when q needs one, and a tenant's directory's (tenantDiskQuota); nil
// when none.
func (e *Engine) watchDisk(p *plan, q diskQuota, lr *liveRun) quotaWatch {
	own := e.watchWorkspace(p, q, lr)
	mb := e.tenantDiskQuota(p.sb)
	if mb <= 0 {
		return own
	}
	dir := &tenantWatch{Watch: e.watchdog.Watch(canonical(e.TenantDir(p.sb.Tenant)), mb, lr.proc.Pids), tenant: p.sb.Tenant}
	if own == nil {
		return dir
	}
	return newEitherWatch(own, dir)
}

// tenantDiskQuota is the quota, in MB, the watchdog holds the directory
// of sb's tenant to while a run of sb goes on; 0 for none. A tenant's
// runs write into its directory through more than their workspaces: a
// project dir and mounts there (which have no quota of their own) and
// its runtime/ (what it installs). Counted only at a run's admission, the
// quota would let one run fill the disk.
func (e *Engine) tenantDiskQuota(sb *Sandbox) int {
	if sb.Tenant == "" || remoteSandbox(sb) {
		return 0
	}
	t, ok := e.tenant(sb.Tenant)
	if !ok || t.Quota.DiskMB <= 0 {
		return 0
	}
	return t.Quota.DiskMB
}

// tenantLine is the record's line for the tenant's directory's count.
func (e *Engine) tenantLine(sb *Sandbox) string {
	mb := e.tenantDiskQuota(sb)
	if mb <= 0 {
		return ""
	}
	return fmt.Sprintf("tenant disk: watchdog over tenant %s's directory %s, %d MB (its quota) and %d files counted as they change; the run is killed past them", sb.Tenant, e.TenantDir(sb.Tenant), mb, diskquota.Inodes(mb))
}

// tenantWatch is the count of a tenant's directory; its reason names it.
type tenantWatch struct {
	*diskquota.Watch
	tenant string
}

func (w *tenantWatch) Reason() string {
	return "tenant " + w.tenant + ": " + strings.Replace(w.Watch.Reason(), "the workspace", "its directory", 1)
}

// eitherWatch is two counts as one: exceeded when either is, with that
// one's reason.
type eitherWatch struct {
	a, b   quotaWatch
	over   chan struct{}
	stop   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	reason string
}

func newEitherWatch(a, b quotaWatch) *eitherWatch {
	w := &eitherWatch{a: a, b: b, over: make(chan struct{}), stop: make(chan struct{})}
	go func() {
		var fired quotaWatch
		select {
		case <-a.Exceeded():
			fired = a
		case <-b.Exceeded():
			fired = b
		case <-w.stop:
			return
		}
		w.mu.Lock()
		w.reason = fired.Reason()
		w.mu.Unlock()
		close(w.over)
	}()
	return w
}

func (w *eitherWatch) Exceeded() <-chan struct{} { return w.over }

func (w *eitherWatch) Reason() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reason
}

func (w *eitherWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.a.Stop()
		w.b.Stop()
	})
}

// watchWorkspace starts the watchdog's count of the run's workspace when
// q needs one; nil otherwise.
func (e *Engine) watchWorkspace(p *plan, q diskQuota, lr *liveRun) quotaWatch {
	if !q.watch || p.sb.DiskMB <= 0 {
		return nil
	}
	if q.engine != "" {
		if p.sb.Kind == "oneshot" {
			return nil // a tmpfs, or nothing to count through
		}
		return e.watchRemoteDisk(p.sb)
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
