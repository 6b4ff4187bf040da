//go:build !linux

package jailfs

import "github.com/senclaw/sandbox/backends"

// As runs fn when cred is nil (the engine is the sandbox user); changing
// one thread's credentials needs Linux, so otherwise it refuses.
func As(cred *backends.Credential, fn func() error) error {
	if cred == nil {
		return fn()
	}
	return ErrUnsupported
}

// CanWrite, off Linux, cannot ask as another user: it answers nil, and
// the sandbox finds out when it writes.
func CanWrite(cred *backends.Credential, path string) error { return nil }

// CanReach, off Linux, cannot ask as another user: it answers nil.
func CanReach(cred *backends.Credential, path string) error { return nil }

// Accessible, off Linux, cannot ask as another user: it answers all the
// paths, so that callers mask them all.
func Accessible(cred *backends.Credential, paths []string) ([]string, error) { return paths, nil }
