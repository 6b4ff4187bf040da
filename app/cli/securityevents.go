package cli

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
)

func securityEventsCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "security-events [--follow] [--json] [--principal P] [--kind K] [--tenant T] [--limit N]", Short: "what the engine refused, and to whom (the owner's)",
		Long: "Each refusal of a request is a security event: a scope its principal does not hold, a tool its policy leaves out, another tenant's id, " +
			"a token nobody has, the LAN listener's owner tokens, rate limits and lockouts. The newest come last; --follow prints each as it comes, " +
			"--json one JSON object a line.",
		Example: examples("senclaw security-events", "senclaw security-events --follow --principal agent:", "senclaw security-events --kind security.tool --json"),
	}
	var o securityEventsOptions
	fs := cmd.Flags()
	fs.BoolVar(&o.Follow, "follow", false, "print each event as it is recorded, until interrupted")
	fs.StringVar(&o.Query.Principal, "principal", "", "only those of `P`: owner, agent:NAME, tenant:NAME, app:ID, or agent: for every agent")
	fs.StringVar(&o.Query.Kind, "kind", "", "only those of kind `K` or its prefix (security.scope_denied, security.tool)")
	fs.StringVar(&o.Query.Tenant, "tenant", "", "only those of tenant `T` (- for the owner's own)")
	fs.IntVar(&o.Query.Limit, "limit", 50, "how many of the newest, `N` (1 to 1000)")
	jsonOut := jsonFlag(cmd)
	cmd.RunE = x.noArgs("security-events", func(c *client.Client) int {
		o.JSON = *jsonOut
		return securityEvents(x.ctx, c, o, x.io)
	})
	return cmd
}

// securityEventsOptions are the flags of `senclaw security-events`.
type securityEventsOptions struct {
	Query  apitype.SecurityEventQuery
	Follow bool
	JSON   bool
}

// securityEvents executes `senclaw security-events`: the last events,
// oldest first so that the newest is at the bottom, and with Follow each
// one as it comes until interrupted.
func securityEvents(ctx context.Context, c *client.Client, o securityEventsOptions, io streams) int {
	enc := json.NewEncoder(io.Out)
	show := func(ev apitype.SecurityEvent) {
		if o.JSON {
			_ = enc.Encode(ev) // one event a line (NDJSON), also when followed
			return
		}
		who := ev.Principal
		if who == "" {
			who = "(no token)"
		}
		from := ev.Source
		if ev.Remote != "" {
			from += " " + ev.Remote
		}
		say(io.Out, "%s  %-28s %-20s %-16s %s", ev.Time.Local().Format(time.DateTime), strings.TrimPrefix(ev.Kind, "security."), who, from, ev.Request)
		say(io.Out, "    %s", ev.Reason)
	}
	if o.Follow {
		err := c.FollowSecurityEvents(ctx, o.Query, show)
		if err != nil {
			say(io.Err, "senclaw security-events: %v", err)
			return exitFor(err)
		}
		return 0
	}
	page, err := c.SecurityEvents(ctx, o.Query)
	if err != nil {
		say(io.Err, "senclaw security-events: %v", err)
		return exitFor(err)
	}
	if len(page.Events) == 0 && !o.JSON {
		say(io.Err, "senclaw: no security events: nothing was refused")
		return 0
	}
	for i := len(page.Events) - 1; i >= 0; i-- {
		show(page.Events[i])
	}
	if page.More {
		say(io.Err, "senclaw: note: older events match too (--limit)")
	}
	return 0
}
