// Package secrets keeps the credentials the engine's proxy injects, out of every sandbox's reach.
//
// A secret is a name, the hosts it may be sent to, and how it goes into
// a request (a header, a format); its value is given once, on stdin or in
// the owner's request body, and never leaves the engine again: no list,
// no API answer and no sandbox holds it. Sandboxes get a placeholder that
// the proxy swaps for the value on the way to the secret's hosts.
//
// The value is kept in the desktop keyring, through the Secret Service
// (org.freedesktop.secrets on the session bus, one collection item per
// secret with attributes that name it), where one answers. Elsewhere
// (servers, CI, a root engine) it is sealed in the engine's store with
// AES-256-GCM from the standard library, under a random key in a 0600
// file of the owner-only config directory, the secret's name bound in as
// additional data so that no sealed value can stand in for another. The
// standard library's AEAD is all this needs: the key never leaves this
// machine, so age's recipients and passphrases (filippo.io/age) would add
// a dependency and nothing else. The metadata (names, hosts, where each
// value is) lives in the store either way.
package secrets

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/senclaw/sandbox/app/netproxy"
)

// Where a secret's value is kept.
const (
	InKeyring = "keyring"
	InStore   = "store"
)

// Secret is what is known of a secret besides its value.
type Secret struct {
	Name string `json:"name"`
	// Hosts are the only hosts its value is sent to (HOST[:PORT], "*."
	// for subdomains; without a port 443).
	Hosts []string `json:"hosts"`
	// Header is the request header its placeholder is replaced in; ""
	// replaces it anywhere in the request head (the request line and
	// every header).
	Header string `json:"header,omitempty"`
	// Format, with Header, is the header's whole value once the
	// placeholder is in it, "{}" standing for the value ("Bearer {}").
	Format string `json:"format,omitempty"`
	// Where is InKeyring or InStore.
	Where     string    `json:"where"`
	CreatedAt time.Time `json:"createdAt"`
	RotatedAt time.Time `json:"rotatedAt,omitzero"`
}

// Spec is what the owner gives to add a secret.
type Spec struct {
	Name   string   `json:"name"`
	Hosts  []string `json:"hosts"`
	Header string   `json:"header,omitempty"`
	Format string   `json:"format,omitempty"`
}

// Backing is where the metadata (and the sealed values) are kept: the
// engine's store.
type Backing interface {
	GetSetting(key string, v any) error
	PutSetting(key string, v any) error
}

// Options configure a Keeper.
type Options struct {
	// Store keeps the metadata and the sealed values.
	Store Backing
	// NotFound is the Store's error for a key it does not have.
	NotFound error
	// KeyFile is the sealing key's path, in the owner-only config dir;
	// made at the first secret sealed.
	KeyFile string
	// SessionBus is the D-Bus session bus address ("" when there is
	// none): the Secret Service is asked there first.
	SessionBus string
	// Scope tells this engine's keyring items apart from another
	// engine's of the same user (a data dir of its own).
	Scope  string
	Now    func() time.Time
	Logger *slog.Logger
}

// Keeper holds the secrets. Its methods are safe for concurrent use.
type Keeper struct {
	opts Options
	log  *slog.Logger

	mu sync.Mutex
	// values caches what was read once (the keyring asks over D-Bus).
	values map[string][]byte
}

// docKey is the store's key of the secrets' document.
const docKey = "secrets"

// doc is the stored document: the metadata, and the sealed values of
// the secrets kept InStore.
type doc struct {
	Secrets []stored `json:"secrets"`
}

type stored struct {
	Secret
	// Sealed is the AES-GCM nonce and ciphertext (InStore only).
	Sealed []byte `json:"sealed,omitempty"`
}

// New returns a Keeper.
func New(opts Options) *Keeper {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Keeper{opts: opts, log: log, values: map[string][]byte{}}
}

// InputError is bad input: the field, the value, why.
type InputError struct {
	Field  string
	Value  string
	Reason string
}

func (e *InputError) Error() string { return fmt.Sprintf("%s %q: %s", e.Field, e.Value, e.Reason) }

// ErrNotFound is a name no secret has.
var ErrNotFound = errors.New("no such secret")

// NotFoundError names the secret that is not there.
type NotFoundError struct{ Name string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no secret named %q (senclaw secrets ls lists them)", e.Name)
}
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// Bounds.
const (
	MaxSecrets    = 64
	MaxHosts      = 16
	MaxValueBytes = 16 << 10
	MinValueBytes = 8
)

var (
	nameRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`) })
	headerRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9!#$%&'*+.^_|~-]{1,64}$`) })
)

// CheckName validates a secret's name.
func CheckName(field, name string) error {
	if !nameRE().MatchString(name) {
		return &InputError{field, name, "a secret's name is 1 to 63 lower-case letters, digits, '-' and '_', starting with a letter"}
	}
	return nil
}

