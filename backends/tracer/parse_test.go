package tracer

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
)

// Lines recorded from strace 6.1 (-f -qq -ttt -yy) on Debian 12.
func TestClassifyRecordedLines(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		line string
		want *backends.TraceEvent // nil: no event
	}{
		{"open_read", `26329 1795952917.693872 openat(AT_FDCWD</tmp/tx/ws>, "/tmp/tx/ws/t.py", O_RDONLY) = 3</tmp/tx/ws/t.py>`,
			&backends.TraceEvent{TimeMs: 1795952917693, Pid: 26329, Kind: KindRead, Target: "/tmp/tx/ws/t.py"}},
		{"open_relative_write", `26329 1795952917.712685 openat(AT_FDCWD</tmp/tx/ws>, "out1.txt", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0666) = 3</tmp/tx/ws/out1.txt>`,
			&backends.TraceEvent{Pid: 26329, Kind: KindWrite, Target: "/tmp/tx/ws/out1.txt", Detail: "opened O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC"}},
		{"open_rdwr_legacy", `7 1.000001 open("/tmp/x", O_RDWR) = 4</tmp/x>`,
			&backends.TraceEvent{Pid: 7, Kind: KindWrite, Target: "/tmp/x", Detail: "opened O_RDWR"}},
		{"creat", `7 1.000001 creat("/newroot/dev/null", 0444) = 5</newroot/dev/null>`,
			&backends.TraceEvent{Pid: 7, Kind: KindWrite, Target: "/newroot/dev/null", Detail: "opened O_WRONLY|O_CREAT|O_TRUNC"}},
		{"openat2", `7 1.000001 openat2(AT_FDCWD</w>, "a", {flags=O_RDONLY|O_CLOEXEC, resolve=0}, 24) = 3</w/a>`,
			&backends.TraceEvent{Pid: 7, Kind: KindRead, Target: "/w/a"}},
		{"device_numbers_dropped", `7 1.0 openat(AT_FDCWD</w>, "/dev/null", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3</dev/null<char 1:3>>`,
			&backends.TraceEvent{Pid: 7, Kind: KindWrite, Target: "/dev/null", Detail: "opened O_WRONLY|O_CREAT|O_TRUNC"}},
		{"enoent_is_not_an_event", `26329 1795952917.7 openat(AT_FDCWD</w>, "/usr/lib/python3.11/x.py", O_RDONLY) = -1 ENOENT (No such file or directory)`, nil},
		{"directory_listing_is_not_a_read", `26329 1795952917.694243 openat(AT_FDCWD</tmp/tx/ws>, "/tmp/tx/ws", O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY) = 3</tmp/tx/ws>`, nil},
		{"o_path_is_not_a_read", `26328 1795952917.665106 openat(AT_FDCWD</>, "/newroot/usr", O_RDONLY|O_CLOEXEC|O_PATH) = 5</newroot/usr>`, nil},
		{"erofs_is_denied", `26329 1795952917.721226 openat(AT_FDCWD</tmp/tx/ws>, "/etc/x", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0666) = -1 EROFS (Read-only file system)`,
			&backends.TraceEvent{Pid: 26329, Kind: KindDenied, Target: "/etc/x", Detail: "openat for write: EROFS"}},
		{"eacces_relative_is_denied", `9 2.5 openat(3</proc>, "1/environ", O_RDONLY) = -1 EACCES (Permission denied)`,
			&backends.TraceEvent{Pid: 9, Kind: KindDenied, Target: "/proc/1/environ", Detail: "openat for read: EACCES"}},
		{"tcp_connect_refused", `26329 1795952917.721390 connect(3<TCP:[73079]>, {sa_family=AF_INET, sin_port=htons(1), sin_addr=inet_addr("127.0.0.1")}, 16) = -1 ECONNREFUSED (Connection refused)`,
			&backends.TraceEvent{Pid: 26329, Kind: KindConnect, Target: "127.0.0.1:1", Detail: "failed: ECONNREFUSED"}},
		{"tcp6_connect", `5 1.0 connect(3<TCPv6:[1]>, {sa_family=AF_INET6, sin6_port=htons(8080), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = 0`,
			&backends.TraceEvent{Pid: 5, Kind: KindConnect, Target: "[::1]:8080", Detail: "connected"}},
		{"unix_connect", `5 1.0 connect(4<UNIX:[99]>, {sa_family=AF_UNIX, sun_path="/run/x.sock"}, 110) = 0`,
			&backends.TraceEvent{Pid: 5, Kind: KindConnect, Target: "unix:/run/x.sock", Detail: "connected"}},
		{"abstract_unix_connect", `5 1.0 connect(4<UNIX:[99]>, {sa_family=AF_UNIX, sun_path=@"bus"}, 6) = -1 ENOENT (No such file or directory)`,
			&backends.TraceEvent{Pid: 5, Kind: KindConnect, Target: "unix:@bus", Detail: "failed: ENOENT"}},
		{"nonblocking_connect", `5 1.0 connect(4<TCP:[9]>, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("10.0.0.1")}, 16) = -1 EINPROGRESS (Operation now in progress)`,
			&backends.TraceEvent{Pid: 5, Kind: KindConnect, Target: "10.0.0.1:443", Detail: "connecting (non-blocking)"}},
		{"tcp_bind_is_a_listen_port", `5 1.0 bind(3<TCP:[7593750]>, {sa_family=AF_INET, sin_port=htons(8080), sin_addr=inet_addr("127.0.0.1")}, 16) = 0`,
			&backends.TraceEvent{Pid: 5, Kind: KindListen, Target: "127.0.0.1:8080", Detail: "bound (a server's port)"}},
		{"tcp6_bind", `5 1.0 bind(4<TCPv6:[7593753]>, {sa_family=AF_INET6, sin6_port=htons(18081), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::", &sin6_addr), sin6_scope_id=0}, 28) = 0`,
			&backends.TraceEvent{Pid: 5, Kind: KindListen, Target: "[::]:18081", Detail: "bound (a server's port)"}},
		{"bind_port_0_is_not_a_listen_port", `5 1.0 bind(3<TCP:[1]>, {sa_family=AF_INET, sin_port=htons(0), sin_addr=inet_addr("127.0.0.1")}, 16) = 0`, nil},
		{"udp_bind_is_not_a_listen_port", `5 1.0 bind(3<UDP:[1]>, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("127.0.0.1")}, 16) = 0`, nil},
		{"refused_bind_is_denied", `5 1.0 bind(3<TCP:[1]>, {sa_family=AF_INET, sin_port=htons(80), sin_addr=inet_addr("0.0.0.0")}, 16) = -1 EACCES (Permission denied)`,
			&backends.TraceEvent{Pid: 5, Kind: KindDenied, Target: "0.0.0.0:80", Detail: "bind: EACCES"}},
		{"bind_in_use_is_not_an_event", `5 1.0 bind(3<TCP:[1]>, {sa_family=AF_INET, sin_port=htons(80), sin_addr=inet_addr("0.0.0.0")}, 16) = -1 EADDRINUSE (Address already in use)`, nil},
		{"netlink_is_not_a_connect", `5 1.0 connect(4<NETLINK:[1]>, {sa_family=AF_NETLINK, nl_pid=0, nl_groups=00000000}, 12) = 0`, nil},
		{"execve", `26330 1.0 execve("/bin/true", ["/bin/true", "a b", "it's"], 0x7fff79058730 /* 35 vars */) = 0`,
			&backends.TraceEvent{Pid: 26330, Kind: KindSpawn, Target: "/bin/true", Detail: `/bin/true 'a b' 'it'\''s'`}},
		{"execve_search_miss", `5 1.0 execve("/usr/local/bin/ls", ["ls"], 0x1 /* 3 vars */) = -1 ENOENT (No such file or directory)`, nil},
		{"execve_truncated_argv", `5 1.0 execve("/bin/echo", ["echo", "aaaa"...], 0x1 /* 3 vars */) = 0`,
			&backends.TraceEvent{Pid: 5, Kind: KindSpawn, Target: "/bin/echo", Detail: "echo aaaa …"}},
		{"rename", `26329 1.0 rename("out1.txt", "out3.txt") = 0`,
			&backends.TraceEvent{Pid: 26329, Kind: KindWrite, Target: "out3.txt", Detail: "renamed from out1.txt"}},
		{"renameat2", `5 1.0 renameat2(AT_FDCWD</w>, "a", AT_FDCWD</w>, "b", RENAME_NOREPLACE) = 0`,
			&backends.TraceEvent{Pid: 5, Kind: KindWrite, Target: "/w/b", Detail: "renamed from /w/a"}},
		{"unlinkat_dir", `5 1.0 unlinkat(AT_FDCWD</w>, "d", AT_REMOVEDIR) = 0`,
			&backends.TraceEvent{Pid: 5, Kind: KindWrite, Target: "/w/d", Detail: "removed directory"}},
		{"unlink_denied", `5 1.0 unlink("/usr/bin/ls") = -1 EROFS (Read-only file system)`,
			&backends.TraceEvent{Pid: 5, Kind: KindDenied, Target: "/usr/bin/ls", Detail: "unlink (deleted): EROFS"}},
		{"mkdirat", `5 1.0 mkdirat(AT_FDCWD</w>, "new dir", 0777) = 0`,
			&backends.TraceEvent{Pid: 5, Kind: KindWrite, Target: "/w/new dir", Detail: "created directory"}},
		{"symlinkat", `5 1.0 symlinkat("/etc/passwd", AT_FDCWD</w>, "p") = 0`,
			&backends.TraceEvent{Pid: 5, Kind: KindWrite, Target: "/w/p", Detail: "symlink to /etc/passwd"}},
		{"escaped_path", `5 1.0 openat(AT_FDCWD</w>, "a\"b\nc\303\251", O_RDONLY) = 3</w/a"b\nc\303\251>`,
			&backends.TraceEvent{Pid: 5, Kind: KindRead, Target: "/w/a\"b\ncé"}},
		{"io_uring_denied", `5 1.0 io_uring_setup(8, 0x7ffe) = -1 EPERM (Operation not permitted)`,
			&backends.TraceEvent{Pid: 5, Kind: KindDenied, Target: "io_uring_setup", Detail: "io_uring_setup: EPERM"}},
		{"exit_note", `5 1.0 +++ exited with 0 +++`, nil},
		{"killed_mid_call", `5 1.0 openat(AT_FDCWD</w>, "x", O_RDONLY) = ?`, nil},
		{"garbage", `strace: Process 5 attached`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var p Parser
			c, ok := p.Line(tc.line)
			var got *backends.TraceEvent
			if ok {
				if ev, ok := Classify(&c); ok {
					got = &ev
				}
			}
			switch {
			case tc.want == nil && got != nil:
				t.Fatalf("got %+v, want no event", *got)
			case tc.want == nil:
				return
			case got == nil:
				t.Fatalf("no event (call %+v ok %v), want %+v", c, ok, *tc.want)
			}
			want := *tc.want
			want.Source = SourceStrace
			if want.TimeMs == 0 {
				want.TimeMs = got.TimeMs
			}
			if *got != want {
				t.Fatalf("got  %+v\nwant %+v", *got, want)
			}
		})
	}
}

