package app

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/senclaw/sandbox/app/guard"
	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/app/secevents"
)

// Credentialed CLIs on the host (GoClaw: "under deny, credentialed CLIs
// that tenant runs would start on the host are refused too"): programs
// that act with the engine's user's own logins (gh's token, gcloud's,
// aws's and az's profiles, kubectl's kubeconfig, terraform's state and
// providers, psql's pgpass, docker's socket, which is root). Under
// exec.tenantHostPolicy deny, a command of any principal but the owner
// that would start one on this machine (the off paths, the direct
// backend) is refused, also when it is wrapped (sh -c, bash -c, env,
// nohup, timeout, xargs, sudo, nice, eval, substitutions, nested): the
// shell guard's parser lists every program the command line would start
// (guard.Script.Commands), never a regular expression over its text. A
// program named only at run time ($CMD) may be any of them, and is
// refused too (fail closed).

// DefaultCredentialedCommands are always refused so; the setting
// exec.credentialedCommands adds to them.
var DefaultCredentialedCommands = []string{"gh", "gcloud", "aws", "az", "kubectl", "terraform", "psql", "docker"}

// EventCredentialedCLIDenied is a host exec refused for a credentialed
// CLI in it.
const EventCredentialedCLIDenied = "security.exec_credentialed_cli_denied"

var programNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$`) })

// checkCredentialedCommands refuses a name that is not a bare program
// name and drops duplicates.
func checkCredentialedCommands(names []string) ([]string, error) {
	out := []string{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !programNameRE().MatchString(n) {
			return nil, badField("exec.credentialedCommands", n, "must be bare program names (vault, heroku), as the shell finds them on PATH: letters, digits and . _ + -, no path")
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// credentialedCommands are the defaults and the setting's.
func (e *Engine) credentialedCommands() []string {
	out := slices.Clone(DefaultCredentialedCommands)
	for _, n := range e.Settings().Exec.CredentialedCommands {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// refuseCredentialed refuses p, a run on the host, when the tenant host
// policy is deny, its principal is not the owner, and its command would
// start a credentialed CLI.
func (e *Engine) refuseCredentialed(ctx context.Context, p *plan) error {
	who := p.principal(ctx)
	if who.IsOwner() || e.tenantHostPolicy() != HostPolicyDeny {
		return nil
	}
	in := e.guardInput(p, e.Settings().Guard)
	var s *guard.Script
	switch {
	case p.req.Command != "":
		s = guard.Parse(p.req.Command, in)
	case p.req.Language == "bash":
		s = guard.Parse(p.code, in)
	case len(p.req.Argv) > 0:
		s = guard.ParseArgv(p.req.Argv, in)
	default:
		return nil
	}
	names := e.credentialedCommands()
	for _, inv := range s.Commands() {
		for _, n := range names {
			if inv.Matches(n) {
				return e.credentialedRefusal(p, who, n, inv)
			}
		}
	}
	return nil
}

func (e *Engine) credentialedRefusal(p *plan, who principal.Principal, name string, inv guard.Invocation) error {
	what := name
	if inv.Dynamic {
		what = fmt.Sprintf("a program named only at run time (%s), which may be %s", inv.Name, name)
	}
	if len(inv.Via) > 0 {
		what += " (through " + strings.Join(inv.Via, ", ") + ")"
	}
	reason := fmt.Sprintf("this command of %s would start %s on this machine, a credentialed CLI that acts with the engine's user's own logins, and exec.tenantHostPolicy is deny, which keeps those for the owner: %s", who, what, inv.Part)
	e.security.Record(secevents.Event{
		Kind: EventCredentialedCLIDenied, Principal: who.Label(), Tenant: who.Tenant, Source: "engine",
		Request: fmt.Sprintf("%s run %s: %s", p.req.Source, p.runID, p.display), Reason: reason,
	})
	return refused("%s. Run it in a sandbox (switch the Agent shell or Scheduler scripts on, or use an isolating backend), where the owner's logins are not; the list is %s and exec.credentialedCommands", reason, strings.Join(DefaultCredentialedCommands, ", "))
}
