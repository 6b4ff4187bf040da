package app

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/senclaw/sandbox/internal/testutil"
)

// TestBenchRemoteDocker measures, in one run against the second Docker
// daemon (TLS over loopback, standing in for another machine): a run of
// `true` in a running remote sandbox through the engine against a raw
// API exec in the same container (create, attach, read to the end,
// inspect; target at most 1.2x), and a 50 MiB file written through the
// file API against a raw CopyToContainer of the same file (target at
// least half its throughput). Run it with `make bench`.
func TestBenchRemoteDocker(t *testing.T) {
	if os.Getenv("SENCLAW_BENCH") == "" {
		t.Skip("set SENCLAW_BENCH=1 (make bench)")
	}
	r := testutil.Remote(t)
	e := remoteEngine(t, r)
	sb := newRemoteSandbox(t, e, SandboxConfig{DiskMB: ptr(1024)})
	ctx := context.Background()
	remoteSh(t, e, sb.ID, "true") // the container runs
	cli, err := client.New(client.WithHost(r.Host), client.WithTLSClientConfig(r.CACert, r.Cert, r.Key), client.WithAPIVersion("1.41"))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	id := "senclaw-" + sb.ID

	runEngine := func() error {
		res, err := e.Exec(ctx, sb.ID, RunRequest{Argv: []string{"true"}})
		if err == nil && !res.Record.OK() {
			err = fmt.Errorf("run failed: %+v", res.Record)
		}
		return err
	}
	runRaw := func() error {
		created, err := cli.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: []string{"true"}, User: "65534:65534", AttachStdout: true, AttachStderr: true})
		if err != nil {
			return err
		}
		hj, err := cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
		if err != nil {
			return err
		}
		_, _ = stdcopy.StdCopy(io.Discard, io.Discard, hj.Reader)
		hj.Close()
		ins, err := cli.ExecInspect(ctx, created.ID, client.ExecInspectOptions{})
		if err == nil && ins.ExitCode != 0 {
			err = fmt.Errorf("raw exec: exit %d", ins.ExitCode)
		}
		return err
	}
	const n = 40
	var tRaw, tEngine []time.Duration
	for i := 0; i < n+5; i++ {
		// Alternate the order so neither pays for the other's clean-up.
		steps := []struct {
			f   func() error
			out *[]time.Duration
		}{{runRaw, &tRaw}, {runEngine, &tEngine}}
		if i%2 == 1 {
			steps[0], steps[1] = steps[1], steps[0]
		}
		for _, m := range steps {
			start := time.Now()
			if err := m.f(); err != nil {
				t.Fatal(err)
			}
			if i >= 5 {
				*m.out = append(*m.out, time.Since(start))
			}
		}
	}
	mr, me := median(tRaw), median(tEngine)
	t.Logf("raw API exec of true (TLS, loopback):  median %v", mr)
	t.Logf("engine, remote persistent sandbox:     median %v  ratio %.2fx (target <= 1.20x)", me, float64(me)/float64(mr))

	data := make([]byte, 50<<20)
	_, _ = rand.Read(data)
	var archive bytes.Buffer
	tw := tar.NewWriter(&archive)
	_ = tw.WriteHeader(&tar.Header{Name: "raw.bin", Mode: 0o644, Size: int64(len(data)), Uid: 65534, Gid: 65534})
	_, _ = tw.Write(data)
	_ = tw.Close()
	writeEngine := func() error {
		_, err := e.WriteFile(sb.ID, "big.bin", data)
		return err
	}
	writeRaw := func() error {
		_, err := cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: "/work", Content: bytes.NewReader(archive.Bytes())})
		return err
	}
	var wRaw, wEngine []time.Duration
	for i := 0; i < 7; i++ {
		for _, m := range []struct {
			f   func() error
			out *[]time.Duration
		}{{writeRaw, &wRaw}, {writeEngine, &wEngine}} {
			start := time.Now()
			if err := m.f(); err != nil {
				t.Fatal(err)
			}
			if i >= 2 {
				*m.out = append(*m.out, time.Since(start))
			}
		}
	}
	mbps := func(d time.Duration) float64 { return 50 / d.Seconds() }
	wr, we := median(wRaw), median(wEngine)
	t.Logf("raw CopyToContainer, 50 MiB:           median %v  %.0f MiB/s", wr, mbps(wr))
	t.Logf("engine file API write, 50 MiB:         median %v  %.0f MiB/s  %.2fx of raw (target >= 0.50x)", we, mbps(we), mbps(we)/mbps(wr))
	if fc, err := e.Files(sb.ID, "."); err != nil || len(fc) == 0 {
		t.Fatalf("listing after the writes: %v", err)
	}
	fmt.Printf("BENCH remote-docker exec raw=%v engine=%v ratio=%.2f write50MiB raw=%.0fMiB/s engine=%.0fMiB/s share=%.2f\n",
		mr, me, float64(me)/float64(mr), mbps(wr), mbps(we), mbps(we)/mbps(wr))
}
