package docker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// listOurs lists every container of this engine (its owner label),
// running or not.
func (b *Backend) listOurs(ctx context.Context, cli *apiClient) ([]container.Summary, error) {
	lctx, cancel := callCtx(ctx, callTimeout)
	defer cancel()
	list, err := cli.ContainerList(lctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", labelOwner+"="+b.opts.Owner)})
	if err != nil {
		return nil, b.daemonErr("listing senclaw containers", err)
	}
	return list.Items, nil
}

// Reconcile runs at engine start. Containers of sandboxes known() does not
// know, and every pool or one-shot container (a previous engine's), are
// removed; the rest are adopted. A running adopted container that still has
// runs of the previous engine going is restarted, so none outlives it.
func (b *Backend) Reconcile(ctx context.Context, known func(sandboxID string) bool) error {
	cli, err := b.client()
	if err != nil {
		return err
	}
	list, err := b.listOurs(ctx, cli)
	if err != nil {
		return err
	}
	var errs []error
	var kept []container.Summary
	for _, c := range list {
		id := c.Labels[labelSandbox]
		kind := c.Labels[labelKind]
		if kind != kindSandbox && b.ours(c.Labels) {
			kept = append(kept, c)
			continue // this engine's pool or one-shot run
		}
		if kind != kindSandbox || id == "" || !known(id) {
			b.log.Info("Removing a senclaw container no sandbox owns.", "container", strings.TrimPrefix(firstName(c.Names), "/"), "sandbox", id, "kind", kind)
			if err := b.removeContainer(ctx, cli, c.ID); err != nil {
				errs = append(errs, err)
				kept = append(kept, c)
			}
			continue
		}
		kept = append(kept, c)
		errs = append(errs, b.adopt(ctx, cli, id, c))
	}
	b.cleanPoolDir(kept)
	return errors.Join(errs...)
}

// adopt takes over a known sandbox's container.
func (b *Backend) adopt(ctx context.Context, cli *apiClient, sandboxID string, c container.Summary) error {
	st := b.state(sandboxID)
	// What was known of it may be stale (a daemon that restarted stopped
	// it): the next run looks again.
	if st.mu.TryLock() {
		st.ready = nil
		st.mu.Unlock()
	}
	b.mu.Lock()
	if st.lastUsed.IsZero() {
		// Its idle time counts from now: the previous engine's is unknown.
		st.lastUsed = b.now()
	}
	// Runs this backend has going there are this engine's own (an engine
	// elsewhere is reconciled again whenever it answers after a silence):
	// they are not a previous engine's leftovers.
	ours := st.running > 0
	b.mu.Unlock()
	if c.State != "running" || ours {
		return nil
	}
	ins, err := inspectContainer(ctx, cli, c.ID)
	if err != nil {
		return b.daemonErr("inspecting an adopted container", err)
	}
	if b.idle(ctx, cli, &sandboxState{}, ins) {
		return nil
	}
	b.log.Info("Restarting an adopted container: runs of the previous engine were still going.", "sandbox", sandboxID)
	rctx, cancel := callCtx(ctx, callTimeout)
	defer cancel()
	_, err = cli.ContainerRestart(rctx, c.ID, restartNow)
	return b.daemonErr("restarting an adopted container", err)
}

// ours reports whether a container was made by this Backend (after New).
// The label has nanoseconds: an engine restarted within the second its
// predecessor made a container must still see that one as not its own.
func (b *Backend) ours(labels map[string]string) bool {
	t, err := time.Parse(time.RFC3339Nano, labels[labelCreated])
	return err == nil && !t.Before(b.started)
}

// cleanPoolDir removes pooled workspaces of earlier engines whose
// container is gone (list: the containers that are left), their tmpfs
// first.
func (b *Backend) cleanPoolDir(list []container.Summary) {
	if b.opts.PoolDir == "" {
		return
	}
	live := map[string]bool{}
	for _, c := range list {
		live[strings.TrimPrefix(firstName(c.Names), "/")] = true
	}
	b.pool.mu.Lock()
	for _, l := range b.pool.idle {
		for _, c := range l {
			live[filepath.Base(c.dir)] = true
		}
	}
	b.pool.mu.Unlock()
	entries, _ := os.ReadDir(b.opts.PoolDir)
	for _, e := range entries {
		info, err := e.Info()
		if err == nil && strings.HasPrefix(e.Name(), "senclaw-pool-") && !live[e.Name()] && info.ModTime().Before(b.startedWall) {
			releasePoolDir(filepath.Join(b.opts.PoolDir, e.Name()))
		}
	}
}

func firstName(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// Stray is a container of this engine that Reconcile would remove: one of
// a sandbox known does not know, or an earlier engine's pool or one-shot
// container.
type Stray struct {
	ID, Name, Kind, SandboxID string
}

// Strays lists this engine's containers that no sandbox and no run of
// this Backend owns (for senclaw doctor).
func (b *Backend) Strays(ctx context.Context, known func(sandboxID string) bool) ([]Stray, error) {
	cli, err := b.client()
	if err != nil {
		return nil, err
	}
	list, err := b.listOurs(ctx, cli)
	if err != nil {
		return nil, err
	}
	var out []Stray
	for _, c := range list {
		id, kind := c.Labels[labelSandbox], c.Labels[labelKind]
		if kind == kindSandbox && id != "" && known(id) || kind != kindSandbox && b.ours(c.Labels) {
			continue
		}
		out = append(out, Stray{ID: c.ID, Name: strings.TrimPrefix(firstName(c.Names), "/"), Kind: kind, SandboxID: id})
	}
	return out, nil
}

// RemoveStray removes a container Strays listed.
func (b *Backend) RemoveStray(ctx context.Context, s Stray) error {
	cli, err := b.client()
	if err != nil {
		return err
	}
	return b.removeContainer(ctx, cli, s.ID)
}
