package bwrap

import (
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/senclaw/sandbox/backends/limits"
)

func statUID(fi os.FileInfo) int { return int(fi.Sys().(*syscall.Stat_t).Uid) }

func itoa(i int) string { return strconv.Itoa(i) }

// isZombie reports whether pid has exited but is not yet reaped.
func isZombie(pid int) bool {
	_, ok := limits.ParentPid(pid)
	if !ok {
		return true
	}
	b, _ := os.ReadFile("/proc/" + itoa(pid) + "/stat")
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}
