//go:build linux

package monitor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// userHZ is the unit of the tick counts in /proc/<pid>/stat. The kernel fixes
// it at 100 for userspace on every architecture Go supports.
const userHZ = 100

// scanState keeps the boot time: process start times in /proc are ticks
// since boot. It is computed once per HostLister, so a process's CreateTime is
// the same in every scan and can identify it. (gopsutil derives boot time
// from /proc/uptime inside containers on every call, in whole seconds, so
// its create times move by a second between calls.)
type scanState struct {
	bootOnce sync.Once
	boot     time.Time
	bootErr  error
}

// scan reads /proc/<pid>/stat of every process: one open, read and close
// each, with raw system calls and one buffer, because this runs every second.
func (h *HostLister) scan(ctx context.Context) ([]ProcRef, error) {
	boot, err := h.bootTime()
	if err != nil {
		return nil, err
	}
	dir, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing /proc: %w", err)
	}
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return nil, fmt.Errorf("listing /proc: %w", err)
	}
	refs := make([]ProcRef, 0, len(names))
	buf := make([]byte, 2048)
	for i, name := range names {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			continue
		}
		n, err := readSmall("/proc/"+name+"/stat", buf)
		if err != nil {
			continue // exited since the directory was read
		}
		if ref, ok := parseStat(pid, buf[:n], boot); ok {
			refs = append(refs, ref)
		}
	}
	return refs, nil
}

// readSmall reads the start of path into buf. procfs produces a stat file in
// one read, and only its first fields are needed.
func readSmall(path string, buf []byte) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return n, err
	}
}

// parseStat reads ppid, pgrp and starttime from a /proc/<pid>/stat line. The
// command name (field 2) is in parentheses and may itself contain spaces and
// parentheses, so fields are counted from the last ')'.
func parseStat(pid int, line []byte, boot time.Time) (ProcRef, bool) {
	end := bytes.LastIndexByte(line, ')')
	if end < 0 || end+2 > len(line) {
		return ProcRef{}, false
	}
	// After ") ": state(3) ppid(4) pgrp(5) ... starttime(22). The
	// fields wanted are cut out in place: the sampler reads every
	// process's line at each tick, and a slice of all 50 fields for each
	// was most of what it allocated.
	var fields [20][]byte
	rest, n := line[end+2:], 0
	for n < len(fields) {
		rest = bytes.TrimLeft(rest, " \t\n")
		if len(rest) == 0 {
			return ProcRef{}, false
		}
		i := bytes.IndexAny(rest, " \t\n")
		if i < 0 {
			i = len(rest)
		}
		fields[n], rest, n = rest[:i], rest[i:], n+1
	}
	if state := string(fields[0]); state == "Z" || state == "X" {
		// Exited and waiting to be reaped: nothing runs there any more,
		// and a killed process must not linger in the list.
		return ProcRef{}, false
	}
	ppid, err1 := strconv.Atoi(string(fields[1]))
	pgrp, err2 := strconv.Atoi(string(fields[2]))
	start, err3 := strconv.ParseUint(string(fields[19]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return ProcRef{}, false
	}
	created := boot.Add(time.Duration(start) * (time.Second / userHZ))
	return ProcRef{Pid: pid, PPid: ppid, Pgid: pgrp, CreateTime: created}, true
}

// bootTime returns when the machine booted: now minus CLOCK_BOOTTIME, the
// clock the kernel measures process start times with. (The btime line of
// /proc/stat has whole seconds only.)
func (h *HostLister) bootTime() (time.Time, error) {
	h.bootOnce.Do(func() {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
			h.bootErr = fmt.Errorf("reading boot time: %w", err)
			return
		}
		h.boot = time.Now().Add(-time.Duration(ts.Nano()))
	})
	return h.boot, h.bootErr
}
