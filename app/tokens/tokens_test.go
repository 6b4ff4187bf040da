package tokens

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/app/store"
)

func testRegistry(t *testing.T, now func() time.Time) (*Registry, *store.Store) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r, err := New(Options{Docs: st.Tokens(), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return r, st
}

type fakeTenants map[string]principal.Principal

func (f fakeTenants) Principal(slug string) (principal.Principal, bool) {
	p, ok := f[slug]
	return p, ok
}

// TestATokenIsItsSecretAndNothingElse: only the exact text verifies; a
// token of a tenant acts as that tenant with both policies; the registry
// read again from the store knows the same tokens, never their secrets.
func TestATokenIsItsSecretAndNothingElse(t *testing.T) {
	t.Parallel()
	r, st := testRegistry(t, nil)
	r.SetTenants(fakeTenants{"acme": {Kind: principal.Tenant, Name: "acme", Tenant: "acme", Tools: []string{"sbx_run", "sbx_runs"}, Quota: principal.Quota{Runs: 2}}})
	a, err := r.Add("ci", principal.Agent, "acme", []string{"sbx_run", "sbx_exec"})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := r.Verify(a.Secret)
	if !ok || p.Kind != principal.Agent || p.Tenant != "acme" || p.Quota.Runs != 2 || strings.Join(p.Tools, ",") != "sbx_run" {
		t.Fatalf("Verify = %+v %v", p, ok)
	}
	for _, bad := range []string{"", a.Secret + "x", a.Secret[:len(a.Secret)-1], strings.Replace(a.Secret, "sclw_", "sclw-", 1), "sclw_" + a.Token.ID + "_" + strings.Repeat("A", 43)} {
		if _, ok := r.Verify(bad); ok {
			t.Errorf("Verify(%q) passed", bad)
		}
	}
	if _, err := r.Add("x", principal.Agent, "nobody", nil); err == nil {
		t.Error("a token of a tenant that does not exist was made")
	}
	again, err := New(Options{Docs: st.Tokens()})
	if err != nil {
		t.Fatal(err)
	}
	again.SetTenants(fakeTenants{})
	if _, ok := again.Verify(a.Secret); ok {
		t.Error("a token of a removed tenant still works")
	}
	again.SetTenants(fakeTenants{"acme": {Kind: principal.Tenant, Name: "acme", Tenant: "acme"}})
	if p, ok := again.Verify(a.Secret); !ok || p.Name != "ci" {
		t.Errorf("after a reload: %+v %v", p, ok)
	}
}

// TestLastUseIsKeptOnceAMinute: a use is seen at once in the list, and
// stored when a minute has passed since the last it stored.
func TestLastUseIsKeptOnceAMinute(t *testing.T) {
	t.Parallel()
	clock := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	r, st := testRegistry(t, func() time.Time { return clock })
	a, _ := r.Add("bot", principal.Agent, "", nil)
	r.Verify(a.Secret)
	if v, _ := r.Get("bot"); !v.LastUsedAt.Equal(clock) {
		t.Fatalf("last used %v", v.LastUsedAt)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var tok Token
		if err := st.Tokens().Get(a.Token.ID, &tok); err == nil && tok.LastUsedAt.Equal(clock) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the last use was never stored")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