func TestUnfinishedAndResumedPair(t *testing.T) {
	t.Parallel()
	lines := []string{
		`26329 1795952917.713266 vfork( <unfinished ...>`,
		`26330 1795952917.719838 execve("/bin/true", ["/bin/true"], 0x7fff79058730 /* 35 vars */ <unfinished ...>`,
		`26329 1795952917.720050 <... vfork resumed>) = 3`,
		`26331 1795952917.720051 openat(AT_FDCWD</w>, "in", O_RDONLY <unfinished ...>`,
		`26330 1795952917.720242 <... execve resumed>) = 0`,
		`26331 1795952917.720300 <... openat resumed>) = 4</w/in>`,
	}
	var p Parser
	var got []string
	for _, l := range lines {
		c, ok := p.Line(l)
		if !ok {
			continue
		}
		if ev, ok := Classify(&c); ok {
			got = append(got, ev.Kind+" "+ev.Target)
			if ev.Kind == KindSpawn && ev.TimeMs != 1795952917719 {
				t.Fatalf("a resumed call keeps its start time: %d", ev.TimeMs)
			}
		}
	}
	want := "proc.spawn /bin/true,file.read /w/in"
	if strings.Join(got, ",") != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestFollowDropsTheLaunch(t *testing.T) {
	t.Parallel()
	// setpriv, then bwrap (its mkdirs and opens), then the command; the
	// reaper (26328) keeps running after the command started.
	out := strings.Join([]string{
		`26327 1.0 execve("/usr/bin/setpriv", ["setpriv", "--reuid=65534"], 0x1 /* 3 vars */) = 0`,
		`26327 1.1 openat(AT_FDCWD</tmp>, "/etc/passwd", O_RDONLY|O_CLOEXEC) = 3</etc/passwd>`,
		`26327 1.2 execve("/usr/bin/bwrap", ["/usr/bin/bwrap", "--"], 0x1 /* 3 vars */) = 0`,
		`26328 1.3 mkdir("/newroot/usr", 0755) = 0`,
		`26329 1.4 execve("/usr/bin/python3", ["/usr/bin/python3", "t.py"], 0x1 /* 3 vars */) = 0`,
		`26328 1.5 openat(3</proc>, "self/fd", O_RDONLY|O_CLOEXEC) = 5</proc/26328/fd>`,
		`26329 1.6 openat(AT_FDCWD</w>, "in.txt", O_RDONLY|O_CLOEXEC) = 3</w/in.txt>`,
		`26330 1.7 execve("/bin/true", ["/bin/true"], 0x1 /* 3 vars */) = 0`,
		"",
	}, "\n")
	var got []string
	err := Follow(strings.NewReader(out), 2, func(ev backends.TraceEvent) {
		got = append(got, ev.Kind+" "+ev.Target)
	})
	want := "proc.spawn /usr/bin/python3,file.read /w/in.txt,proc.spawn /bin/true"
	if err != nil || strings.Join(got, ",") != want {
		t.Fatalf("got %q (%v), want %q", got, err, want)
	}
}

// The forwarder is a Go program: it may exec the command from a thread
// other than its leader. strace then resumes the execve under the
// leader's pid after a "superseded" note (strace 6.1 with a garbage
// errno, though the exec succeeded), or prints it whole under the
// thread's pid; either way the command is opened and its calls (under
// the leader's pid) kept.
func TestFollowAThreadsExec(t *testing.T) {
	t.Parallel()
	launch := []string{
		`100 1.0 execve("/usr/bin/bwrap", ["/usr/bin/bwrap", "--"], 0x1 /* 3 vars */) = 0`,
		`101 1.1 mkdir("/newroot/usr", 0755) = 0`,
		`102 1.2 execve("/usr/lib/senclaw/senclaw-netfwd", ["senclaw-netfwd"], 0x1 /* 3 vars */) = 0`,
		`102 1.3 openat(AT_FDCWD</>, "/etc/hosts", O_RDONLY|O_CLOEXEC) = 3</etc/hosts>`,
	}
	after := []string{
		`102 1.7 openat(AT_FDCWD</w>, "in.txt", O_RDONLY|O_CLOEXEC) = 3</w/in.txt>`,
		`101 1.8 openat(3</proc>, "self/fd", O_RDONLY|O_CLOEXEC) = 5</proc/101/fd>`,
		`102 1.9 execve("/bin/true", ["/bin/true"], 0x1 /* 3 vars */) = 0`,
		"",
	}
	for name, exec := range map[string][]string{
		"resumed under the leader": {
			`105 1.4 execve("/usr/bin/python3", ["/usr/bin/python3", "t.py"], 0x1 /* 3 vars */ <unfinished ...>`,
			`102 1.5 +++ superseded by execve in pid 105 +++`,
			`102 1.6 <... execve resumed>) = 0`,
		},
		"strace 6": {
			`105 1.4 execve("/usr/bin/python3", ["/usr/bin/python3", "t.py"], 0x1 /* 3 vars */ <pid changed to 102 ...>`,
			`102 1.5 +++ superseded by execve in pid 105 +++`,
			`102 1.6 <... execve resumed>) = -1 (errno 18446744073709551359)`,
		},
		"whole under the thread": {
			`105 1.4 execve("/usr/bin/python3", ["/usr/bin/python3", "t.py"], 0x1 /* 3 vars */) = 0`,
			`102 1.5 +++ superseded by execve in pid 105 +++`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			out := strings.Join(append(append(slices.Clone(launch), exec...), after...), "\n")
			var got []string
			err := Follow(strings.NewReader(out), 2, func(ev backends.TraceEvent) { got = append(got, ev.Kind+" "+ev.Target) })
			want := "proc.spawn /usr/bin/python3,file.read /w/in.txt,proc.spawn /bin/true"
			if err != nil || strings.Join(got, ",") != want {
				t.Fatalf("got %q (%v), want %q", got, err, want)
			}
		})
	}
}

