package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/netfwd"
	"github.com/senclaw/sandbox/backends/netfwd/remotefs"
)

// A Docker engine on another machine (the settings' named engines, or a
// tcp:// daemon that is not this machine's) cannot see this machine's
// disk, so nothing of it is bound into a container there:
//
//   - the workspace is a named volume per sandbox (a tmpfs of the quota
//     for a one-shot), labelled like the container; its root is given to
//     the sandbox user through a short-lived init container, the one way
//     the archive API can set it;
//   - a host folder mount is refused, or copied once into a volume of its
//     own when asked (Mount.Copy), mounted read-only when the mount is;
//   - /run is a volume of the container's own, into which the forwarder
//     and the Node preload are copied through the archive API before it
//     starts; the forwarder wraps every run there (--reap: the run's end
//     is its whole tree's), relays the network over an attached exec
//     (relay.go) and serves the file API (files.go);
//   - the disk quota is the volume driver's size option where the daemon
//     has it, else the engine's watchdog counts over the API.

// Remote names a Docker engine on another machine: by a Docker context,
// or by its host and TLS material (paths on this machine).
type Remote struct {
	// Name is the engine's name in the settings.
	Name    string
	Context string
	Host    string
	CACert  string
	Cert    string
	Key     string
}

// Labels and kinds of what a daemon elsewhere keeps.
const (
	// kindInit is the short-lived container that sets up volumes.
	kindInit = "init"
	// kindWorkspace and kindMountCopy are volume kinds.
	kindWorkspace = "workspace"
	kindMountCopy = "mount"
	labelTarget   = "senclaw.target"
	// labelDisk is "size" on a workspace volume made with the driver's
	// size option, with labelDiskMB its size; "watchdog" otherwise.
	labelDisk   = "senclaw.disk"
	labelDiskMB = "senclaw.disk-mb"
	initDir     = "/senclaw-init"
	runDir      = "/run"
)

// Elsewhere reports whether this backend's daemon is on another machine
// (a named engine of the settings), so that its sandboxes keep their
// files in volumes there. The local engine's daemon, when it is found
// elsewhere (DOCKER_HOST of another machine), is refused by Probe
// instead: its sandboxes' workspaces are this machine's folders.
func (b *Backend) Elsewhere() bool { return b.opts.Remote != nil }

// EngineName is the engine's name for people: its name in the settings,
// or "local".
func (b *Backend) EngineName() string {
	if b.opts.Remote != nil {
		return b.opts.Remote.Name
	}
	return "local"
}

// where names the engine in messages: "engine big (tcp://...)".
func (b *Backend) where() string {
	host := b.ep.Host
	if host == "" && b.opts.Remote != nil {
		host = b.opts.Remote.Host
	}
	if b.opts.Remote == nil {
		return "the docker daemon at " + host
	}
	if host == "" {
		return "engine " + b.opts.Remote.Name
	}
	return "engine " + b.opts.Remote.Name + " (" + host + ")"
}

func workVolume(sandboxID string) string { return "senclaw-" + sandboxID + "-work" }

func mountVolume(sandboxID, target string) string {
	sum := sha256.Sum256([]byte(target))
	return "senclaw-" + sandboxID + "-m-" + hex.EncodeToString(sum[:6])
}

// remoteShape makes s the shape of a container on a daemon elsewhere.
func (b *Backend) remoteShape(s *shape, spec *backends.Spec) error {
	digest, err := b.forwarderDigest()
	if err != nil {
		return err
	}
	return elsewhereShape(s, spec, digest, b.where())
}

// elsewhereShape is remoteShape's pure part: the forwarder's digest and
// the engine's name for messages are given.
func elsewhereShape(s *shape, spec *backends.Spec, digest, where string) error {
	s.Remote, s.Helper = true, digest
	s.NetDir, s.Forwarder, s.WorkspaceFS = "", "", ""
	if len(s.Protected) > 0 {
		return fmt.Errorf("refused: %s cannot keep this machine's files read-only in a container there (it binds nothing of this machine)", where)
	}
	if !spec.OneShot {
		s.Volume = workVolume(spec.SandboxID)
	}
	for i := range s.Mounts {
		m := &s.Mounts[i]
		switch {
		case !m.copy:
			return fmt.Errorf("refused: the mount of %s at %s cannot be bound on %s, a Docker engine on another machine, where no folder of this machine exists; ask for a copy made once (copy: true), or drop the mount", m.Source, m.Target, where)
		case spec.OneShot:
			return fmt.Errorf("refused: a one-shot run on %s cannot take a copy of %s; create a sandbox there with the mount (copy: true) and run in it", where, m.Source)
		}
		m.Volume = mountVolume(spec.SandboxID, m.Target)
	}
	return nil
}