// EnvName is the variable a sandbox finds a secret's placeholder in: the
// name in upper case, '-' as '_' ("gh-token" is GH_TOKEN).
func EnvName(name string) string { return strings.ReplaceAll(strings.ToUpper(name), "-", "_") }

// check validates a spec and returns it normalised.
func check(s Spec) (Spec, error) {
	s.Name = strings.TrimSpace(s.Name)
	if err := CheckName("name", s.Name); err != nil {
		return s, err
	}
	if len(s.Hosts) == 0 {
		return s, &InputError{"hosts", "", "a secret needs at least one host it may be sent to (--host api.github.com)"}
	}
	if len(s.Hosts) > MaxHosts {
		return s, &InputError{"hosts", strings.Join(s.Hosts, ","), fmt.Sprintf("at most %d hosts", MaxHosts)}
	}
	var hosts []string
	for i, h := range s.Hosts {
		n, err := netproxy.NormalizeHostPattern(h)
		if err != nil {
			return s, &InputError{fmt.Sprintf("hosts[%d]", i), h, err.Error()}
		}
		if !slices.Contains(hosts, n) {
			hosts = append(hosts, n)
		}
	}
	s.Hosts = hosts
	s.Header = strings.TrimSpace(s.Header)
	if s.Header != "" && !headerRE().MatchString(s.Header) {
		return s, &InputError{"header", s.Header, "is not a header name (letters, digits and -)"}
	}
	if s.Format != "" {
		switch {
		case s.Header == "":
			return s, &InputError{"format", s.Format, "needs a header to format (--header Authorization)"}
		case strings.Count(s.Format, "{}") != 1:
			return s, &InputError{"format", s.Format, "must hold {} once, where the value goes ('Bearer {}')"}
		case strings.ContainsAny(s.Format, "\r\n\x00"):
			return s, &InputError{"format", s.Format, "must be one line"}
		}
	}
	return s, nil
}

// checkValue validates a value.
func checkValue(v []byte) error {
	switch {
	case len(v) == 0:
		return &InputError{"value", "", "is empty (the value is read from stdin)"}
	case len(v) < MinValueBytes:
		// The proxy masks the value wherever it comes back in an answer
		// from the secret's hosts: a value that short would mask
		// everything that happens to hold those bytes.
		return &InputError{"value", fmt.Sprintf("%d bytes", len(v)), fmt.Sprintf("is shorter than %d bytes, too short for a credential", MinValueBytes)}
	case len(v) > MaxValueBytes:
		return &InputError{"value", fmt.Sprintf("%d bytes", len(v)), fmt.Sprintf("is longer than %d KiB", MaxValueBytes>>10)}
	case strings.ContainsAny(string(v), "\r\n\x00"):
		// It goes into a request head, where a line break would start
		// a header (or a request) of its own.
		return &InputError{"value", fmt.Sprintf("%d bytes", len(v)), "holds a line break or a NUL byte, which cannot go into a request header"}
	}
	return nil
}

// TrimValue drops the line ending a value read from stdin ends with.
func TrimValue(v []byte) []byte {
	for len(v) > 0 && (v[len(v)-1] == '\n' || v[len(v)-1] == '\r') {
		v = v[:len(v)-1]
	}
	return v
}

func (k *Keeper) load() (doc, error) {
	var d doc
	if err := k.opts.Store.GetSetting(docKey, &d); err != nil && !errors.Is(err, k.opts.NotFound) {
		return d, fmt.Errorf("reading the secrets: %w", err)
	}
	return d, nil
}

func (k *Keeper) save(d doc) error {
	if err := k.opts.Store.PutSetting(docKey, d); err != nil {
		return fmt.Errorf("saving the secrets: %w", err)
	}
	return nil
}

