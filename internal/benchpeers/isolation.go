package benchpeers

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Seen is what peerprobe iso reported from inside a tool.
type Seen struct {
	// NS are the links of /proc/self/ns by name ("net": "net:[4026531833]").
	NS map[string]string `json:"ns"`
	// Procs is how many processes /proc listed.
	Procs int `json:"procs"`
	// Canary: a file outside any workspace could be read; HostWrite: a
	// host folder open to everyone could be written; Loopback: a port of
	// the host's 127.0.0.1 that nobody opened to the tool answered.
	Canary    bool `json:"canary"`
	HostWrite bool `json:"hostWrite"`
	Loopback  bool `json:"loopback"`
	UID       int  `json:"uid"`
}

// ParseSeen reads peerprobe iso's output.
func ParseSeen(out []byte) (Seen, error) {
	var s Seen
	if err := json.Unmarshal(out, &s); err != nil {
		return s, fmt.Errorf("reading the probe's report %q: %v", out, err)
	}
	if len(s.NS) == 0 {
		return s, fmt.Errorf("the probe saw no /proc/self/ns: %q", out)
	}
	return s, nil
}

// HostNS is this process's namespaces, to compare a tool's with.
func HostNS() map[string]string {
	ns := map[string]string{}
	for _, n := range []string{"net", "pid", "mnt", "user", "ipc", "uts", "cgroup"} {
		if l, err := os.Readlink("/proc/self/ns/" + n); err == nil {
			ns[n] = l
		}
	}
	return ns
}

// Describe is s in words, its namespaces against host's: which are the
// tool's own, what it could see and reach of the host.
func (s Seen) Describe(host map[string]string) string {
	var own, shared []string
	for _, n := range []string{"net", "pid", "mnt", "user", "ipc", "uts", "cgroup"} {
		switch l, ok := s.NS[n]; {
		case !ok:
		case l != host[n]:
			own = append(own, n)
		default:
			shared = append(shared, n)
		}
	}
	words := func(l []string) string {
		if len(l) == 0 {
			return "none"
		}
		return strings.Join(l, ",")
	}
	yes := func(b bool, y, n string) string {
		if b {
			return y
		}
		return n
	}
	return fmt.Sprintf("own ns: %s; host's: %s; sees %d process(es); uid %d; a file in /home: %s; a host dir open to all: %s; an unopened 127.0.0.1 port: %s",
		words(own), words(shared), s.Procs, s.UID, yes(s.Canary, "read", "hidden"), yes(s.HostWrite, "written", "not writable"), yes(s.Loopback, "reached", "unreachable"))
}
