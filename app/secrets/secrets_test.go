package secrets

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
)

// memStore stands in for the engine's store: JSON documents by key.
type memStore struct {
	mu   sync.Mutex
	docs map[string][]byte
}

var errMissing = errors.New("not found")

func (m *memStore) GetSetting(key string, v any) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.docs[key]
	if !ok {
		return errMissing
	}
	return json.Unmarshal(b, v)
}

func (m *memStore) PutSetting(key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.docs == nil {
		m.docs = map[string][]byte{}
	}
	m.docs[key] = b
	return nil
}

func (m *memStore) raw() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return bytes.Clone(m.docs[docKey])
}

func newKeeper(t *testing.T, bus string) (*Keeper, *memStore, string) {
	t.Helper()
	st := &memStore{}
	key := filepath.Join(t.TempDir(), "config", "secrets.key")
	return New(Options{Store: st, NotFound: errMissing, KeyFile: key, SessionBus: bus, Scope: "test"}), st, key
}

const value = "ghp_test_value_0123456789"

// lifecycle adds, reads, rotates and removes a secret, and checks that
// no listing and no stored document holds the value in the clear.
func lifecycle(t *testing.T, k *Keeper, st *memStore, where string) {
	t.Helper()
	s, err := k.Add(Spec{Name: "gh", Hosts: []string{"API.GitHub.com", "uploads.github.com:8443"}, Header: "Authorization", Format: "Bearer {}"}, []byte(value))
	if err != nil {
		t.Fatal(err)
	}
	if s.Where != where || strings.Join(s.Hosts, ",") != "api.github.com,uploads.github.com:8443" {
		t.Fatalf("added %+v, want it %s with normalised hosts", s, where)
	}
	if _, err := k.Add(Spec{Name: "gh", Hosts: []string{"x.test"}}, []byte("v")); err == nil {
		t.Fatal("a second secret of the same name was added")
	}
	list, _ := k.List()
	b, _ := json.Marshal(list)
	if bytes.Contains(b, []byte(value)) || bytes.Contains(st.raw(), []byte(value)) {
		t.Fatalf("the value is in the clear in the list or the store: %s", b)
	}
	// A fresh keeper (no cache) reads it from where it is kept.
	fresh := New(k.opts)
	if v, err := fresh.Value("gh"); err != nil || string(v) != value {
		t.Fatalf("value = %q, %v", v, err)
	}
	if _, err := k.Rotate("gh", []byte("second-value")); err != nil {
		t.Fatal(err)
	}
	fresh = New(k.opts)
	if v, err := fresh.Value("gh"); err != nil || string(v) != "second-value" {
		t.Fatalf("after rotate value = %q, %v", v, err)
	}
	if err := k.Remove("gh"); err != nil {
		t.Fatal(err)
	}
	fresh = New(k.opts)
	if _, err := fresh.Value("gh"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after rm: %v", err)
	}
}

// TestSecretsWithoutAKeyringAreSealedInTheStore: with no session bus, and
// with a bus where no Secret Service answers, the value is sealed in the
// store under an owner-only key.
func TestSecretsWithoutAKeyringAreSealedInTheStore(t *testing.T) {
	t.Run("no_bus", func(t *testing.T) {
		k, st, key := newKeeper(t, "")
		lifecycle(t, k, st, InStore)
		fi, err := os.Stat(key)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("key file %v %v, want mode 0600", fi, err)
		}
		if fi, _ := os.Stat(filepath.Dir(key)); fi.Mode().Perm() != 0o700 {
			t.Fatalf("config dir mode %v, want 0700", fi.Mode().Perm())
		}
	})
	t.Run("bus_without_service", func(t *testing.T) {
		k, st, _ := newKeeper(t, testutil.BareSessionBus(t))
		lifecycle(t, k, st, InStore)
	})
}

