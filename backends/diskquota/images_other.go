//go:build !linux

package diskquota

import (
	"errors"
	"log/slog"
)

// Images are Linux only: elsewhere the watchdog keeps the quota.
type Images struct{}

// NewImages returns Images that are never usable here.
func NewImages(string, *slog.Logger) *Images { return &Images{} }

// Usable is false: filesystem images need Linux loop devices.
func (*Images) Usable() (bool, string) {
	return false, "filesystem images need Linux (loop devices and ext4)"
}

// Attach fails.
func (*Images) Attach(string, int) (int, error) {
	return 0, errors.New("filesystem images need Linux")
}

// Detach does nothing.
func (*Images) Detach(string) error { return nil }

// Remove does nothing.
func (*Images) Remove(string, bool) error { return nil }

// Reconcile does nothing.
func (*Images) Reconcile([]string, func(string) bool) error { return nil }

// DetachAll does nothing.
func (*Images) DetachAll() error { return nil }

// Mounted is false: nothing is mounted here.
func Mounted(string) bool { return false }

// Tmpfs needs Linux.
func Tmpfs(string, int) error { return errors.New("a tmpfs workspace needs Linux") }

// Unmount does nothing: nothing is mounted here.
func Unmount(string) error { return nil }

// Move is not needed here: nothing is mounted.
func Move(string, string) error { return errors.New("moving between filesystems needs Linux") }

// Bind needs Linux.
func Bind(string, string) error { return errors.New("bind mounts need Linux") }
