package docker

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
)

// BenchmarkRemoteExec_vsRawExec is BenchmarkExec_vsRawExec against the
// second daemon (a remote engine over TLS on loopback): a run of `true`
// in a running sandbox there through the backend, against a bare API
// exec in the same container.
//
//	go test ./backends/docker -run '^$' -bench RemoteExec -benchtime 30x
func BenchmarkRemoteExec_vsRawExec(b *testing.B) {
	be, r := newRemoteBackend(b)
	ctx := context.Background()
	spec := newRemoteSpec(b, be, "true")
	first := run(b, be, spec)
	id := first.proc.ref.ID
	// The official client alone, as a caller of the API would use it.
	cli, err := client.New(client.WithHost(r.Host), client.WithTLSClientConfig(r.CACert, r.Cert, r.Key), client.WithAPIVersion("1.41"))
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
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
		created, err := cli.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: []string{"true"}, User: "65534:65534", AttachStdout: true, AttachStderr: true})
		if err != nil {
			b.Fatal(err)
		}
		hj, err := cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
		if err != nil {
			b.Fatal(err)
		}
		_, _ = stdcopy.StdCopy(io.Discard, io.Discard, hj.Reader)
		hj.Close()
		if ins, err := cli.ExecInspect(ctx, created.ID, client.ExecInspectOptions{}); err != nil || ins.ExitCode != 0 {
			b.Fatalf("raw exec: %+v %v", ins, err)
		}
		raw += time.Since(start)
	}
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			viaBackend()
			viaAPI()
		} else {
			viaAPI()
			viaBackend()
		}
	}
	report(b, "remote-exec", ours, raw)
}