// TestSealedValuesAreBoundToTheirNameAndKey: a sealed value moved to
// another name, or opened with another key, does not open; a key file
// others may read is refused.
func TestSealedValuesAreBoundToTheirNameAndKey(t *testing.T) {
	k, st, key := newKeeper(t, "")
	if _, err := k.Add(Spec{Name: "a", Hosts: []string{"a.test"}}, []byte("value-of-a")); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Add(Spec{Name: "b", Hosts: []string{"b.test"}}, []byte("value-of-b")); err != nil {
		t.Fatal(err)
	}
	var d doc
	_ = st.GetSetting(docKey, &d)
	d.Secrets[0].Sealed, d.Secrets[1].Sealed = d.Secrets[1].Sealed, d.Secrets[0].Sealed
	_ = st.PutSetting(docKey, d)
	if v, err := New(k.opts).Value("a"); err == nil {
		t.Fatalf("b's sealed value opened as a's: %q", v)
	}
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(k.opts).Value("b"); err == nil || !strings.Contains(err.Error(), "others may read it") {
		t.Fatalf("a readable key was used: %v", err)
	}
}

func TestBadInputNamesTheField(t *testing.T) {
	k, _, _ := newKeeper(t, "")
	for _, c := range []struct {
		name  string
		spec  Spec
		value string
		field string
	}{
		{"bad_name", Spec{Name: "GH token", Hosts: []string{"a.test"}}, "v", "name"},
		{"no_host", Spec{Name: "gh"}, "v", "hosts"},
		{"url_host", Spec{Name: "gh", Hosts: []string{"https://a.test/x"}}, "v", "hosts[0]"},
		{"bad_port", Spec{Name: "gh", Hosts: []string{"a.test:99999"}}, "v", "hosts[0]"},
		{"format_without_header", Spec{Name: "gh", Hosts: []string{"a.test"}, Format: "Bearer {}"}, "v", "format"},
		{"format_without_slot", Spec{Name: "gh", Hosts: []string{"a.test"}, Header: "Authorization", Format: "Bearer"}, "v", "format"},
		{"empty_value", Spec{Name: "gh", Hosts: []string{"a.test"}}, "", "value"},
		{"short_value", Spec{Name: "gh", Hosts: []string{"a.test"}}, "1234567", "value"},
		{"line_break", Spec{Name: "gh", Hosts: []string{"a.test"}}, "a\r\nX-Evil: 1", "value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := k.Add(c.spec, []byte(c.value))
			var ie *InputError
			if !errors.As(err, &ie) || ie.Field != c.field {
				t.Fatalf("err = %v, want an InputError on %s", err, c.field)
			}
		})
	}
}

// secretService starts gnome-keyring-daemon's Secret Service on a private
// session bus, with a fresh login keyring it unlocks, and returns the
// bus address.
func secretService(t *testing.T) string {
	t.Helper()
	daemon, err := exec.LookPath("gnome-keyring-daemon")
	if err != nil {
		testutil.Need(t, "gnome-keyring-daemon is missing (scripts/install-deps.sh test installs gnome-keyring)")
	}
	bus := testutil.BareSessionBus(t)
	home := t.TempDir()
	cmd := exec.Command(daemon, "--foreground", "--components=secrets", "--unlock")
	cmd.Env = []string{"HOME=" + home, "XDG_DATA_HOME=" + filepath.Join(home, "data"), "XDG_RUNTIME_DIR=" + testutil.PrivateDir(t), "DBUS_SESSION_BUS_ADDRESS=" + bus, "PATH=/usr/bin:/bin"}
	cmd.Stdin = strings.NewReader("test-login-password")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	s := &service{addr: bus}
	testutil.WaitFor(t, 10*time.Second, "the Secret Service to answer", func() bool {
		se, err := s.open(t.Context())
		if err != nil {
			return false
		}
		se.close()
		return true
	})
	return bus
}

// TestSecretsGoIntoARealSecretService: where gnome-keyring answers, the
// value is in its collection (found by our attributes), not in the store.
func TestSecretsGoIntoARealSecretService(t *testing.T) {
	bus := secretService(t)
	k, st, key := newKeeper(t, bus)
	lifecycle(t, k, st, InKeyring)
	if _, err := os.Stat(key); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a sealing key was made although the keyring keeps the values: %v", err)
	}
	if _, err := k.Add(Spec{Name: "npm", Hosts: []string{"registry.npmjs.org"}}, []byte("npm-value")); err != nil {
		t.Fatal(err)
	}
	v, err := (&service{addr: bus}).lookup("test", "npm")
	if err != nil || string(v) != "npm-value" {
		t.Fatalf("the keyring item holds %q, %v", v, err)
	}
	// Another engine's scope does not see it.
	if _, err := (&service{addr: bus}).lookup("other", "npm"); err == nil {
		t.Fatal("another engine's scope found the item")
	}
}
