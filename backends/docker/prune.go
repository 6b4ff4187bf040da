package docker

import (
	"context"
	"errors"
	cerrdefs "github.com/containerd/errdefs"
	"time"
)

// Pruner is implemented by backends that clean up idle sandboxes on their
// own schedule. The engine starts RunPruner once, in a goroutine, and
// cancels its context when it stops.
type Pruner interface {
	// Prune stops sandbox containers idle for IdleHours and removes those
	// idle for MaxAgeDays, as of now.
	Prune(ctx context.Context, now time.Time) error
	// RunPruner calls Prune at start and every 5 minutes until ctx ends.
	RunPruner(ctx context.Context)
}

// pruneEvery is how often RunPruner looks.
const pruneEvery = 5 * time.Minute

// RunPruner calls Prune now and then every 5 minutes, with the injected
// clock's time, until ctx ends. Failures are logged, not fatal.
func (b *Backend) RunPruner(ctx context.Context) {
	t := time.NewTicker(pruneEvery)
	defer t.Stop()
	for {
		if err := b.Prune(ctx, b.now()); err != nil && ctx.Err() == nil {
			b.log.Warn("Pruning docker sandboxes failed.", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Prune stops running sandbox containers idle for more than IdleHours and
// removes sandbox containers idle for more than MaxAgeDays. A container
// with a run going is never touched. Idle time counts from the last run
// this engine saw, else from adoption or creation. Removing is safe: the
// root filesystem is read-only, the workspace is on the host, and the next
// run makes a new container.
func (b *Backend) Prune(ctx context.Context, now time.Time) error {
	cli, err := b.client()
	if err != nil {
		return err
	}
	list, err := b.listOurs(ctx, cli)
	if err != nil {
		return err
	}
	stopAfter := time.Duration(b.opts.IdleHours) * time.Hour
	removeAfter := time.Duration(b.opts.MaxAgeDays) * 24 * time.Hour
	var errs []error
	for _, c := range list {
		id := c.Labels[labelSandbox]
		if c.Labels[labelKind] != kindSandbox || id == "" {
			continue
		}
		st := b.state(id)
		st.mu.Lock()
		b.mu.Lock()
		busy, last := st.running > 0, st.lastUsed
		b.mu.Unlock()
		if last.IsZero() {
			last, _ = time.Parse(time.RFC3339, c.Labels[labelCreated])
		}
		idle := now.Sub(last)
		switch {
		case busy:
		case idle > removeAfter:
			b.log.Info("Removing an idle sandbox container.", "sandbox", id, "idle", idle.Round(time.Minute))
			st.ready = nil
			errs = append(errs, b.removeContainer(ctx, cli, c.ID))
		case idle > stopAfter && c.State == "running":
			b.log.Info("Stopping an idle sandbox container.", "sandbox", id, "idle", idle.Round(time.Minute))
			st.ready = nil
			sctx, cancel := callCtx(ctx, callTimeout)
			_, err := cli.ContainerStop(sctx, c.ID, stopGently)
			cancel()
			if err != nil && !cerrdefs.IsNotFound(err) {
				errs = append(errs, b.daemonErr("stopping an idle sandbox container", err))
			}
		}
		st.mu.Unlock()
	}
	return errors.Join(errs...)
}
