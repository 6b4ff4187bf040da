package docker

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// BenchmarkOneShot_vsDockerRunRm compares, in one run against the same
// image, a one-shot `true` through the backend (warm pool) with the API
// equivalent of `docker run --rm IMAGE true` (create with auto-remove,
// attach, start, wait until removed). Target: ratio <= 0.5.
//
//	go test ./backends/docker -run '^$' -bench . -benchtime 20x
func BenchmarkOneShot_vsDockerRunRm(b *testing.B) {
	requireDocker(b)
	be := newTestBackend(b, nil)
	cli := testClient(b)
	ctx := context.Background()
	spec := newSpec(b, be, "true")
	spec.OneShot = true
	var ours, raw time.Duration
	pooled := 0
	for i := 0; i < b.N; i++ {
		if err := be.Warm(ctx, spec); err != nil { // untimed: the pool refills between runs
			b.Fatal(err)
		}
		s := *spec
		s.Workspace = newWorkspace(b, testBase(b))
		before := be.pool.ready(spec)
		start := time.Now()
		p, err := be.Start(ctx, &s)
		if err != nil {
			b.Fatal(err)
		}
		if st, err := p.Wait(); err != nil || st.Code != 0 {
			b.Fatalf("one-shot true: %+v %v", st, err)
		}
		ours += time.Since(start)
		if be.pool.ready(spec) < before {
			pooled++
		}
		be.pool.bg.Wait() // the removal of the used container, untimed

		start = time.Now()
		dockerRunRm(b, ctx, cli)
		raw += time.Since(start)
	}
	if pooled != b.N {
		b.Errorf("only %d of %d one-shot runs took a pooled container", pooled, b.N)
	}
	report(b, "oneshot", ours, raw)
}

// dockerRunRm is `docker run --rm senclaw-test/busybox true` through the
// official client alone (its attach and stdcopy, as the docker CLI does).
func dockerRunRm(b *testing.B, ctx context.Context, cli *apiClient) {
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: testImage, Cmd: []string{"true"}, AttachStdout: true, AttachStderr: true},
		HostConfig: &container.HostConfig{AutoRemove: true},
	})
	if err != nil {
		b.Fatal(err)
	}
	id := created.ID
	hj, err := cli.ContainerAttach(ctx, id, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		b.Fatal(err)
	}
	defer hj.Close()
	wait := cli.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionRemoved})
	if _, err := cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		b.Fatal(err)
	}
	_, _ = stdcopy.StdCopy(io.Discard, io.Discard, hj.Reader)
	select {
	case res := <-wait.Result:
		if res.StatusCode != 0 {
			b.Fatalf("docker run --rm true: exit %d", res.StatusCode)
		}
	case err := <-wait.Error:
		b.Fatalf("docker run --rm true: %v", err)
	}
}

// BenchmarkExec_vsRawExec compares a run of `true` in a running sandbox
// through the backend with a bare API exec (create, attach, read to the
// end, inspect the exit code) in the same container. Target: ratio <= 1.0.
func BenchmarkExec_vsRawExec(b *testing.B) {
	requireDocker(b)
	be := newTestBackend(b, nil)
	cli := testClient(b)
	ctx := context.Background()
	spec := newSpec(b, be, "true")
	first := run(b, be, spec)
	id := first.proc.ref.ID
	var ours, raw time.Duration
	viaBackend := func() {
		start := time.Now()
		p, err := be.Start(ctx, spec)
		if err != nil {
			b.Fatal(err)
		}
		if st, err := p.Wait(); err != nil || st.Code != 0 {
			b.Fatalf("exec true: %+v %v", st, err)
		}
		ours += time.Since(start)
	}
	viaAPI := func() {
		start := time.Now()
		created, err := cli.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: []string{"true"}, AttachStdout: true, AttachStderr: true})
		if err != nil {
			b.Fatal(err)
		}
		execID := created.ID
		hj, err := cli.ExecAttach(ctx, execID, client.ExecAttachOptions{})
		if err != nil {
			b.Fatal(err)
		}
		_, _ = stdcopy.StdCopy(io.Discard, io.Discard, hj.Reader)
		hj.Close()
		if ins, err := cli.ExecInspect(ctx, execID, client.ExecInspectOptions{}); err != nil || ins.ExitCode != 0 {
			b.Fatalf("raw exec: %+v %v", ins, err)
		}
		raw += time.Since(start)
	}
	for i := 0; i < b.N; i++ {
		// Alternate the order so neither side pays for the other's
		// clean-up in the daemon.
		if i%2 == 0 {
			viaBackend()
			viaAPI()
		} else {
			viaAPI()
			viaBackend()
		}
	}
	report(b, "exec", ours, raw)
}

func report(b *testing.B, what string, ours, raw time.Duration) {
	n := float64(b.N)
	b.ReportMetric(float64(ours.Microseconds())/n/1000, what+"-ms")
	b.ReportMetric(float64(raw.Microseconds())/n/1000, "raw-ms")
	b.ReportMetric(float64(ours)/float64(raw), "ratio")
	b.Logf("%s: ours %.1f ms, raw %.1f ms, ratio %.2f (n=%d)", what, float64(ours.Microseconds())/n/1000, float64(raw.Microseconds())/n/1000, float64(ours)/float64(raw), b.N)
}
