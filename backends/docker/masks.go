package docker

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/senclaw/sandbox/backends"
)

// A container runs its image's programs, not the host's: with a runtime
// switched off (Spec.MaskedRuntimes), the backend finds that runtime's
// interpreters and libraries in the image, once per image and user, and
// binds /dev/null over each (and over the host's masked files that a
// mount shows). Executing such a path fails, and reading it gives
// nothing. A run whose masks cannot be found is refused.

// kindScan labels the short-lived container that lists an image's files.
const kindScan = "scan"

// scanDone ends a complete listing: without it the scan failed.
const scanDone = "senclaw-scan-done"

// scanScript lists the files of the image whose names may be a runtime's,
// each with the file its links lead to, on one filesystem (the image's).
// It needs sh, find and readlink (busybox has them).
const scanScript = `command -v find >/dev/null 2>&1 || { echo "the image has no find" >&2; exit 97; }
find / -xdev ! -type d \( -name 'python*' -o -name 'pypy*' -o -name node -o -name nodejs -o -name 'libpython*' -o -name 'libpypy*' -o -name 'libnode.so*' \) 2>/dev/null |
while IFS= read -r f; do printf '%s\t%s\n' "$f" "$(readlink -f "$f" 2>/dev/null)"; done
echo ` + scanDone

// scanTimeout bounds one scan of an image.
const scanTimeout = 2 * time.Minute

// imageScans remembers each image's runtime files, by image id and user.
type imageScans struct {
	mu    sync.Mutex
	files map[string]map[string]string // key -> container path -> runtime
}

// masksFor returns the container paths to mask for spec in a container
// of shape s: the image's files of the switched-off runtimes, and the
// host's masked files that a mount (or the workspace) shows under /work.
func (b *Backend) masksFor(spec *backends.Spec, s shape, cli *apiClient) ([]string, error) {
	if len(spec.MaskedRuntimes) == 0 && len(spec.Masked) == 0 {
		return nil, nil
	}
	var out []string
	if len(spec.MaskedRuntimes) > 0 {
		files, err := b.imageRuntimeFiles(cli, s)
		if err != nil {
			return nil, fmt.Errorf("refused: %s is switched off, and the interpreters of image %q could not be found to mask them (%v); use an image with sh, find and readlink, or turn the switch on", backends.RuntimeSwitches(spec.MaskedRuntimes), s.Image, err)
		}
		for p, rt := range files {
			if slices.Contains(spec.MaskedRuntimes, rt) {
				out = append(out, p)
			}
		}
	}
	pm := newPathMap(s)
	for _, m := range spec.Masked {
		if p := pm.translate(m); p != m {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// maskMounts binds /dev/null read-only over each masked path.
func maskMounts(masked []string) []mount.Mount {
	ms := make([]mount.Mount, 0, len(masked))
	for _, p := range masked {
		ms = append(ms, mount.Mount{Type: mount.TypeBind, Source: "/dev/null", Target: p, ReadOnly: true})
	}
	return ms
}

// imageRuntimeFiles lists the runtime files of s's image as s's user
// sees them, scanning the image the first time.
func (b *Backend) imageRuntimeFiles(cli *apiClient, s shape) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), scanTimeout)
	defer cancel()
	ins, err := cli.ImageInspect(ctx, s.Image)
	if err != nil {
		return nil, b.daemonErr("looking up image "+s.Image, err)
	}
	// Every sandbox of a root engine has a uid of its own, none of which
	// the image knows: one of them (the engine's idle one) sees what
	// each sees, and one scan serves them all.
	user := s.User
	if u := b.idleUser.Load(); u != nil && u.UID != 0 {
		user = fmt.Sprintf("%d:%d", u.UID, u.GID)
	}
	key := ins.ID + "\x00" + user
	b.scans.mu.Lock()
	files, ok := b.scans.files[key]
	b.scans.mu.Unlock()
	if ok {
		return files, nil
	}
	out, err := b.scanImage(ctx, cli, ins.ID, user)
	if err != nil {
		return nil, err
	}
	files = parseScan(out)
	b.scans.mu.Lock()
	if b.scans.files == nil {
		b.scans.files = map[string]map[string]string{}
	}
	b.scans.files[key] = files
	b.scans.mu.Unlock()
	return files, nil
}

// parseScan reads scanScript's lines: each name that belongs to a runtime
// gives itself (a file) or the file its links lead to.
func parseScan(out string) map[string]string {
	files := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		f, real, _ := strings.Cut(line, "\t")
		rt := backends.RuntimeOfFile(path.Base(f))
		if rt == "" || !path.IsAbs(f) {
			continue
		}
		if path.IsAbs(real) {
			f = real
		}
		files[path.Clean(f)] = rt
	}
	return files
}

// scanImage runs scanScript in a container of image (by id) as user: no
// network, no mounts, no capabilities, a read-only root, removed after.
func (b *Backend) scanImage(ctx context.Context, cli *apiClient, imageID, user string) (string, error) {
	prof, err := profile()
	if err != nil {
		return "", err
	}
	pids, memory := int64(64), int64(256<<20)
	cfg := &container.Config{
		Image:        imageID,
		User:         user,
		Entrypoint:   []string{"/bin/sh", "-c", scanScript},
		AttachStdout: true,
		AttachStderr: true,
		Labels:       map[string]string{labelOwner: b.opts.Owner, labelKind: kindScan, labelCreated: b.now().UTC().Format(time.RFC3339)},
	}
	host := &container.HostConfig{
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges", "seccomp=" + prof.JSON},
		Resources:      container.Resources{PidsLimit: &pids, Memory: memory, MemorySwap: memory},
	}
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host})
	if err != nil {
		return "", b.daemonErr("creating a container to list the image's interpreters", err)
	}
	id := created.ID
	defer func() { _ = b.removeContainer(context.WithoutCancel(ctx), cli, id) }()
	att, err := cli.attach(ctx, id)
	if err != nil {
		return "", b.daemonErr("attaching to the scan container", err)
	}
	defer att.Close()
	var stdout, stderr bytes.Buffer
	copied := make(chan error, 1)
	go func() {
		// The listing of one image's names is small; bound it anyway.
		_, err := demux(&limitedBuffer{&stdout, 4 << 20}, &limitedBuffer{&stderr, 64 << 10}, att.Reader)
		copied <- err
	}()
	if _, err := cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		return "", b.daemonErr("starting the scan container", err)
	}
	select {
	case <-copied:
	case <-ctx.Done():
		return "", fmt.Errorf("the scan took longer than %s", scanTimeout)
	}
	var code int64
	wait := cli.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case res := <-wait.Result:
		if res.Error != nil && res.Error.Message != "" {
			err = fmt.Errorf("waiting for the container: %s", cleanMessage(res.Error.Message))
		}
		code = res.StatusCode
	case err = <-wait.Error:
	}
	if err != nil {
		return "", b.daemonErr("waiting for the scan container", err)
	}
	if code != 0 {
		return "", fmt.Errorf("the scan exited with %d: %s", code, strings.TrimSpace(stderr.String()))
	}
	out := stdout.String()
	if !strings.HasSuffix(out, scanDone+"\n") {
		return "", fmt.Errorf("the scan did not finish: %s", strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// limitedBuffer keeps the first max bytes written to it and drops the
// rest (a scan's output is the image's file names).
type limitedBuffer struct {
	b   *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