// forwarderDigest is the digest of the forwarder copied into containers
// elsewhere (part of their shape: a new forwarder makes them "needs
// recreate"), read once per version of the file.
func (b *Backend) forwarderDigest() (string, error) {
	path := b.opts.Forwarder
	if path == "" {
		return "", fmt.Errorf("refused: %s is a Docker engine on another machine, where SenClaw copies its forwarder senclaw-netfwd into each container (it wraps each run, relays the network and serves the file API there), and no forwarder was found next to the senclaw executable or on PATH; build it with `make build`", b.where())
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("the forwarder %s: %w", path, err)
	}
	b.fwdMu.Lock()
	defer b.fwdMu.Unlock()
	key := fmt.Sprintf("%s\x00%d\x00%d", path, fi.Size(), fi.ModTime().UnixNano())
	if b.fwdKey == key {
		return b.fwdDigest, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("the forwarder %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading the forwarder %s: %w", path, err)
	}
	b.fwdKey, b.fwdDigest = key, hex.EncodeToString(h.Sum(nil)[:8])
	return b.fwdDigest, nil
}

// forwarderState is what the backend remembers of its forwarder file.
type forwarderState struct {
	fwdMu     sync.Mutex
	fwdKey    string
	fwdDigest string
}

// checkPlatform refuses a daemon the forwarder cannot run on.
func (b *Backend) checkPlatform() error {
	b.mu.Lock()
	osArch := b.daemonPlatform
	b.mu.Unlock()
	if osArch == "" {
		return nil // not probed yet: the start says what fails
	}
	if want := "linux/" + runtime.GOARCH; osArch != want {
		return fmt.Errorf("refused: %s runs %s containers, and this machine's forwarder senclaw-netfwd is built for %s; build one for it (GOARCH=%s make netfwd) or use an engine of this machine's kind", b.where(), osArch, want, strings.TrimPrefix(osArch, "linux/"))
	}
	return nil
}

// remoteLabels are the labels of a volume of sandboxID.
func (b *Backend) remoteLabels(kind, sandboxID string) map[string]string {
	return map[string]string{
		labelOwner:   b.opts.Owner,
		labelKind:    kind,
		labelSandbox: sandboxID,
		labelCreated: b.now().UTC().Format(time.RFC3339Nano),
	}
}

// prepareVolumes makes sure the volumes of s are there before its
// container is made: the workspace's (made at its first container, with
// the driver's size option when the daemon has it) and the mounts'
// copies (made when the mount was, FillMount); the workspace's root is
// given to the sandbox user each time (the user may have changed).
func (b *Backend) prepareVolumes(ctx context.Context, cli *apiClient, s shape) error {
	for _, m := range s.Mounts {
		v, err := cli.VolumeInspect(ctx, m.Volume, client.VolumeInspectOptions{})
		switch {
		case cerrdefs.IsNotFound(err):
			return fmt.Errorf("refused: the copy of %s at %s (volume %s) is gone from %s; remove the mount and add it again to copy the folder anew", m.Source, m.Target, m.Volume, b.where())
		case err != nil:
			return b.daemonErr("looking up the copy of "+m.Source, err)
		case v.Volume.Labels[labelOwner] != b.opts.Owner:
			return fmt.Errorf("refused: the volume %s on %s belongs to another SenClaw engine (owner %q)", m.Volume, b.where(), v.Volume.Labels[labelOwner])
		}
	}
	if s.Volume == "" {
		return nil
	}
	v, err := cli.VolumeInspect(ctx, s.Volume, client.VolumeInspectOptions{})
	switch {
	case cerrdefs.IsNotFound(err):
		if err := b.createWorkVolume(ctx, cli, s); err != nil {
			return err
		}
		b.disks.Delete(s.sandboxID)
	case err != nil:
		return b.daemonErr("looking up the workspace volume", err)
	case v.Volume.Labels[labelOwner] != b.opts.Owner:
		return fmt.Errorf("refused: the workspace volume %s on %s belongs to another SenClaw engine (owner %q, this one is %q); remove it with `docker volume rm %s` there if that engine is gone", s.Volume, b.where(), v.Volume.Labels[labelOwner], b.opts.Owner, s.Volume)
	default:
		b.disks.Store(s.sandboxID, volumeDisk(v.Volume.Labels))
	}
	uid, gid, ok := parseUser(s.User)
	if !ok {
		return fmt.Errorf("the container user %q is not uid:gid", s.User)
	}
	return b.initVolumes(ctx, cli, s.Image, map[string]string{"work": s.Volume}, func(tw *tar.Writer) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "work/", Mode: 0o700, Uid: uid, Gid: gid, ModTime: time.Now()})
	})
}