// List returns every secret's metadata, by name.
func (k *Keeper) List() ([]Secret, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	d, err := k.load()
	if err != nil {
		return nil, err
	}
	out := []Secret{}
	for _, s := range d.Secrets {
		out = append(out, s.Secret)
	}
	slices.SortFunc(out, func(a, b Secret) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Get returns one secret's metadata.
func (k *Keeper) Get(name string) (Secret, error) {
	list, err := k.List()
	if err != nil {
		return Secret{}, err
	}
	for _, s := range list {
		if s.Name == name {
			return s, nil
		}
	}
	return Secret{}, &NotFoundError{name}
}

// Add stores a new secret. A name in use is refused: rotate changes a
// value.
func (k *Keeper) Add(spec Spec, value []byte) (Secret, error) {
	spec, err := check(spec)
	if err != nil {
		return Secret{}, err
	}
	if err := checkValue(value); err != nil {
		return Secret{}, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	d, err := k.load()
	if err != nil {
		return Secret{}, err
	}
	if slices.ContainsFunc(d.Secrets, func(s stored) bool { return s.Name == spec.Name }) {
		return Secret{}, &InputError{"name", spec.Name, "is a secret already; rotate it (senclaw secrets rotate " + spec.Name + ") or remove it first"}
	}
	if len(d.Secrets) >= MaxSecrets {
		return Secret{}, &InputError{"name", spec.Name, fmt.Sprintf("the engine holds %d secrets, the most it keeps; remove one first", MaxSecrets)}
	}
	s := stored{Secret: Secret{Name: spec.Name, Hosts: spec.Hosts, Header: spec.Header, Format: spec.Format, CreatedAt: k.opts.Now().UTC()}}
	if err := k.put(&s, value); err != nil {
		return Secret{}, err
	}
	d.Secrets = append(d.Secrets, s)
	if err := k.save(d); err != nil {
		if s.Where == InKeyring {
			_ = k.service().remove(k.opts.Scope, s.Name)
		}
		return Secret{}, err
	}
	k.values[s.Name] = slices.Clone(value)
	k.log.Info("A secret was added.", "name", s.Name, "hosts", s.Hosts, "where", s.Where)
	return s.Secret, nil
}

// put keeps value where it goes: the keyring when it answers, else the
// store (sealed). A secret kept in the keyring stays there.
func (k *Keeper) put(s *stored, value []byte) error {
	if s.Where == "" || s.Where == InKeyring {
		err := k.service().store(k.opts.Scope, s.Name, value)
		switch {
		case err == nil:
			s.Where, s.Sealed = InKeyring, nil
			return nil
		case s.Where == InKeyring:
			return fmt.Errorf("secret %q is kept in the desktop keyring, which could not store its new value: %w", s.Name, err)
		case !errors.Is(err, errNoService):
			return fmt.Errorf("storing secret %q in the desktop keyring: %w", s.Name, err)
		}
		k.log.Debug("No Secret Service answers; the secret is sealed in the store.", "name", s.Name, "why", err)
	}
	sealed, err := seal(k.opts.KeyFile, s.Name, value)
	if err != nil {
		return err
	}
	s.Where, s.Sealed = InStore, sealed
	return nil
}

func (k *Keeper) service() *service { return &service{addr: k.opts.SessionBus} }

// Rotate gives an existing secret a new value; sandboxes keep their
// placeholders, and the next request carries the new value.
func (k *Keeper) Rotate(name string, value []byte) (Secret, error) {
	if err := checkValue(value); err != nil {
		return Secret{}, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	d, err := k.load()
	if err != nil {
		return Secret{}, err
	}
	i := slices.IndexFunc(d.Secrets, func(s stored) bool { return s.Name == name })
	if i < 0 {
		return Secret{}, &NotFoundError{name}
	}
	s := d.Secrets[i]
	if err := k.put(&s, value); err != nil {
		return Secret{}, err
	}
	s.RotatedAt = k.opts.Now().UTC()
	d.Secrets[i] = s
	if err := k.save(d); err != nil {
		return Secret{}, err
	}
	k.values[name] = slices.Clone(value)
	k.log.Info("A secret was rotated.", "name", name)
	return s.Secret, nil
}

// Remove deletes a secret and its value.
func (k *Keeper) Remove(name string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	d, err := k.load()
	if err != nil {
		return err
	}
	i := slices.IndexFunc(d.Secrets, func(s stored) bool { return s.Name == name })
	if i < 0 {
		return &NotFoundError{name}
	}
	s := d.Secrets[i]
	if s.Where == InKeyring {
		if err := k.service().remove(k.opts.Scope, name); err != nil && !errors.Is(err, errNoService) {
			return fmt.Errorf("removing secret %q from the desktop keyring: %w", name, err)
		}
	}
	d.Secrets = slices.Delete(d.Secrets, i, i+1)
	if err := k.save(d); err != nil {
		return err
	}
	delete(k.values, name)
	k.log.Info("A secret was removed.", "name", name)
	return nil
}

// Value returns a secret's value, for the proxy only.
func (k *Keeper) Value(name string) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if v, ok := k.values[name]; ok {
		return v, nil
	}
	d, err := k.load()
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(d.Secrets, func(s stored) bool { return s.Name == name })
	if i < 0 {
		return nil, &NotFoundError{name}
	}
	s := d.Secrets[i]
	var v []byte
	switch s.Where {
	case InKeyring:
		if v, err = k.service().lookup(k.opts.Scope, name); err != nil {
			return nil, fmt.Errorf("secret %q is kept in the desktop keyring, which did not give it: %w", name, err)
		}
	default:
		if v, err = unseal(k.opts.KeyFile, name, s.Sealed); err != nil {
			return nil, err
		}
	}
	k.values[name] = v
	return v, nil
}
