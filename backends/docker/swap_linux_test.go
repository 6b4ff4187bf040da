package docker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestAStoppedContainerStartsOnlyOnTheCheckedSources: a sandbox's
// container, stopped (by the person, or as idle), is started again by
// the Docker daemon, which binds its mounts' sources by path then,
// following links. Code that may write above a read-only mount's source
// (another sandbox with that folder read-write) swaps the source for a
// link to the second user's secret folder, left readable, which no mount
// may be given; the next run must start nothing rather than bind it.
func TestAStoppedContainerStartsOnlyOnTheCheckedSources(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	other := testutil.SecondUser(t)
	secret := filepath.Join(other.Home, ".aws-"+randomHex(3))
	other.Run(t, "mkdir", "-m", "0755", secret)
	t.Cleanup(func() { os.RemoveAll(secret) })
	other.Run(t, "sh", "-c", "echo OTHER-USERS-KEY > "+secret+"/credentials && chmod 0644 "+secret+"/credentials")

	b := newTestBackend(t, nil)
	spec := newSpec(t, b)
	src := filepath.Join(testBase(t), "ref")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "README"), []byte("the folder given\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec.Mounts = []backends.Mount{{Source: src, Target: "ref", ReadOnly: true}}
	if r := run(t, b, spec, "cat", "ref/README"); !strings.Contains(r.stdout, "the folder given") {
		t.Fatalf("the first run: %+v", r)
	}
	if err := b.StopSandbox(context.Background(), spec.SandboxID); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(src); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, src); err != nil {
		t.Fatal(err)
	}

	s := *spec
	s.RunID, s.Argv = "r"+randomHex(3), []string{"cat", "ref/credentials"}
	var out, errOut testutil.SyncBuffer
	s.Stdout, s.Stderr = &out, &errOut
	p, err := b.Start(context.Background(), &s)
	if err == nil {
		p.Wait()
		t.Fatalf("the container started again on the swapped source: %q %q", out.String(), errOut.String())
	}
	if !strings.Contains(err.Error(), "now leads to "+secret) {
		t.Errorf("the refusal does not say where the source leads now: %v", err)
	}
	if strings.Contains(out.String(), "OTHER-USERS-KEY") {
		t.Errorf("the sandbox read %s's secret", other.Name)
	}
}

// TestASourceSwappedWhileTheContainerStartsIsNeverBound: code that may
// write above a read-only mount's source swaps it for a link to the
// second user's readable secret folder and back, again and again, while
// sandboxes' containers are made: the daemon binds by path a moment
// after the engine checked it. No run may read the secret: a container
// bound to anything but the checked folder is removed before it runs.
func TestASourceSwappedWhileTheContainerStartsIsNeverBound(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	other := testutil.SecondUser(t)
	secret := filepath.Join(other.Home, ".aws-"+randomHex(3))
	other.Run(t, "mkdir", "-m", "0755", secret)
	t.Cleanup(func() { os.RemoveAll(secret) })
	other.Run(t, "sh", "-c", "echo OTHER-USERS-KEY > "+secret+"/credentials && chmod 0644 "+secret+"/credentials")

	b := newTestBackend(t, nil)
	base := testBase(t)
	src, aside := filepath.Join(base, "ref"), filepath.Join(base, "ref.aside")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	swapped := make(chan int)
	go func() {
		n := 0
		defer func() { swapped <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if os.Rename(src, aside) == nil && os.Symlink(secret, src) == nil {
				n++
				time.Sleep(200 * time.Microsecond)
				os.Remove(src)
			}
			os.Rename(aside, src)
			time.Sleep(200 * time.Microsecond)
		}
	}()
	read, refused := 0, 0
	for range 20 {
		spec := newSpec(t, b)
		spec.Mounts = []backends.Mount{{Source: src, Target: "ref", ReadOnly: true}}
		s := *spec
		s.Argv = []string{"cat", "ref/credentials"}
		var out testutil.SyncBuffer
		s.Stdout, s.Stderr = &out, &out
		p, err := b.Start(context.Background(), &s)
		if err != nil {
			refused++
			continue
		}
		p.Wait()
		if strings.Contains(out.String(), "OTHER-USERS-KEY") {
			read++
		}
	}
	close(stop)
	n := <-swapped
	t.Logf("20 starts while the source was swapped %d times: %d refused, %d read the secret", n, refused, read)
	if read > 0 {
		t.Errorf("%d of 20 runs read %s's secret through a swapped mount source", read, other.Name)
	}
}
