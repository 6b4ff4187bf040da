package limits

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// StartInside runs start, which forks the run's first process
// (exec.Cmd.Start), on an OS thread that is a member of the run's cgroups
// meanwhile: the process is born in them, and none has to be moved. On
// cgroup v1 moving a process (writing its pid to cgroup.procs) takes a
// global lock whose writer waits for an RCU grace period, milliseconds and
// more on a busy machine; a thread joins cgroups itself (0 in their tasks
// files) without it. It reports whether the process was born inside;
// when it was not (cgroup v2, the main thread, which owns the process's
// memory charge, or a refused write), the caller moves it with Add.
//
// Only for a run whose own cgroups hold nothing else yet (every run's,
// a persistent sandbox's too: each run has cgroups of its own under the
// sandbox's): while the thread is in them it counts in their limits and
// the sandbox's (one process and the kernel memory of the fork; a
// sandbox at its pids limit refuses the fork, as it would refuse the
// run's first fork inside), and the run's processes are listed and
// killed without it (Procs never names the engine).
func (cg *Cgroups) StartInside(start func() error) (inside bool, err error) {
	if cg.version != 1 || len(cg.mounts) == 0 {
		return false, start()
	}
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		// The main thread stays where it is; another does it, which cannot
		// be this one while it is locked to this goroutine.
		type result struct {
			inside bool
			err    error
		}
		done := make(chan result)
		go func() {
			inside, err := cg.startInside(start)
			done <- result{inside, err}
		}()
		r := <-done
		runtime.UnlockOSThread()
		return r.inside, r.err
	}
	runtime.UnlockOSThread()
	return cg.startInside(start)
}

// startInside is StartInside on a thread other than the main one.
func (cg *Cgroups) startInside(start func() error) (inside bool, err error) {
	runtime.LockOSThread()
	leave, err := cg.JoinThread()
	if err != nil {
		return false, err // locked: never reused, the thread ends with this goroutine
	}
	if leave == nil {
		runtime.UnlockOSThread()
		return false, start()
	}
	err = start()
	if lerr := leave(); lerr != nil {
		return err == nil, lerr
	}
	runtime.UnlockOSThread()
	return err == nil, err
}

// JoinThread moves the calling thread, which must be locked to its
// goroutine, into the run's cgroups (cgroup v1), so that the first process
// it forks is born in them; leave puts it back where it was. A nil leave
// (and no error) means it did not join and nothing changed: cgroup v2, the
// main thread (which owns the process's memory charge), or a refused
// write, undone. An error means the thread is in cgroups it could not
// leave: it must never serve another goroutine (keep it locked until its
// goroutine ends, which ends it).
func (cg *Cgroups) JoinThread() (leave func() error, err error) {
	if cg.version != 1 || len(cg.mounts) == 0 || unix.Gettid() == unix.Getpid() {
		return nil, nil
	}
	home, err := threadCgroups(cg.mounts)
	if err != nil {
		return nil, nil
	}
	var joined []string
	back := func() error {
		var errs []error
		for _, c := range joined {
			errs = append(errs, joinSelf(home[c]))
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("an engine thread could not leave a run's cgroups: %w", err)
		}
		return nil
	}
	for c, dir := range cg.dirs {
		if home[c] == "" {
			break
		}
		if err := joinSelf(dir); err != nil {
			break
		}
		joined = append(joined, c)
	}
	if len(joined) < len(cg.dirs) {
		return nil, back()
	}
	return back, nil
}

// joinSelf moves the calling thread into the v1 cgroup dir.
func joinSelf(dir string) error {
	return writeSmall(filepath.Join(dir, "tasks"), []byte("0"))
}

// threadCgroups maps each controller of mounts to the directory of the
// calling thread's cgroup in its hierarchy.
func threadCgroups(mounts map[string]string) (map[string]string, error) {
	return cgroupsIn("/proc/thread-self/cgroup", mounts)
}

// cgroupsIn reads a /proc/.../cgroup file the same way. It runs for
// every run on cgroup v1: one read into a small buffer (the file is a
// line a hierarchy), the whole file only when it is larger.
func cgroupsIn(file string, mounts map[string]string) (map[string]string, error) {
	buf, err := readSmall(file, 1024)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(mounts))
	for len(buf) > 0 {
		var line []byte
		line, buf, _ = bytes.Cut(buf, []byte("\n"))
		_, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		ctrls, path, ok := bytes.Cut(rest, []byte(":"))
		if !ok {
			continue
		}
		for len(ctrls) > 0 {
			var c []byte
			c, ctrls, _ = bytes.Cut(ctrls, []byte(","))
			if mnt, ok := mounts[string(c)]; ok {
				out[string(c)] = filepath.Join(mnt, string(path))
			}
		}
	}
	return out, nil
}
