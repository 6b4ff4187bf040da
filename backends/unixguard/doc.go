// Package unixguard keeps the host's pathname Unix sockets out of a
// sandbox's reach.
//
// The sockets the sandbox makes in its own places, the engine's proxy socket
// and the sockets the owner names stay reachable.
//
// # Why a guard is needed
//
// A sandbox's own network namespace does not apply to pathname Unix
// sockets: connect() finds them through the filesystem, and connecting to a
// socket inode is allowed on a read-only bind mount. Whatever socket a
// sandbox can see (a world-writable one under /var/tmp, MySQL's under
// /var/lib/mysql, one in an allowlisted folder or in a mount) accepts its
// connections. Landlock on the kernels we support (ABI 7) cannot restrict
// connect() to them, so the guard is built on seccomp user notification,
// with the engine as the supervisor.
//
// # Which runs
//
// Every bwrap run, in every fs mode: open mode shows the whole disk (any
// socket outside /run: /var/tmp, /var/lib/mysql, /home, /srv), allowlist
// mode the listed folders, strict mode its mounts, /opt and /etc, and a
// workspace may be a project folder a host program keeps a socket in. The
// backends/bwrap backend does it when Spec.UnixGuard is set, and the
// engine sets it for every bwrap run. Landlock runs with network, which
// have no network namespace, load it too (InstallThread, from the
// Landlock helper), with inet rules (Policy.Inet): their connect, bind
// and listen calls go to the engine, which connects only to the run's
// door to the proxy and binds listen ports on loopback only, since
// Landlock's TCP rules name ports, not addresses. A Docker container sees only its
// image, the workspace and its mounts, and is not guarded: its note says
// that sockets in those are reachable. The direct backend enforces
// nothing.
//
// # How
//
// The forwarder senclaw-netfwd (backends/netfwd), the first program of the
// sandbox, calls Install before any sandboxed code runs. Install loads a
// filter (Program) for every thread of the process, with a listener
// (SECCOMP_FILTER_FLAG_NEW_LISTENER), sends the listener to the engine over
// a socket pair the engine passed in as an inherited descriptor (never a
// socket in a directory the sandbox can reach, so no other run can offer a
// listener of its own), closes its copy and waits for the engine's
// go-ahead; only then does the sandboxed command start. The engine's side,
// Handoff.Accept, checks the sender (SCM_CREDENTIALS: a process of this run
// as the sandbox user) and the descriptor (a seccomp listener), learns the
// sandbox's own places (below), and serves the listener until the last
// process of the run is gone.
//
// A bwrap run that needs the forwarder for nothing else (network off, no
// terminal, not traced) goes without it (Direct): the engine loads the
// same filter itself, for one OS thread of its own that then starts bwrap
// and nothing else, so that bwrap and everything under it inherit it; the
// engine keeps the listener, learns the places from bwrap's child once
// the sandbox is built, and the thread ends once bwrap has (the Go
// runtime ends a thread whose goroutine returns locked, and clones no
// thread from a locked one), so no other thread of the engine is ever
// under the filter.
//
// The filter makes every connect() a notification, refuses socket() and
// socketpair() of AF_UNIX datagram sockets with EACCES, refuses a second
// listener with EBUSY (the kernel does too), fails x32 calls with ENOSYS
// and kills a process that uses a foreign system call ABI.
//
// # No check-then-continue
//
// The guard never answers SECCOMP_USER_NOTIF_FLAG_CONTINUE after looking at
// the caller's memory: another thread could rewrite the sockaddr, or dup2
// another socket onto the descriptor, between the check and the kernel's
// own read. The engine does the connect itself instead, with the address
// bytes it read and checked (one copy, process_vm_readv), on the sandbox's
// own socket object (pidfd_getfd), and answers with the result: 0 or
// -errno, EINPROGRESS for a non-blocking socket, and so on. A socket keeps
// the network namespace it was made in, so an inet connect done by the
// engine still happens in the sandbox's namespace and reaches what the
// sandbox could reach, no more. If another thread swapped the descriptor,
// the socket now connected is still one of the sandbox's, and it is
// connected only to the address that was checked. The caller's task is
// checked with SECCOMP_IOCTL_NOTIF_ID_VALID after everything was read from
// it and before anything is done, so a recycled pid cannot stand in for it.
//
// # Which Unix sockets
//
// A pathname is resolved in the sandbox's mount namespace (from its root,
// the descriptor of /proc/PID/root taken at the handoff, or from the
// calling thread's /proc/TID/cwd for a relative name) with openat2 and
// RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS (RESOLVE_IN_ROOT from the
// root), so no link that the sandbox planted is followed: a path that goes
// through a symlink is refused, whatever it points to. What decides is
// where the socket found lives, not how the path reads: its mount (statx
// STATX_MNT_ID) must be one of the sandbox's own, found at the handoff,
// when no sandboxed code has run yet:
//   - the workspace's bind mount (the very directory the engine bound: same
//     device and inode, and a mount root); read-only and read-write mounts
//     inside the workspace are mounts of their own and do not count;
//   - the sandbox's private /tmp (a tmpfs of its own, not the host's);
//   - the plumbing directory, where the engine's proxy socket and the
//     forwarder's own listen sockets are (same device and inode as the
//     engine's directory).
//
// The settings' allowedSockets (Policy.Sockets) are reached by their host
// path, named exactly, resolved on the host without following links, in
// every fs mode, also where the sandbox cannot see the file. Everything
// else gets EACCES, the errno connect() gives for a socket the caller may
// not write, which programs already report as "permission denied".
// Abstract and unnamed addresses are connected as asked: abstract sockets
// belong to a network namespace, and the socket is the sandbox's. inet and
// inet6 addresses are connected as asked, in the sandbox's namespace;
// netlink only without multicast groups; every other family gets EACCES.
//
// # As whom
//
// The peer of a Unix socket takes the connecting task's credentials at
// connect time (SO_PEERCRED), and the socket file's write permission (and
// the search permission of every directory on the way) is checked against
// them: a root engine connecting would let the sandbox reach root's
// sockets and show root to the server. So everything an answer does
// (reading the caller's address, taking its socket, opening its working
// directory, resolving, connecting) is done with the sandbox user's
// credentials, and it can do nothing the sandbox could not; only the
// sandbox's root is opened by the engine itself, at the handoff. The peer
// sees the engine's pid with the sandbox user's uid and gid.
//
// A root engine answers on locked OS threads that set their own
// credentials (setgroups, setresgid, setresuid as raw per-thread system
// calls, not Go's process-wide ones), never change back and never end:
// the goroutine that locked the thread serves the guard for the engine's
// life, so no other goroutine ever runs with the sandbox user's identity,
// the Go runtime does not clone new threads from a locked one, and no
// process that the thread forked before (bwrap, whose --die-with-parent
// follows the thread that forked it) is killed by its end. There are at
// most 64 such threads per sandbox user, started on demand and shared by
// all runs; a run has at most 16 answers under way, so a run whose
// connects block (a socket whose backlog is full: the connect waits until
// the server accepts, or dies with its sandbox) cannot hold up the others.
// A caller waits for its answer; once the engine has taken its call
// (SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, Linux 5.19) only SIGKILL
// interrupts the wait, so the engine's connect and the caller's result
// never part ways (on older kernels a signal restarts the call, which
// then finds the socket connected or connecting: EISCONN, EALREADY).
// Threads rather than a helper process: no extra process to start, watch
// and reap, and no second hop per connect; the cost is the engine process
// becoming non-dumpable (the kernel does that on any change of
// credentials). An engine that runs as the sandbox user answers on
// goroutines.
//
// # Datagrams and other ways around connect
//
// An AF_UNIX datagram socket can send to any path with sendto() or
// sendmsg() without connect(), even one made by socketpair(); the address
// of sendmsg() is in memory seccomp cannot read. So no such socket may
// exist: socket() and socketpair() with AF_UNIX and any type but
// SOCK_STREAM and SOCK_SEQPACKET get EACCES (SOCK_RAW makes a datagram
// socket for AF_UNIX). Stream and seqpacket sockets refuse an address on
// send. io_uring (which could connect or send without these system
// calls), ptrace, process_vm_writev, chroot, mount, pivot_root, setns and
// namespace creation are refused by the base filter (backends/seccompfilter)
// that every bwrap sandbox runs under; socketcall does not exist on the
// architectures the guard supports (amd64, arm64), and a foreign ABI is
// killed. A descriptor passed in over SCM_RIGHTS by a host service that
// the sandbox may reach is outside the guard.
//
// # Fail closed
//
// A run that should be guarded and cannot be (the forwarder cannot load the
// filter, the handoff fails or is not what it should be) is refused with
// the reason. If the engine's supervisor goes away, the filter's
// notifications fail with ENOSYS: connect() fails, it never goes through
// unchecked. Where the kernel lacks what the guard needs (Probe: user
// notification, pidfd_getfd, openat2, statx mount ids, a Yama
// ptrace_scope below 3), runs go on without it, and the capability card,
// the sandbox's note and the run's record say plainly that pathname
// sockets are reachable. (Landlock's LANDLOCK_ACCESS_FS_RESOLVE_UNIX, in
// kernels past ABI 7, would do this without a supervisor.)
//
// # Cost
//
// Each connect() of a guarded sandbox costs a round trip to the engine
// and a dozen system calls there (tens of microseconds; `make bench`
// prints the figures: TestBenchUnixGuard in app); a run's start costs one
// more exec (the forwarder) and the handoff where the forwarder runs,
// and next to nothing where the engine loads the guard itself (Direct). No other system call is slowed down.
package unixguard
