package direct

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/senclaw/sandbox/backends"
)

func lookIn(argv0, pathList string) (string, error) {
	if p, ok := backends.FindExecutable(argv0, pathList); ok {
		return p, nil
	}
	return "", fmt.Errorf("%s: command not found on PATH %s", argv0, pathList)
}

// groupPids lists the processes of process group pgid by scanning /proc.
// Where there is no /proc it returns just the leader.
func groupPids(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return []int{pgid}
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the command name (which may contain spaces):
		// state, ppid, pgrp, session, ...
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) {
			out = append(out, pid)
		}
	}
	return out
}
