package desktop

import (
	"context"
	"log/slog"
)

// notifications decide from each snapshot what to tell the user and send
// it, within the rate limit and only when they are on.
type notifications struct {
	alerts alerts
	limit  *rateLimit
	send   func(context.Context, Notification) error
	// on is the Options' choice; the engine's setting, when it has one,
	// wins.
	on  bool
	log *slog.Logger
}

func (n *notifications) handle(ctx context.Context, s Snapshot) {
	on := n.on
	if s.Notifications != nil {
		on = *s.Notifications
	}
	if !on {
		// Keep up with the state so that turning them on later does not
		// replay what happened meanwhile.
		n.alerts.update(s, func(Kind) bool { return true })
		return
	}
	for _, nf := range n.alerts.update(s, n.limit.allow) {
		if err := n.send(ctx, nf); err != nil {
			n.log.Warn("A desktop notification could not be shown.", "summary", nf.Summary, "err", err)
		}
	}
}
