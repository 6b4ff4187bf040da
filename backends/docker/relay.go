package docker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/moby/moby/client"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/netfwd"
	"github.com/senclaw/sandbox/backends/netfwd/mux"
	"github.com/senclaw/sandbox/backends/netfwd/remotefs"
)

// A container on a daemon elsewhere has no network and nothing of this
// machine bound in, so its way to the engine's proxy is the relay: an
// exec of the forwarder (netfwd.RelayArg) attached to its stdin and
// stdout, over which each connection to the proxy socket inside comes to
// the engine as a stream (backends/netfwd/mux), and each connection to
// 127.0.0.1:P on this machine goes to the run's listen socket inside.
// Egress so still leaves only through the engine's proxy and its rules:
// the remote machine's network is never the sandbox's. One relay serves
// a container while runs with network go in it; the engine's CA bundle
// (NetPlumbing.CABundle), which no bind can bring there, is written into
// the plumbing folder for its runs.

// relayReadyTimeout bounds the wait for a new relay's hello.
const relayReadyTimeout = 15 * time.Second

// relays are the live relays by container id.
type relays struct {
	mu        sync.Mutex
	byID      map[string]*relay
	bySandbox map[string]*relay
}

type relay struct {
	// mu is held while the relay starts; refs, sess and hj are set then.
	mu    sync.Mutex
	refs  int
	sess  *mux.Session
	hj    *hijacked
	alive bool
	// bundle is the digest of the CA bundle written for the runs of this
	// relay ("" until one is): a run joining it with the same bundle
	// writes nothing, so that no file a run going reads is rewritten.
	bundle string
}

// acquireRelay makes sure ref's container has a live relay whose proxy
// streams go to plumb.Serve, with plumb.CABundle in its place, and counts
// a run on it; release ends the relay after the last run.
func (b *Backend) acquireRelay(ctx context.Context, cli *apiClient, ref *ctrRef, sandboxID, user string, plumb *backends.NetPlumbing) (release func(), err error) {
	serve := plumb.Serve
	if serve == nil {
		return nil, errors.New("the engine gave no proxy for the sandbox's network")
	}
	rs := &b.relays
	rs.mu.Lock()
	if rs.byID == nil {
		rs.byID, rs.bySandbox = map[string]*relay{}, map[string]*relay{}
	}
	r := rs.byID[ref.ID]
	if r == nil {
		r = &relay{}
		rs.byID[ref.ID] = r
	}
	rs.bySandbox[sandboxID] = r
	rs.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sess != nil && !r.alive {
		r.sess, r.hj = nil, nil
	}
	if r.sess == nil {
		r.bundle = "" // written again for a new relay: the sandbox may have changed it
	}
	if err := b.writeBundle(ctx, cli, ref, user, r, plumb.CABundle); err != nil {
		return nil, err
	}
	if r.sess == nil {
		if err := b.startRelay(ctx, cli, ref, user, r, serve); err != nil {
			return nil, err
		}
	}
	r.refs++
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.refs--
			if r.refs > 0 {
				return
			}
			if r.sess != nil {
				r.sess.Close()
				r.hj.Close()
				r.sess, r.hj, r.alive = nil, nil, false
			}
			rs.mu.Lock()
			if rs.byID[ref.ID] == r {
				delete(rs.byID, ref.ID)
			}
			if rs.bySandbox[sandboxID] == r {
				delete(rs.bySandbox, sandboxID)
			}
			rs.mu.Unlock()
		})
	}, nil
}