// createWorkVolume makes the workspace volume of s, with the quota as
// the driver's size option when the daemon's driver takes it.
func (b *Backend) createWorkVolume(ctx context.Context, cli *apiClient, s shape) error {
	labels := b.remoteLabels(kindWorkspace, s.sandboxID)
	labels[labelDisk] = "watchdog"
	opts := client.VolumeCreateOptions{Name: s.Volume, Driver: "local", Labels: labels}
	if s.DiskMB > 0 {
		sized := opts
		sized.Labels = map[string]string{}
		for k, v := range labels {
			sized.Labels[k] = v
		}
		sized.Labels[labelDisk], sized.Labels[labelDiskMB] = "size", strconv.Itoa(s.DiskMB)
		sized.DriverOpts = map[string]string{"size": strconv.Itoa(s.DiskMB) + "m"}
		_, err := cli.VolumeCreate(ctx, sized)
		if err == nil {
			return nil
		}
		// Most daemons' local driver has no size (it needs project
		// quotas on the data root): the watchdog counts instead.
		b.log.Info("The engine's volume driver takes no size; the watchdog keeps the quota.", "engine", b.EngineName(), "err", err)
	}
	if _, err := cli.VolumeCreate(ctx, opts); err != nil {
		return b.daemonErr("making the workspace volume "+s.Volume, err)
	}
	return nil
}

// initVolumes sets volumes up through a container made for that alone
// and never started: vols are mounted under initDir (name -> volume),
// and the tar that write makes is extracted there by the daemon. The
// archive API skips the metadata of its destination itself, so a
// volume's root is set through its entry one level up.
func (b *Backend) initVolumes(ctx context.Context, cli *apiClient, image string, vols map[string]string, write func(*tar.Writer) error) error {
	var ms []mount.Mount
	for name, v := range vols {
		ms = append(ms, mount.Mount{Type: mount.TypeVolume, Source: v, Target: initDir + "/" + name, VolumeOptions: &mount.VolumeOptions{NoCopy: true}})
	}
	cfg := &container.Config{
		Image:      image,
		Entrypoint: []string{"/bin/true"},
		Labels:     map[string]string{labelOwner: b.opts.Owner, labelKind: kindInit, labelCreated: b.now().UTC().Format(time.RFC3339Nano)},
	}
	host := &container.HostConfig{NetworkMode: "none", LogConfig: container.LogConfig{Type: "none"}, Mounts: ms, CapDrop: []string{"ALL"}}
	cctx, cancel := callCtx(ctx, createTimeout)
	defer cancel()
	created, err := cli.ContainerCreate(cctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host})
	if err != nil {
		return b.daemonErr("making the container that sets up the volumes", err)
	}
	defer func() { _ = b.removeContainer(context.WithoutCancel(ctx), cli, created.ID) }()
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := write(tw)
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	_, err = cli.CopyToContainer(cctx, created.ID, client.CopyToContainerOptions{DestinationPath: initDir, Content: pr})
	pr.CloseWithError(errors.New("the copy ended"))
	if err != nil {
		return b.daemonErr("copying into the volumes", err)
	}
	return nil
}

