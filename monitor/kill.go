package monitor

import (
	"context"
	"fmt"
	"os"
)

// NotOwnedError is Kill's refusal: the pid is not in the sandbox's process
// tree. It is a policy answer, not a failure; callers can tell it apart with
// errors.As.
type NotOwnedError struct {
	// SandboxID is the sandbox that was asked about.
	SandboxID string
	// Pid is the refused pid.
	Pid int
}

// Error says which pid was refused for which sandbox.
func (e *NotOwnedError) Error() string {
	return fmt.Sprintf("pid %d is not one of sandbox %q's processes", e.Pid, e.SandboxID)
}

// Owns reports whether pid is in the sandbox's process tree right now. It
// lists the host's processes afresh instead of trusting the last sample, so a
// pid that exited and was reused since then is not mistaken for the
// sandbox's. If the listing fails it answers false.
func (s *Sampler) Owns(sandboxID string, pid int) bool {
	owned, err := s.owns(context.Background(), sandboxID, pid)
	return err == nil && owned
}

// owns is Owns with the listing error kept.
func (s *Sampler) owns(ctx context.Context, sandboxID string, pid int) (bool, error) {
	if pid <= 0 {
		return false, nil
	}
	roots := s.roots()[sandboxID]
	if len(roots) == 0 {
		return false, nil
	}
	refs, err := s.lister.Scan(ctx)
	if err != nil {
		return false, fmt.Errorf("listing processes: %w", err)
	}
	return newProcessTable(refs).inTree(roots, pid), nil
}

// Kill sends SIGKILL (TerminateProcess on Windows) to pid if it is in the
// sandbox's process tree, and returns a *NotOwnedError without signalling
// anything if it is not.
//
// The process handle is taken before the ownership check. On Linux with
// pidfd support and on Windows the handle pins that very process, so if the
// pid exits and is reused between check and kill, the kill fails instead of
// hitting the newcomer. Elsewhere that window is a few microseconds wide.
func (s *Sampler) Kill(sandboxID string, pid int) error {
	if pid <= 0 {
		return &NotOwnedError{SandboxID: sandboxID, Pid: pid}
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		// Windows: no such process, or no right to open it; either way
		// nothing of ours to kill.
		return fmt.Errorf("finding pid %d of sandbox %q: %w", pid, sandboxID, err)
	}
	defer proc.Release()
	owned, err := s.owns(context.Background(), sandboxID, pid)
	if err != nil {
		return fmt.Errorf("checking pid %d of sandbox %q: %w", pid, sandboxID, err)
	}
	if !owned {
		return &NotOwnedError{SandboxID: sandboxID, Pid: pid}
	}
	if err := proc.Kill(); err != nil {
		return fmt.Errorf("killing pid %d of sandbox %q: %w", pid, sandboxID, err)
	}
	return nil
}
