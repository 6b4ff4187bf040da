// Package tokens keeps the agent and tenant tokens: made once, stored hashed, shown once.
//
// A token is a 256-bit random secret, handed out once when it is made
// (or rotated) and stored only as its SHA-256. Its text carries the
// token's id (sclw_<id>_<secret>), so a request's token is found by id
// and its secret compared with the stored hash in constant time. An agent
// token acts as an agent principal, of a tenant when it was made for
// one; a tenant token (made by app/tenants) as its tenant. The engine's
// store holds the documents (store.Docs); the registry keeps them in
// memory, so verifying a token costs no disk read, and notes when each
// was last used, stored at most once a minute per token.
package tokens

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/app/store"
)

// Token is a token's stored document: never its secret.
type Token struct {
	ID   string         `json:"id"`
	Name string         `json:"name"`
	Kind principal.Kind `json:"kind"`
	// Tenant is the tenant's slug: the tenant a tenant token is, the
	// tenant an agent token acts for ("" for the owner's own objects).
	Tenant string `json:"tenant,omitempty"`
	// Tools is the token's own tool policy (nil: all its scopes allow);
	// a tenant's policy applies on top of it.
	Tools []string `json:"tools"`
	// Hash is the hex SHA-256 of the whole token text.
	Hash       string    `json:"hash"`
	CreatedAt  time.Time `json:"createdAt"`
	RotatedAt  time.Time `json:"rotatedAt,omitzero"`
	LastUsedAt time.Time `json:"lastUsedAt,omitzero"`
}

// View is a token as the faces show it, never its secret; Issued is
// one with its secret, shown once. Both are apitype's.
type (
	View   = apitype.TokenView
	Issued = apitype.TokenIssued
)

func (t *Token) view() View {
	return View{ID: t.ID, Name: t.Name, Kind: t.Kind, Tenant: t.Tenant, Tools: slices.Clone(t.Tools), CreatedAt: t.CreatedAt, RotatedAt: t.RotatedAt, LastUsedAt: t.LastUsedAt}
}

// Tenants is what the registry needs of the tenants (app/tenants): the
// principal a tenant is now, with its tool policy, quotas and paths.
type Tenants interface {
	Principal(slug string) (principal.Principal, bool)
}

