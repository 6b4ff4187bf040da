package docker

import (
	"errors"
	"testing"
)

// TestPoolSizeIsASetting: the dockerPoolSize setting turns the one-shot
// pool off (0) and on again, and a smaller size drops the idle
// containers above it.
func TestPoolSizeIsASetting(t *testing.T) {
	t.Parallel()
	b := New(Options{PoolDir: t.TempDir()})
	// No daemon: the dropped containers here are made up.
	b.clientOnce.Do(func() { b.cliErr = errors.New("no daemon in this test") })
	if !b.pool.enabled() || b.pool.size != 2 {
		t.Fatalf("a new backend's pool: enabled %v, size %d", b.pool.enabled(), b.pool.size)
	}
	b.pool.idle["k"] = []*pooled{{dir: t.TempDir()}, {dir: t.TempDir()}}
	b.SetPoolSize(1)
	if len(b.pool.idle["k"]) != 1 || !b.pool.enabled() {
		t.Errorf("size 1 keeps %d idle containers (enabled %v)", len(b.pool.idle["k"]), b.pool.enabled())
	}
	b.SetPoolSize(0)
	if b.pool.enabled() || len(b.pool.idle["k"]) != 0 {
		t.Error("size 0 leaves the pool on")
	}
	b.SetPoolSize(3)
	if !b.pool.enabled() || b.pool.size != 3 {
		t.Error("size 3 does not turn it on again")
	}
	// A backend built with its pool off keeps it off.
	off := New(Options{PoolDir: t.TempDir(), PoolSize: -1})
	if off.SetPoolSize(2); off.pool.enabled() {
		t.Error("the setting turned on a pool its builder turned off")
	}
}