// writeBundle writes bundle at netfwd.MountDir/netfwd.CABundle in ref's
// container, through the file helper as the sandbox user (the directory
// is the sandbox's: the engine acts there with its rights only), unless
// r's runs have it already. r.mu is held.
func (b *Backend) writeBundle(ctx context.Context, cli *apiClient, ref *ctrRef, user string, r *relay, bundle []byte) error {
	if len(bundle) == 0 {
		return nil
	}
	sum := sha256.Sum256(bundle)
	digest := hex.EncodeToString(sum[:])
	if r.bundle == digest {
		return nil
	}
	fs := &remotefs.Client{Binary: netfwd.BinaryPath, Root: netfwd.MountDir, Exec: func(ctx context.Context, argv []string, stdin io.Reader, stdout io.Writer) (string, int, error) {
		return b.execHelper(ctx, cli, ref, user, argv, stdin, stdout)
	}}
	_, err := fs.Write(ctx, netfwd.CABundle, bytes.NewReader(bundle))
	if err != nil {
		// The sandbox may have put something else there (a link, a
		// folder: the folder is its own): that goes, never followed,
		// and the bundle is made anew.
		if err = fs.Remove(ctx, netfwd.CABundle); err == nil {
			_, err = fs.Write(ctx, netfwd.CABundle, bytes.NewReader(bundle))
		}
	}
	if err != nil {
		return fmt.Errorf("writing the engine's CA bundle into the sandbox on %s: %w", b.where(), err)
	}
	r.bundle = digest
	return nil
}

// startRelay starts r's exec and waits until it answers.
func (b *Backend) startRelay(ctx context.Context, cli *apiClient, ref *ctrRef, user string, r *relay, serve func(net.Conn)) error {
	cctx, cancel := callCtx(ctx, callTimeout)
	defer cancel()
	created, err := cli.ExecCreate(cctx, ref.ID, client.ExecCreateOptions{
		User: user, WorkingDir: workDir, Env: []string{"PATH=/usr/bin:/bin"},
		Cmd:         []string{netfwd.BinaryPath, netfwd.RelayArg, netfwd.MountDir},
		AttachStdin: true, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return b.daemonErr("starting the sandbox's network relay", err)
	}
	hj, err := cli.execStart(cctx, created.ID, false, nil)
	if err != nil {
		return b.daemonErr("starting the sandbox's network relay", err)
	}
	pr, pw := io.Pipe()
	stderr := &tailBuffer{max: 4096}
	go func() {
		_, err := demux(pw, stderr, hj.Reader)
		if err == nil {
			err = io.EOF
		}
		pw.CloseWithError(err)
	}()
	sess := mux.New(pr, hj.Conn, true)
	word, err := sess.WaitHello(relayReadyTimeout)
	if err == nil && word != netfwd.RelayReady {
		err = fmt.Errorf("it said %q", word)
	}
	if err != nil {
		sess.Close()
		hj.Close()
		return fmt.Errorf("the sandbox's network relay on %s did not start: %v %s", b.where(), err, stderr.String())
	}
	r.sess, r.hj, r.alive = sess, hj, true
	go func() {
		for {
			st, err := sess.Accept()
			if err != nil {
				return
			}
			go serve(st)
		}
	}()
	go func() {
		<-sess.Done()
		r.mu.Lock()
		if r.sess == sess {
			r.alive = false
		}
		r.mu.Unlock()
		hj.Close()
		if err := sess.Err(); err != nil && !errors.Is(err, mux.ErrSessionClosed) {
			b.log.Warn("A sandbox's network relay ended.", "engine", b.EngineName(), "err", err)
		}
	}()
	return nil
}

// DialListen connects to listen port port of the sandbox, through its
// container's relay: the engine's side of 127.0.0.1:P on this machine
// for a sandbox elsewhere. It fails when no run with network goes.
func (b *Backend) DialListen(ctx context.Context, sandboxID string, port int) (net.Conn, error) {
	b.relays.mu.Lock()
	r := b.relays.bySandbox[sandboxID]
	b.relays.mu.Unlock()
	if r == nil {
		return nil, fmt.Errorf("sandbox %s has no run with network going on %s", sandboxID, b.where())
	}
	r.mu.Lock()
	sess, alive := r.sess, r.alive
	r.mu.Unlock()
	if sess == nil || !alive {
		return nil, fmt.Errorf("the network relay of sandbox %s on %s has ended", sandboxID, b.where())
	}
	return sess.Open(netfwd.ListenMeta(port))
}

// tailBuffer keeps the first max bytes written to it, safe to read while
// it is written.
type tailBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - len(t.b); room > 0 {
		t.b = append(t.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