// A line longer than strace ever prints is skipped with a marker, and
// reading goes on.
func TestFollowSkipsOverlongLines(t *testing.T) {
	t.Parallel()
	long := `5 1.0 execve("/bin/x", ["` + strings.Repeat("a", MaxLine+10) + `"], 0x1) = 0`
	out := long + "\n" + `5 1.1 execve("/bin/y", ["y"], 0x1 /* 1 var */) = 0` + "\n"
	var got []string
	if err := Follow(strings.NewReader(out), 0, func(ev backends.TraceEvent) { got = append(got, ev.Kind+" "+ev.Target) }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "trace.incomplete strace,proc.spawn /bin/y" {
		t.Fatalf("got %q", got)
	}
}

// The longest line strace prints (an argv of -s words of -s bytes each,
// every byte escaped) is read, not skipped: code cannot hide a program it
// starts behind a long argv.
func TestFollowReadsStracesLongestLines(t *testing.T) {
	t.Parallel()
	word := `"` + strings.Repeat(`\377`, StringSize) + `"...`
	words := make([]string, StringSize)
	for i := range words {
		words[i] = word
	}
	line := `5 1.0 execve("/bin/hidden", ["/bin/hidden", ` + strings.Join(words, ", ") + `, ...], 0x1 /* 3 vars */) = 0`
	var got []backends.TraceEvent
	if err := Follow(strings.NewReader(line+"\n"), 0, func(ev backends.TraceEvent) { got = append(got, ev) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Kind != KindSpawn || got[0].Target != "/bin/hidden" {
		t.Fatalf("a %d MiB execve line gave %d events %.200v", len(line)>>20, len(got), got)
	}
}

// Unfinished calls of processes that never resume them do not pile up.
func TestParserPendingIsBounded(t *testing.T) {
	t.Parallel()
	var p Parser
	filler := strings.Repeat("x", 64<<10)
	for pid := 1; pid <= 600; pid++ {
		line := strconv.Itoa(pid) + ` 1.0 execve("/bin/` + filler + `", ["a"], 0x1 <unfinished ...>`
		if _, ok := p.Line(strings.Clone(line)); ok {
			t.Fatal("half a call parsed as a call")
		}
	}
	held := 0
	for _, pc := range p.pending {
		held += len(pc.head)
	}
	if held > 32<<20+len(filler)+100 {
		t.Fatalf("the parser holds %d MiB of unfinished calls", held>>20)
	}
	// The last ones still pair with their rest.
	c, ok := p.Line(`600 1.2 <... execve resumed>) = 0`)
	if !ok || c.Name != "execve" || c.Pid != 600 {
		t.Fatalf("resume: %+v %v", c, ok)
	}
}

func TestStraceArgs(t *testing.T) {
	t.Parallel()
	a := StraceArgs(Command{Setpriv: "/usr/bin/setpriv", Output: "/proc/1/fd/9", Drop: &Credential{65534, 65534}, Argv: []string{"/usr/bin/bwrap", "--", "sh"}})
	got := strings.Join(a, " ")
	for _, want := range []string{"-f ", "--seccomp-bpf", "-qq", "-e signal=none", "-ttt", "-yy", "-s 1024", "-o /proc/1/fd/9 -- /usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups -- /usr/bin/bwrap -- sh"} {
		if !strings.Contains(got, want) {
			t.Errorf("strace args %q lack %q", got, want)
		}
	}
	if !strings.Contains(got, "trace=execve,") || strings.Contains(got, "read,") {
		t.Errorf("trace set %q", got)
	}
}

// With the envexec launcher, it drops to the user in setpriv's place and
// gives the command its environment from a descriptor: strace's own
// command line holds none of it.
func TestStraceArgsWithTheLauncher(t *testing.T) {
	t.Parallel()
	for _, drop := range []*Credential{nil, {65534, 65533}} {
		c := Command{Setpriv: "/usr/bin/setpriv", Launcher: "/opt/senclaw/senclaw", EnvFD: 3, Output: "/proc/1/fd/9", Drop: drop, Argv: []string{"/bin/sh", "-c", "env"}}
		got := strings.Join(StraceArgs(c), " ")
		want := "-o /proc/1/fd/9 -- /opt/senclaw/senclaw __senclaw-envexec --env-fd 3 -- /bin/sh -c env"
		if drop != nil {
			want = "-o /proc/1/fd/9 -- /opt/senclaw/senclaw __senclaw-envexec --env-fd 3 --uid 65534 --gid 65533 -- /bin/sh -c env"
		}
		if !strings.HasSuffix(got, want) || strings.Contains(got, "setpriv") || c.LauncherExecs() != 1 {
			t.Errorf("strace args %q, want the end %q and one launcher exec (%d)", got, want, c.LauncherExecs())
		}
	}
}

func TestFoldRoot(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]string{"/usr/lib/x.so": "/usr", "/etc": "/etc", "/proc/self/status": "/proc", "/usrlocal/x": "", "/work/usr/x": ""} {
		got, _ := FoldRoot(p)
		if got != want {
			t.Errorf("FoldRoot(%q) = %q, want %q", p, got, want)
		}
	}
}
