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
