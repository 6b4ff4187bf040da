package app

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/senclaw/sandbox/app/netproxy"
	"github.com/senclaw/sandbox/app/secrets"
	"github.com/senclaw/sandbox/backends"
)

// Egress that knows HTTP: secrets the engine holds for sandboxes (a run
// gets a placeholder the proxy swaps for the value on the way to the
// secret's hosts), the HTTP rules of a sandbox (allowHttp), the CA the
// proxy looks into those hosts' TLS with, and the roots the owner pins
// for a host.

// SecretsKeyFile is the sealing key's name in the config dir.
const SecretsKeyFile = "secrets.key"

// MaxSandboxSecrets bounds the secrets one sandbox or run asks for.
const MaxSandboxSecrets = 16

// secretInfo is what the API shows of s.
func secretInfo(s secrets.Secret, usedBy []SandboxRef) SecretInfo {
	if usedBy == nil {
		usedBy = []SandboxRef{}
	}
	return SecretInfo{Name: s.Name, Hosts: s.Hosts, Header: s.Header, Format: s.Format, Where: s.Where,
		CreatedAt: s.CreatedAt, RotatedAt: s.RotatedAt, Env: secrets.EnvName(s.Name), UsedBy: usedBy}
}

// secretErr turns the keeper's errors into the engine's.
func secretErr(err error) error {
	var ie *secrets.InputError
	var nf *secrets.NotFoundError
	switch {
	case errors.As(err, &ie):
		return badField(ie.Field, ie.Value, "%s", ie.Reason)
	case errors.As(err, &nf):
		return &NotFoundError{Kind: "secret", ID: nf.Name}
	}
	return err
}

// Secrets lists the secrets with the sandboxes that ask for each.
func (e *Engine) Secrets() ([]SecretInfo, error) {
	list, err := e.secrets.List()
	if err != nil {
		return nil, err
	}
	sbs, err := e.List()
	if err != nil {
		return nil, err
	}
	out := make([]SecretInfo, 0, len(list))
	for _, s := range list {
		var used []SandboxRef
		for _, sb := range sbs {
			if slices.Contains(sb.Secrets, s.Name) {
				used = append(used, SandboxRef{ID: sb.ID, Name: sb.Name})
			}
		}
		out = append(out, secretInfo(s, used))
	}
	return out, nil
}

// SecretNames lists the secrets' names and hosts: what an agent may see.
func (e *Engine) SecretNames() ([]SecretInfo, error) {
	list, err := e.secrets.List()
	if err != nil {
		return nil, err
	}
	out := make([]SecretInfo, 0, len(list))
	for _, s := range list {
		out = append(out, SecretInfo{Name: s.Name, Hosts: s.Hosts, Env: secrets.EnvName(s.Name), UsedBy: []SandboxRef{}})
	}
	return out, nil
}

// AddSecret stores a new secret; the value never comes back out.
func (e *Engine) AddSecret(spec SecretSpec, value []byte) (*SecretInfo, error) {
	s, err := e.secrets.Add(secrets.Spec{Name: spec.Name, Hosts: spec.Hosts, Header: spec.Header, Format: spec.Format}, secrets.TrimValue(value))
	if err != nil {
		return nil, secretErr(err)
	}
	info := secretInfo(s, nil)
	return &info, nil
}

// RotateSecret gives a secret a new value; runs going now send the new
// one with their next request.
func (e *Engine) RotateSecret(name string, value []byte) (*SecretInfo, error) {
	s, err := e.secrets.Rotate(name, secrets.TrimValue(value))
	if err != nil {
		return nil, secretErr(err)
	}
	info := secretInfo(s, nil)
	return &info, nil
}

// RemoveSecret deletes a secret. Sandboxes that ask for it keep its
// name, and their runs are refused until it is added again or dropped.
func (e *Engine) RemoveSecret(name string) error {
	return secretErr(e.secrets.Remove(name))
}

