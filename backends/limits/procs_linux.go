package limits

import (
	"os"
	"strconv"
	"strings"
)

// Descendants returns root and all its Descendants found in /proc, for
// runs without a cgroup.
func Descendants(root int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := ParentPid(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(root)); err != nil {
		return nil
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// ParentPid reads the parent pid from /proc/PID/stat. The command name
// may contain spaces and parentheses, so parsing starts after the last ')'.
func ParentPid(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}
