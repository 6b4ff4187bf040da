package landlock

import (
	"fmt"
	"strings"

	"github.com/senclaw/sandbox/backends"
)

// Enforcement in words, for the run record and its note.
const (
	fsHeld       = "fs: Landlock ABI %d: writes only to the workspace and the read-write mounts, reads by the fs mode; TMPDIR in the workspace"
	noSockets    = "network: off: no socket can be made (seccomp) and no TCP port reached (Landlock)"
	netProxied   = "network: TCP only, and only to the run's own door to the engine's proxy at 127.0.0.1:%d, which relays only connections whose socket a process of the run holds (other users' and host processes' are closed and counted) and applies the port, domain and address rules; UDP, raw, packet and Unix sockets are refused (seccomp)"
	scoped       = "signals and abstract Unix sockets: scoped to the sandbox (Landlock ABI 6)"
	otherProcs   = "other processes: ptrace, and /proc/PID/environ, mem and the files behind fd of processes outside the sandbox, are refused (Landlock's domain check, even for root), and so is changing their limits, priority or scheduling (seccomp)"
	seccompHeld  = "seccomp: namespaces, mounts, ptrace, keyrings, System V IPC and POSIX message queues (this machine's, without an IPC namespace), io_uring, bpf and terminal injection refused"
	procsVisible = "processes: /proc lists every process of this machine with its command line (Landlock has no pid namespace); their environment, memory and open files stay out of reach"
	notScoped    = "signals: not scoped (Landlock ABI %d, scoping needs ABI 6, Linux 6.12): the run may signal other processes of its user"
	loopbackVia  = "loopback ports: reached through the proxy only (HTTP or SOCKS5 at 127.0.0.1:%d), which applies the loopback rule; a direct connect to 127.0.0.1:PORT is refused"
	anyHost      = "network: Landlock's TCP rules name ports, not addresses, and this kernel cannot run the engine's connect guard (%s): code that ignores the proxy may connect to port %d on any other host as well"
	addressHeld  = "network: the engine answers the run's connect, bind and listen calls (seccomp user notification): a connect reaches only 127.0.0.1:%d, not that port on another host, and a socket is bound, and listens, only on a loopback address"
	listenOpen   = "listen ports: bound in this machine's network, on whatever address the code picks: 0.0.0.0 is reachable from the LAN (and so is the random port a listen() without a bind opens); only a bind to 127.0.0.1 stays on this machine"
	noList       = "fs: the directories on the way to a hidden or masked path cannot be listed (Landlock grants their entries one by one)"
	nprocShared  = "pids: without a writable cgroup, RLIMIT_NPROC counts every process of the sandbox user on this machine; it is set to the ones that user had at the start plus the sandbox's limit, so the bound is approximate"
	unprotected  = "agents' and git's files: Landlock cannot keep a file inside a writable folder read-only, so this run may change %s, which programs on this machine run code from (agents' settings, git's config and hooks); use the bwrap backend for agents' projects"
	supervised   = "kill: without a writable cgroup, the helper stays, confined like the command, as the run's parent and subreaper: what the command leaves (setsid and double forks included) ends with it"
)

// enforced lists what held for a prepared run, besides the limits.
func enforced(r *prepared) []string {
	s := r.setup
	out := []string{fmt.Sprintf(fsHeld, s.ABI), seccompHeld}
	if r.relay != nil {
		out = append(out, fmt.Sprintf(netProxied, r.relay.port))
		if r.guard != nil {
			out = append(out, fmt.Sprintf(addressHeld, r.relay.port))
		}
	} else {
		out = append(out, noSockets)
	}
	if s.ABI >= 6 {
		out = append(out, scoped)
	}
	return append(out, otherProcs)
}

// missing lists what Landlock does not give a run of spec, in words.
func missing(abi int, spec *backends.Spec, r *prepared) []string {
	out := []string{procsVisible}
	if abi < 6 {
		out = append(out, fmt.Sprintf(notScoped, abi))
	}
	if r.relay != nil {
		if r.guard == nil {
			out = append(out, fmt.Sprintf(anyHost, r.noGuard, r.relay.port))
		}
		if len(spec.Ports.Loopback) > 0 {
			out = append(out, fmt.Sprintf(loopbackVia, r.relay.port))
		}
		if len(r.setup.BindTCP) > 0 && r.guard == nil {
			out = append(out, listenOpen)
		}
	}
	if spec.FsMode == backends.FsOpen || len(spec.Masked) > 0 {
		out = append(out, noList)
	}
	if len(spec.Protected) > 0 {
		out = append(out, fmt.Sprintf(unprotected, strings.Join(spec.Protected, ", ")))
	}
	if len(spec.Mounts) > 0 {
		var at []string
		for _, m := range spec.Mounts {
			at = append(at, m.Target+" -> "+m.Source)
		}
		out = append(out, "mounts: at their own host paths (Landlock cannot move a directory), with a symlink at each target: "+strings.Join(at, ", "))
	}
	return out
}