// checkSecrets validates the secrets a sandbox or run asks for: known
// names, each once.
func (e *Engine) checkSecrets(field string, names []string) ([]string, error) {
	if len(names) > MaxSandboxSecrets {
		return nil, badField(field, len(names), "at most %d secrets", MaxSandboxSecrets)
	}
	out := []string{}
	for i, n := range names {
		n = strings.TrimSpace(n)
		f := fmt.Sprintf("%s[%d]", field, i)
		if err := secrets.CheckName(f, n); err != nil {
			return nil, secretErr(err)
		}
		if _, err := e.secrets.Get(n); err != nil {
			if errors.Is(err, secrets.ErrNotFound) {
				return nil, badField(f, n, "is not a secret of this engine; the owner adds it (senclaw secrets add %s --host HOST), and sbx_capabilities lists those there are", n)
			}
			return nil, err
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// checkSecretEnv refuses an environment that sets a secret's variable:
// the placeholder goes there.
func checkSecretEnv(field string, env map[string]string, names []string) error {
	for _, n := range names {
		if _, ok := env[secrets.EnvName(n)]; ok {
			return badField(field, secrets.EnvName(n), "is where the placeholder of secret %q goes; drop it from the environment", n)
		}
	}
	return nil
}

// checkHTTPRules validates allowHttp.
func checkHTTPRules(rules []backends.HTTPRule) ([]backends.HTTPRule, error) {
	out, err := netproxy.NormalizeHTTPRules(rules)
	if err != nil {
		var he *netproxy.HTTPRuleError
		if errors.As(err, &he) {
			return nil, badField(he.Field, he.Value, "%v", he.Err)
		}
		return nil, err
	}
	return out, nil
}

// secretUses are the placeholders the runs going now hold, by sandbox.
type secretUses struct {
	mu sync.Mutex
	by map[string]map[*[]netproxy.SecretUse]bool
}

func (u *secretUses) of(id string) []netproxy.SecretUse {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []netproxy.SecretUse
	for l := range u.by[id] {
		out = append(out, *l...)
	}
	return out
}

// runSecrets gives a run of sb its placeholders: the variables to add to
// its environment, and what to call when it is over. A secret the
// sandbox asks for that is gone refuses the run.
func (e *Engine) runSecrets(sb *Sandbox) (env []string, release func(), err error) {
	if len(sb.Secrets) == 0 {
		return nil, func() {}, nil
	}
	uses := make([]netproxy.SecretUse, 0, len(sb.Secrets))
	for _, name := range sb.Secrets {
		s, err := e.secrets.Get(name)
		if errors.Is(err, secrets.ErrNotFound) {
			return nil, nil, refused("the sandbox asks for secret %q, which the engine no longer holds; the owner adds it again (senclaw secrets add), or drop it from the sandbox (sbx_update secrets)", name)
		}
		if err != nil {
			return nil, nil, err
		}
		u := netproxy.SecretUse{Name: s.Name, Token: randomHex(16), Hosts: s.Hosts, Header: s.Header, Format: s.Format}
		uses = append(uses, u)
		env = append(env, secrets.EnvName(s.Name)+"="+u.Placeholder())
	}
	e.uses.mu.Lock()
	if e.uses.by == nil {
		e.uses.by = map[string]map[*[]netproxy.SecretUse]bool{}
	}
	if e.uses.by[sb.ID] == nil {
		e.uses.by[sb.ID] = map[*[]netproxy.SecretUse]bool{}
	}
	e.uses.by[sb.ID][&uses] = true
	e.uses.mu.Unlock()
	return env, func() {
		e.uses.mu.Lock()
		defer e.uses.mu.Unlock()
		delete(e.uses.by[sb.ID], &uses)
		if len(e.uses.by[sb.ID]) == 0 {
			delete(e.uses.by, sb.ID)
		}
	}, nil
}

// secretValue is the proxy's way to a value.
func (e *Engine) secretValue(name string) ([]byte, error) { return e.secrets.Value(name) }

// pinnedRoots is the proxy's UpstreamRoots: the CA the owner pinned for
// host:port in the settings (pinnedCAs), or nil for this machine's.
func (e *Engine) pinnedRoots(host string, port int) *x509.CertPool {
	pins := e.Settings().PinnedCAs
	if len(pins) == 0 {
		return nil
	}
	// The most specific pattern that matches holds, whatever the map's
	// order: a name before a wildcard, a longer wildcard before a
	// shorter one.
	var match []string
	for pattern := range pins {
		if netproxy.MatchHostPattern(pattern, host, port) {
			match = append(match, pattern)
		}
	}
	slices.SortFunc(match, func(a, b string) int {
		if wa, wb := strings.HasPrefix(a, "*."), strings.HasPrefix(b, "*."); wa != wb {
			if wa {
				return 1
			}
			return -1
		}
		if d := len(b) - len(a); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	for _, pattern := range match {
		pool := x509.NewCertPool()
		if pool.AppendCertsFromPEM([]byte(pins[pattern])) {
			return pool
		}
	}
	return nil
}

// checkPinnedCAs validates the settings' pinnedCAs: host patterns to PEM
// certificates.
func checkPinnedCAs(pins map[string]string) (map[string]string, error) {
	out := map[string]string{}
	if len(pins) > 64 {
		return nil, badField("pinnedCAs", len(pins), "at most 64 hosts")
	}
	for h, pemText := range pins {
		n, err := netproxy.NormalizeHostPattern(h)
		if err != nil {
			return nil, badField("pinnedCAs", h, "%v", err)
		}
		if len(pemText) > 64<<10 {
			return nil, badField("pinnedCAs."+n, nil, "is longer than 64 KiB")
		}
		if !x509.NewCertPool().AppendCertsFromPEM([]byte(pemText)) {
			return nil, badField("pinnedCAs."+n, nil, "holds no PEM certificate")
		}
		out[n] = pemText
	}
	return out, nil
}

// engineScope tells this engine's keyring items from another's of the
// same user: one per data dir.
func engineScope(dataDir string) string {
	sum := sha256.Sum256([]byte(dataDir))
	return hex.EncodeToString(sum[:8])
}

// caDir is where the proxy's CA lives: the owner-only config dir.
func (e *Engine) caDir() string { return e.opts.ConfigDir }

// secretsKey is the sealing key's path.
func (e *Engine) secretsKey() string {
	if e.opts.ConfigDir == "" {
		return ""
	}
	return filepath.Join(e.opts.ConfigDir, SecretsKeyFile)
}