// Options configure a Registry.
type Options struct {
	Docs   store.Docs
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Registry holds the tokens.
type Registry struct {
	opts    Options
	tenants Tenants

	mu   sync.Mutex
	byID map[string]*Token
	// saved is when each token's last use was last stored.
	saved map[string]time.Time
}

// MaxTokens bounds the tokens the engine holds.
const MaxTokens = 1000

// New loads the tokens from opts.Docs.
func New(opts Options) (*Registry, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Registry{opts: opts, byID: map[string]*Token{}, saved: map[string]time.Time{}}
	err := opts.Docs.Each(func(data []byte) error {
		var t Token
		if err := json.Unmarshal(data, &t); err != nil {
			return fmt.Errorf("reading a token: %w", err)
		}
		r.byID[t.ID] = &t
		r.saved[t.ID] = t.LastUsedAt
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// SetTenants gives the registry the tenants, which tenant and tenant
// agent tokens act as; until then such tokens are refused.
func (r *Registry) SetTenants(t Tenants) {
	r.mu.Lock()
	r.tenants = t
	r.mu.Unlock()
}

// prefix starts every token's text.
const prefix = "sclw_"

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._:-]{0,62}$`) })

// CheckName validates a token's (or tenant's) name.
func CheckName(field, name string) error {
	if !nameRE().MatchString(name) {
		return &app.FieldError{Field: field, Value: name, Reason: "must be 1 to 63 characters: lowercase letters, digits and . _ : - (starting with a letter or digit)"}
	}
	return nil
}

// newSecret makes a token's text for id: the id, then 256 random bits.
func newSecret(id string) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return prefix + id + "_" + base64.RawURLEncoding.EncodeToString(b)
}

func hashOf(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Add makes a token. kind is principal.Agent, or principal.Tenant for a
// tenant's own token (app/tenants makes those). tools nil leaves the
// token without a policy of its own.
func (r *Registry) Add(name string, kind principal.Kind, tenant string, tools []string) (*Issued, error) {
	if err := CheckName("name", name); err != nil {
		return nil, err
	}
	if kind != principal.Agent && kind != principal.Tenant {
		return nil, &app.FieldError{Field: "kind", Value: string(kind), Reason: "a token is an agent's or a tenant's"}
	}
	if tools != nil {
		var err error
		if tools, err = principal.CheckTools(tools); err != nil {
			return nil, &app.FieldError{Field: "tools", Reason: err.Error()}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if tenant != "" && kind == principal.Agent {
		if r.tenants == nil {
			return nil, &app.FieldError{Field: "tenant", Value: tenant, Reason: "no tenants are known to this engine"}
		}
		if _, ok := r.tenants.Principal(tenant); !ok {
			return nil, &app.FieldError{Field: "tenant", Value: tenant, Reason: "no such tenant (senclaw tenants ls)"}
		}
	}
	if r.findLocked(name) != nil {
		return nil, &app.ConflictError{Reason: fmt.Sprintf("a token named %q exists: rotate it (senclaw tokens rotate %s) or remove it first", name, name)}
	}
	if len(r.byID) >= MaxTokens {
		return nil, &app.LimitError{Reason: fmt.Sprintf("refused: the engine holds %d tokens, the most it allows; remove tokens no longer used (senclaw tokens ls, rm)", len(r.byID))}
	}
	id := randomID()
	secret := newSecret(id)
	now := r.opts.Now().UTC()
	t := &Token{ID: id, Name: name, Kind: kind, Tenant: tenant, Tools: tools, Hash: hashOf(secret), CreatedAt: now}
	if err := r.opts.Docs.Put(id, t); err != nil {
		return nil, fmt.Errorf("saving the token: %w", err)
	}
	r.byID[id] = t
	r.opts.Logger.Info("A token was made.", "token", id, "name", name, "kind", kind, "tenant", tenant)
	return &Issued{Token: t.view(), Secret: secret}, nil
}

func randomID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// findLocked is the token whose id or name is key. r.mu is held.
func (r *Registry) findLocked(key string) *Token {
	if t, ok := r.byID[key]; ok {
		return t
	}
	for _, t := range r.byID {
		if t.Name == key {
			return t
		}
	}
	return nil
}

func (r *Registry) find(key string) (*Token, error) {
	if t := r.findLocked(key); t != nil {
		return t, nil
	}
	return nil, &app.NotFoundError{Kind: "token", ID: key}
}

// List returns every token, by name.
func (r *Registry) List() []View {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]View, 0, len(r.byID))
	for _, t := range r.byID {
		out = append(out, t.view())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Get returns the token whose id or name is key.
func (r *Registry) Get(key string) (View, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, err := r.find(key)
	if err != nil {
		return View{}, err
	}
	return t.view(), nil
}

// Rotate gives the token whose id or name is key a new secret, which it
// returns once; the old one stops working at once.
func (r *Registry) Rotate(key string) (*Issued, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, err := r.find(key)
	if err != nil {
		return nil, err
	}
	next := *t
	secret := newSecret(t.ID)
	next.Hash, next.RotatedAt = hashOf(secret), r.opts.Now().UTC()
	if err := r.opts.Docs.Put(t.ID, &next); err != nil {
		return nil, fmt.Errorf("saving the token: %w", err)
	}
	*t = next
	r.opts.Logger.Info("A token was rotated.", "token", t.ID, "name", t.Name)
	return &Issued{Token: t.view(), Secret: secret}, nil
}

// SetTools replaces the tool policy of the token whose id or name is
// key; nil removes it (the token's scopes decide alone).
func (r *Registry) SetTools(key string, tools []string) (View, error) {
	if tools != nil {
		var err error
		if tools, err = principal.CheckTools(tools); err != nil {
			return View{}, &app.FieldError{Field: "tools", Reason: err.Error()}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t, err := r.find(key)
	if err != nil {
		return View{}, err
	}
	next := *t
	next.Tools = tools
	if err := r.opts.Docs.Put(t.ID, &next); err != nil {
		return View{}, fmt.Errorf("saving the token: %w", err)
	}
	*t = next
	return t.view(), nil
}

// Remove removes the token whose id or name is key; it stops working at
// once.
func (r *Registry) Remove(key string) (View, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, err := r.find(key)
	if err != nil {
		return View{}, err
	}
	if err := r.opts.Docs.Delete(t.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return View{}, fmt.Errorf("removing the token: %w", err)
	}
	delete(r.byID, t.ID)
	delete(r.saved, t.ID)
	r.opts.Logger.Info("A token was removed.", "token", t.ID, "name", t.Name)
	return t.view(), nil
}

// RemoveTenant removes every token of tenant (a tenant that is removed).
func (r *Registry) RemoveTenant(tenant string) int {
	r.mu.Lock()
	var ids []string
	for id, t := range r.byID {
		if t.Tenant == tenant {
			ids = append(ids, id)
		}
	}
	r.mu.Unlock()
	for _, id := range ids {
		_, _ = r.Remove(id)
	}
	return len(ids)
}

// Verify returns the principal whose token secret is, and notes the use.
// The secret is compared with the stored hash in constant time; a text
// that is not a token's form is no one's.
func (r *Registry) Verify(secret string) (principal.Principal, bool) {
	rest, ok := strings.CutPrefix(secret, prefix)
	id, _, ok2 := strings.Cut(rest, "_")
	if !ok || !ok2 {
		return principal.Principal{}, false
	}
	want := hashOf(secret)
	r.mu.Lock()
	t, found := r.byID[id]
	if !found || subtle.ConstantTimeCompare([]byte(want), []byte(t.Hash)) != 1 {
		r.mu.Unlock()
		return principal.Principal{}, false
	}
	p, ok := r.principalLocked(t)
	if ok {
		r.usedLocked(t)
	}
	r.mu.Unlock()
	return p, ok
}

// ByID returns the principal of the token id as it is now (the MCP face
// asks again for a principal it knew).
func (r *Registry) ByID(id string) (principal.Principal, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.byID[id]
	if !ok {
		return principal.Principal{}, false
	}
	return r.principalLocked(t)
}

// principalLocked is the principal t acts as: for a tenant's token or a
// tenant's agent, the tenant as it is now (a tenant removed makes its
// tokens no one's). r.mu is held.
func (r *Registry) principalLocked(t *Token) (principal.Principal, bool) {
	p := principal.Principal{Kind: t.Kind, Name: t.Name, TokenID: t.ID, Tools: slices.Clone(t.Tools)}
	if t.Tenant == "" {
		return p, t.Kind == principal.Agent
	}
	if r.tenants == nil {
		return principal.Principal{}, false
	}
	tp, ok := r.tenants.Principal(t.Tenant)
	if !ok {
		return principal.Principal{}, false
	}
	p.Tenant, p.Quota, p.Paths = tp.Tenant, tp.Quota, tp.Paths
	if t.Kind == principal.Tenant {
		p.Name = tp.Name
	}
	p.Tools = intersect(tp.Tools, t.Tools)
	return p, true
}

// intersect is the policy of both lists: nil allows everything.
func intersect(a, b []string) []string {
	switch {
	case a == nil:
		return slices.Clone(b)
	case b == nil:
		return slices.Clone(a)
	}
	out := []string{}
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// lastUseEvery is how often a token's last use is stored.
const lastUseEvery = time.Minute

// usedLocked notes a use of t; the store hears of it at most once a
// minute, off the request's path. r.mu is held.
func (r *Registry) usedLocked(t *Token) {
	now := r.opts.Now().UTC()
	t.LastUsedAt = now
	if now.Sub(r.saved[t.ID]) < lastUseEvery {
		return
	}
	r.saved[t.ID] = now
	id := t.ID
	go func() {
		// Under r.mu, as every write of a token is: the document stored
		// is the token as it is then, never one a rotation replaced.
		r.mu.Lock()
		defer r.mu.Unlock()
		t, live := r.byID[id]
		if !live {
			return
		}
		if err := r.opts.Docs.Put(id, t); err != nil {
			r.opts.Logger.Warn("A token's last use could not be stored.", "token", id, "err", err)
		}
	}()
}
