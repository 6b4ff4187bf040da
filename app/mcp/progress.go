package mcp

import (
	"context"
	"fmt"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/apitype"
)

// Progress notifications for the long tools (sbx_run, sbx_exec,
// sbx_run_in, sbx_install): when the client asks for progress (a progress
// token on the call), the run's output so far goes out as it comes, at
// most every progressGap, and a beat every progressBeat while the run is
// quiet, so a client sees that a long run is alive.
const (
	progressGap  = 250 * time.Millisecond
	progressBeat = time.Second
	// progressTail is how much of the latest output a notification shows.
	progressTail = 4 << 10
)

// reporter sends one call's progress notifications, and keeps the
// streamed output (a streamed answer does not repeat it) for the result.
type reporter struct {
	ctx     context.Context
	session *sdk.ServerSession
	token   any
	started time.Time
	once    sync.Once

	mu             sync.Mutex
	n              float64
	bytes          int
	tail           []byte
	stdout, stderr *app.OutputKeeper
	dirty          bool
	last           time.Time
	done           chan struct{}
}

// progressFor starts reporting for a long tool's call when the client
// asked for progress; nil when it did not (then the run is not streamed
// at all). A nil reporter's methods do nothing.
func progressFor(ctx context.Context, req *sdk.CallToolRequest) *reporter {
	if req == nil || req.Params == nil || req.Session == nil || req.Params.GetProgressToken() == nil {
		return nil
	}
	r := &reporter{ctx: ctx, session: req.Session, token: req.Params.GetProgressToken(), started: time.Now(), done: make(chan struct{}),
		stdout: app.NewOutputKeeper(), stderr: app.NewOutputKeeper()}
	go r.beat()
	return r
}

// onOutput is the callback to hand the run: nil without a reporter.
func (r *reporter) onOutput() func(stream, data string) {
	if r == nil {
		return nil
	}
	return r.output
}

// stop ends the reporting.
func (r *reporter) stop() {
	if r != nil {
		r.once.Do(func() { close(r.done) })
	}
}

// fill puts the output the run streamed into its answer, capped as the
// engine caps it.
func (r *reporter) fill(rep *apitype.RunReply) {
	if r == nil || rep == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rep.Stdout, rep.Stderr = r.stdout.String(), r.stderr.String()
}

// output takes a chunk of the run's output.
func (r *reporter) output(stream, data string) {
	r.mu.Lock()
	keep := r.stdout
	if stream == "stderr" {
		keep = r.stderr
	}
	_, _ = keep.Write([]byte(data))
	r.bytes += len(data)
	r.tail = append(r.tail, data...)
	if over := len(r.tail) - progressTail; over > 0 {
		r.tail = append(r.tail[:0], r.tail[over:]...)
	}
	r.dirty = true
	due := time.Since(r.last) >= progressGap
	r.mu.Unlock()
	if due {
		r.send()
	}
}

// beat sends what is pending, and a beat when the run is quiet, until
// the call ends.
func (r *reporter) beat() {
	tick := time.NewTicker(progressGap)
	defer tick.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-r.ctx.Done():
			return
		case <-tick.C:
			r.mu.Lock()
			due := r.dirty || time.Since(r.last) >= progressBeat
			r.mu.Unlock()
			if due {
				r.send()
			}
		}
	}
}

func (r *reporter) send() {
	r.mu.Lock()
	r.n++
	r.last, r.dirty = time.Now(), false
	msg := fmt.Sprintf("running for %.0f s, %d bytes of output", time.Since(r.started).Seconds(), r.bytes)
	if len(r.tail) > 0 {
		msg += "; latest output:\n" + string(r.tail)
	}
	params := &sdk.ProgressNotificationParams{ProgressToken: r.token, Progress: r.n, Message: msg}
	r.mu.Unlock()
	// A client that went away only loses its progress; the run goes on
	// until the call itself is cancelled.
	_ = r.session.NotifyProgress(r.ctx, params)
}
