package desktop

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/spaceapps"
)

// pollTimeout bounds each call of a poll: a stuck engine shows as one.
const pollTimeout = 5 * time.Second

// recentRuns is how many of the newest runs each poll reads, to find the
// ones refused since the last poll.
const recentRuns = 10

// poll reads what the tray shows and the notifications compare, through
// the API like any other client.
func poll(ctx context.Context, c *client.Client) Snapshot {
	ctx, cancel := context.WithTimeout(ctx, pollTimeout)
	defer cancel()
	var s Snapshot
	var err error
	if s.Policy, err = c.Policy(ctx); err != nil {
		return Snapshot{Err: err}
	}
	if s.Caps, err = c.Caps(ctx, false); err != nil {
		return Snapshot{Err: err}
	}
	if s.Runs, err = c.Runs(ctx, "", recentRuns); err != nil {
		return Snapshot{Err: err}
	}
	if s.Runs == nil {
		s.Runs = []app.RunRecord{}
	}
	if runs, err := c.RunsFrom(ctx, app.SourceScheduler, recentRuns); err == nil {
		s.ScheduledRuns = []app.RunRecord{}
		for _, r := range runs {
			if r.Source == app.SourceScheduler { // a daemon that ignores ?source= sends all
				s.ScheduledRuns = append(s.ScheduledRuns, r)
			}
		}
	}
	// Space Apps: an engine without them (an older one, or one whose
	// Space Apps could not load) answers an error, which only means none.
	if list, err := c.Apps(ctx); err == nil {
		for _, a := range list.Apps {
			if !a.NeedsRestart && a.State != spaceapps.StateCrashLooping {
				continue
			}
			s.Apps = append(s.Apps, AppAlert{
				ID: a.ID, Name: a.Name, NeedsRestart: a.NeedsRestart, Reason: strings.Join(a.NeedsRestartReasons, "; "),
				CrashLooping: a.State == spaceapps.StateCrashLooping, LastLog: a.LastLog,
			})
		}
	}

	if st, err := c.Autostart(ctx); err == nil {
		s.StartAtLogin = st
	}
	// The engine has no "notifications" setting yet; when it gets one,
	// it is honoured from here.
	var settings map[string]json.RawMessage
	if err := c.Do(ctx, http.MethodGet, "/settings", nil, nil, &settings); err == nil {
		var on bool
		if raw, ok := settings["notifications"]; ok && json.Unmarshal(raw, &on) == nil {
			s.Notifications = &on
		}
	}
	return s
}

// watcher polls the engine and hands each snapshot to its listeners.
type watcher struct {
	client   *client.Client
	interval time.Duration
	log      *slog.Logger
	listen   []func(context.Context, Snapshot)
	kick     chan struct{}
}

func newWatcher(c *client.Client, interval time.Duration, log *slog.Logger) *watcher {
	return &watcher{client: c, interval: interval, log: log, kick: make(chan struct{}, 1)}
}

// pollNow asks for a poll without waiting for the next tick, after the
// tray changed something.
func (w *watcher) pollNow() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// run polls until ctx ends.
func (w *watcher) run(ctx context.Context) {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	failing := false
	for {
		s := poll(ctx, w.client)
		if ctx.Err() != nil {
			return
		}
		if (s.Err != nil) != failing {
			failing = s.Err != nil
			if failing {
				w.log.Warn("The engine does not answer the tray.", "err", s.Err)
			} else {
				w.log.Info("The engine answers the tray again.")
			}
		}
		for _, fn := range w.listen {
			fn(ctx, s)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.kick:
		}
	}
}