// FillMount copies a host folder into the volume of its mount in spec's
// sandbox (Mount.Copy), once: write puts the folder's entries into the
// tar, each name below prefix and owned by uid and gid (the container's
// user). A copy made before is replaced.
func (b *Backend) FillMount(ctx context.Context, spec *backends.Spec, m backends.Mount, write func(tw *tar.Writer, prefix string, uid, gid int) error) error {
	s, cli, err := b.prepare(spec)
	if err != nil {
		return err
	}
	target, err := mountTarget(m.Target)
	if err != nil {
		return err
	}
	name := mountVolume(spec.SandboxID, target)
	rctx, cancel := callCtx(ctx, callTimeout)
	_, err = cli.VolumeRemove(rctx, name, client.VolumeRemoveOptions{})
	cancel()
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("the earlier copy at %s cannot be replaced while the sandbox's container uses it (%v); recreate the sandbox, then copy again", target, cleanMessage(err.Error()))
	}
	labels := b.remoteLabels(kindMountCopy, spec.SandboxID)
	labels[labelTarget] = target
	if _, err := cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Driver: "local", Labels: labels}); err != nil {
		return b.daemonErr("making the volume for the copy of "+m.Source, err)
	}
	uid, gid, ok := parseUser(s.User)
	if !ok {
		return fmt.Errorf("the container user %q is not uid:gid", s.User)
	}
	err = b.initVolumes(ctx, cli, s.Image, map[string]string{"m": name}, func(tw *tar.Writer) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "m/", Mode: 0o755, Uid: uid, Gid: gid, ModTime: time.Now()}); err != nil {
			return err
		}
		return write(tw, "m/", uid, gid)
	})
	if err != nil {
		rctx, cancel := callCtx(context.WithoutCancel(ctx), callTimeout)
		_, _ = cli.VolumeRemove(rctx, name, client.VolumeRemoveOptions{Force: true})
		cancel()
		return fmt.Errorf("copying %s to %s: %w", m.Source, b.where(), err)
	}
	return nil
}

// plumbIn copies the forwarder and the Node preload into a made, not yet
// started, container elsewhere: /run is a volume of its own, the
// forwarder root's, the plumbing directory the sandbox user's.
func (b *Backend) plumbIn(ctx context.Context, cli *apiClient, id string, s shape) error {
	uid, gid, ok := parseUser(s.User)
	if !ok {
		return fmt.Errorf("the container user %q is not uid:gid", s.User)
	}
	fwd, err := os.Open(b.opts.Forwarder)
	if err != nil {
		return fmt.Errorf("opening the forwarder: %w", err)
	}
	defer fwd.Close()
	fi, err := fwd.Stat()
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		now := time.Now()
		err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(netfwd.BinaryPath, runDir+"/"), Mode: 0o555, Size: fi.Size(), ModTime: now})
		if err == nil {
			_, err = io.Copy(tw, io.LimitReader(fwd, fi.Size()))
		}
		dir := strings.TrimPrefix(netfwd.MountDir, runDir+"/")
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o700, Uid: uid, Gid: gid, ModTime: now})
		}
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: dir + "/" + netfwd.NodePreload, Mode: 0o644, Size: int64(len(netfwd.NodePreloadSource)), ModTime: now})
		}
		if err == nil {
			_, err = io.WriteString(tw, netfwd.NodePreloadSource)
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	cctx, cancel := callCtx(ctx, createTimeout)
	defer cancel()
	_, err = cli.CopyToContainer(cctx, id, client.CopyToContainerOptions{DestinationPath: runDir, Content: pr})
	pr.CloseWithError(errors.New("the copy ended"))
	if err != nil {
		return b.daemonErr("copying the forwarder into the container", err)
	}
	return nil
}

// Purge removes the volumes of a sandbox elsewhere (its workspace and
// its mounts' copies): the files that live there.
func (b *Backend) Purge(ctx context.Context, sandboxID string) error {
	cli, err := b.clientFor(sandboxID)
	if err != nil {
		return err
	}
	lctx, cancel := callCtx(ctx, callTimeout)
	defer cancel()
	list, err := cli.VolumeList(lctx, client.VolumeListOptions{Filters: make(client.Filters).Add("label", labelOwner+"="+b.opts.Owner).Add("label", labelSandbox+"="+sandboxID)})
	if err != nil {
		return b.daemonErr("listing the sandbox's volumes", err)
	}
	b.disks.Delete(sandboxID)
	var errs []error
	for _, v := range list.Items {
		if _, err := cli.VolumeRemove(lctx, v.Name, client.VolumeRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, b.daemonErr("removing the volume "+v.Name, err))
		}
	}
	return errors.Join(errs...)
}

