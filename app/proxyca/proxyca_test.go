package proxyca

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func pool(t *testing.T, a *Authority) *x509.CertPool {
	t.Helper()
	pemCA, err := a.CertPEM()
	if err != nil {
		t.Fatal(err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pemCA) {
		t.Fatal("the CA is not PEM")
	}
	return p
}

// TestTheAuthorityIsMadeAtFirstUseAndKeptOwnerOnly: nothing is on disk
// before the first use; then the key is 0600 in a 0700 folder, and a new
// Authority on the same folder loads the same CA.
func TestTheAuthorityIsMadeAtFirstUseAndKeptOwnerOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "config")
	a := New(dir, nil)
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("New wrote to disk: %v", err)
	}
	first, err := a.CertPEM()
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, KeyFile): 0o600} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: %v %v, want mode %v", p, fi.Mode(), err, want)
		}
	}
	again, err := New(dir, nil).CertPEM()
	if err != nil || !bytes.Equal(first, again) {
		t.Fatalf("a second Authority made another CA (%v)", err)
	}
	b, _ := pem.Decode(first)
	ca, _ := x509.ParseCertificate(b.Bytes)
	if !ca.IsCA || !ca.MaxPathLenZero {
		t.Fatalf("CA %+v: want a CA that signs leaves only", ca.Subject)
	}
	// A key others may read is refused, never used.
	if err := os.Chmod(filepath.Join(dir, KeyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(dir, nil).CertPEM(); err == nil {
		t.Fatal("a CA key others may read was used")
	}
}

// TestLeavesVerifyShortLivedAndCached: a leaf for a name and one for an
// address verify against the CA for that host only; a leaf lives a day,
// is cached, and is made anew before it runs out.
func TestLeavesVerifyShortLivedAndCached(t *testing.T) {
	c := &clock{t: time.Now()}
	a := New(t.TempDir(), c.now)
	roots := pool(t, a)
	for _, host := range []string{"api.github.com", "127.0.0.1"} {
		leaf, err := a.Leaf(host)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, CurrentTime: c.now()}); err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: "other.example", Roots: roots, CurrentTime: c.now()}); err == nil {
			t.Fatalf("the leaf of %s verified for another host", host)
		}
		if life := leaf.Leaf.NotAfter.Sub(c.now()); life > leafLifetime {
			t.Fatalf("leaf lives %v, want at most %v", life, leafLifetime)
		}
	}
	one, _ := a.Leaf("api.github.com")
	two, _ := a.Leaf("API.github.com")
	if one != two {
		t.Fatal("the leaf was not cached")
	}
	c.add(leafLifetime - leafRenewal + time.Minute)
	three, _ := a.Leaf("api.github.com")
	if three == one || !three.Leaf.NotAfter.After(one.Leaf.NotAfter) {
		t.Fatal("a leaf about to run out was served again")
	}
}

func TestTheBundleHoldsTheSystemRootsAndTheCA(t *testing.T) {
	a := New(t.TempDir(), nil)
	b, err := a.Bundle()
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := a.CertPEM()
	if !bytes.HasSuffix(b, ca) {
		t.Fatal("the bundle does not end with the CA")
	}
	sys, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err == nil && !bytes.HasPrefix(b, sys) {
		t.Fatal("the bundle does not start with this machine's roots")
	}
}
