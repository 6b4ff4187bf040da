package testutil

import (
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// InNetns runs fn on an OS thread that has joined the network namespace
// of pid (it needs root), so that the sockets fn makes belong to that
// namespace. The thread is thrown away afterwards, never reused.
func InNetns(t testing.TB, pid int, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		ns, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			err = unix.Setns(ns, unix.CLONE_NEWNET)
			unix.Close(ns)
		}
		if err == nil {
			err = fn()
		}
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