// HardDisk reports whether spec's workspace elsewhere is held to its
// quota by its filesystem (a one-shot's tmpfs, a volume made with the
// driver's size option of the quota), so that the engine's watchdog is
// not needed.
func (b *Backend) HardDisk(ctx context.Context, spec *backends.Spec) (bool, error) {
	if spec.OneShot {
		return true, nil
	}
	if d, ok := b.disks.Load(spec.SandboxID); ok {
		// (A volume's labels never change: what was read holds.)
		return d.(diskLabel).holds(spec.Limits.DiskMB), nil
	}
	cli, err := b.clientFor(spec.SandboxID)
	if err != nil {
		return false, err
	}
	v, err := cli.VolumeInspect(ctx, workVolume(spec.SandboxID), client.VolumeInspectOptions{})
	if err != nil {
		return false, b.daemonErr("looking up the workspace volume", err)
	}
	d := volumeDisk(v.Volume.Labels)
	b.disks.Store(spec.SandboxID, d)
	return d.holds(spec.Limits.DiskMB), nil
}

// diskLabel is what a workspace volume's labels say of its size.
type diskLabel struct {
	sized bool
	mb    string
}

func volumeDisk(labels map[string]string) diskLabel {
	return diskLabel{sized: labels[labelDisk] == "size", mb: labels[labelDiskMB]}
}

// holds reports whether the volume is of a size option of mb.
func (d diskLabel) holds(mb int) bool { return d.sized && d.mb == strconv.Itoa(mb) }

// remoteMounts are the mounts of a container elsewhere.
func remoteMounts(s shape) []mount.Mount {
	var ms []mount.Mount
	if s.Volume != "" {
		ms = append(ms, mount.Mount{Type: mount.TypeVolume, Source: s.Volume, Target: workDir, VolumeOptions: &mount.VolumeOptions{NoCopy: true}})
	}
	// /run: the container's own volume (removed with it), which the
	// forwarder is copied into.
	ms = append(ms, mount.Mount{Type: mount.TypeVolume, Target: runDir})
	for _, m := range s.Mounts {
		ms = append(ms, mount.Mount{Type: mount.TypeVolume, Source: m.Volume, Target: workDir + "/" + m.Target, ReadOnly: m.ReadOnly, VolumeOptions: &mount.VolumeOptions{NoCopy: true}})
	}
	return append(ms, maskMounts(s.Masked)...)
}

// oneShotWork is the tmpfs workspace of a one-shot elsewhere: the
// sandbox user's, of the quota's size.
func oneShotWork(s shape) string {
	opts := "rw,nosuid,nodev,mode=0700"
	if uid, gid, ok := parseUser(s.User); ok {
		opts += fmt.Sprintf(",uid=%d,gid=%d", uid, gid)
	}
	if s.DiskMB > 0 {
		opts += fmt.Sprintf(",size=%dm", s.DiskMB)
	}
	return opts
}

// remoteBefore readies a run in ref's container elsewhere: the relay
// of its network, when it has one, and the files the engine gives it
// (Spec.Files). release lets go of the relay once the run is over.
func (b *Backend) remoteBefore(ctx context.Context, cli *apiClient, ref *ctrRef, spec *backends.Spec, s shape) (release func(), err error) {
	release = func() {}
	if len(spec.Files) > 0 {
		fs := &remotefs.Client{Binary: netfwd.BinaryPath, Root: workDir, Exec: func(ctx context.Context, argv []string, stdin io.Reader, stdout io.Writer) (string, int, error) {
			return b.execHelper(ctx, cli, ref, s.User, argv, stdin, stdout)
		}}
		for _, f := range spec.Files {
			var err error
			if strings.HasSuffix(f.Path, "/") {
				err = fs.Mkdir(ctx, strings.TrimSuffix(f.Path, "/"))
			} else {
				_, err = fs.Write(ctx, f.Path, bytes.NewReader(f.Data))
			}
			if err != nil {
				return nil, fmt.Errorf("writing %s into the workspace on %s: %w", f.Path, b.where(), err)
			}
		}
	}
	if spec.Net != nil {
		return b.acquireRelay(ctx, cli, ref, spec.SandboxID, s.User, spec.Net)
	}
	return release, nil
}

// remoteName is the named engine's name, "" for the local one.
func (b *Backend) remoteName() string {
	if b.opts.Remote != nil {
		return b.opts.Remote.Name
	}
	return ""
}

// CheckEndpoint resolves where the daemon is without contacting it: an
// engine of the settings that names a context which is gone, skips TLS
// verification, or speaks ssh is refused when it is saved.
func (b *Backend) CheckEndpoint() error {
	_, err := resolveEndpoint(b.opts)
	return err
}
