// Package vmtest holds the engine's tests that boot a systemd VM.
//
// They are a package apart from app/daemon's tests so that go test
// runs the VM (minutes of emulated boot on a machine without KVM) at the
// same time as app/daemon's own tests instead of after them.
package vmtest
