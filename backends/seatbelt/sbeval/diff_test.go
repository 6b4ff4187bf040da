package sbeval_test

import (
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/bwrap"
	"github.com/senclaw/sandbox/backends/netfwd"
	"github.com/senclaw/sandbox/backends/seatbelt"
	"github.com/senclaw/sandbox/backends/seatbelt/sbeval"
)

// world names the same places on two machines: the question "may the
// sandbox write its workspace" is asked of bwrap with Linux paths and of
// Seatbelt with macOS paths.
type world struct {
	home, data, config, ws string
	rw, roIn, ro, shared   string
	sys                    string
}

var (
	linux = world{home: "/home/ann", data: "/home/ann/.local/share/senclaw", config: "/home/ann/.config/senclaw",
		ws: "/home/ann/.local/share/senclaw/workspaces/s1", rw: "/srv/data", roIn: "/srv/data/models", ro: "/srv/ref",
		shared: "/srv/shared", sys: "/usr/lib/python3/os.py"}
	mac = world{home: "/Users/ann", data: "/Users/ann/.local/share/senclaw", config: "/Users/ann/.config/senclaw",
		ws: "/Users/ann/.local/share/senclaw/workspaces/s1", rw: "/Volumes/data", roIn: "/Volumes/data/models", ro: "/Volumes/ref",
		shared: "/Volumes/shared", sys: "/usr/lib/libSystem.B.dylib"}
)

// scenario is one sandbox configuration, built for either world.
type scenario struct {
	mode    backends.FsMode
	network bool
	ports   backends.PortRules
	mounts  bool
}

func (s scenario) name() string {
	n := string(s.mode)
	if s.network {
		n += "_net"
	}
	if len(s.ports.Connect) > 0 {
		n += "_connect"
	}
	if len(s.ports.Loopback) > 0 {
		n += "_loopback"
	}
	if s.mounts {
		n += "_mounts"
	}
	return n
}

func (s scenario) spec(w world) *backends.Spec {
	spec := &backends.Spec{
		RunID: "r1", Workspace: w.ws, Argv: []string{"sh"}, FsMode: s.mode,
		ReadPaths: []string{w.shared}, Network: s.network, Ports: s.ports,
	}
	if s.mode == backends.FsOpen || w == mac {
		// The engine hides these in open mode; Seatbelt denies them in
		// every mode.
		spec.Hidden = []string{w.data, w.config, w.home + "/.ssh", w.home + "/.aws"}
	}
	if s.mounts {
		spec.Mounts = []backends.Mount{
			{Source: w.rw, Target: "data"},
			{Source: w.roIn, Target: "data/models", ReadOnly: true},
			{Source: w.ro, Target: "ref", ReadOnly: true},
		}
	}
	return spec
}

// question is asked in a world; want is the right answer, so that the
// two backends cannot agree on a wrong one.
type question struct {
	name string
	ask  func(w world) query
	want func(s scenario) bool
}

type query struct {
	op   string // read, write, connect
	path string
	host string
	port int
}

var (
	yes = func(scenario) bool { return true }
	no  = func(scenario) bool { return false }
)

func questions() []question {
	file := func(op, rel string, base func(world) string) func(world) query {
		return func(w world) query { return query{op: op, path: path.Join(base(w), rel)} }
	}
	ws := func(w world) string { return w.ws }
	home := func(w world) string { return w.home }
	data := func(w world) string { return w.data }
	sys := func(w world) string { return w.sys }
	shared := func(w world) string { return w.shared }
	rw := func(w world) string { return w.rw }
	roIn := func(w world) string { return w.roIn }
	ro := func(w world) string { return w.ro }
	withMounts := func(s scenario) bool { return s.mounts }
	readable := func(s scenario) bool { return s.mounts || s.mode == backends.FsOpen }
	connect := func(host string, port int) func(world) query {
		return func(world) query { return query{op: "connect", host: host, port: port} }
	}
	return []question{
		{"write_workspace", file("write", "out.txt", ws), yes},
		{"read_workspace", file("read", "in.txt", ws), yes},
		{"read_ssh_key", file("read", ".ssh/id_rsa", home), no},
		{"write_ssh_keys", file("write", ".ssh/authorized_keys", home), no},
		{"read_aws", file("read", ".aws/credentials", home), no},
		{"read_engine_db", file("read", "senclaw.db", data), no},
		{"read_other_workspace", file("read", "workspaces/s2/x", data), no},
		{"read_documents", file("read", "Documents/notes.txt", home), func(s scenario) bool { return s.mode == backends.FsOpen }},
		{"write_documents", file("write", "Documents/notes.txt", home), no},
		{"read_system", file("read", "", sys), yes},
		{"write_system", file("write", "", sys), no},
		{"read_allowlisted", file("read", "a.csv", shared), func(s scenario) bool { return s.mode != backends.FsStrict }},
		{"write_allowlisted", file("write", "a.csv", shared), no},
		{"read_rw_mount", file("read", "x", rw), readable},
		{"write_rw_mount", file("write", "x", rw), withMounts},
		{"read_ro_in_rw", file("read", "w.bin", roIn), readable},
		{"write_ro_in_rw", file("write", "w.bin", roIn), no},
		{"read_ro_mount", file("read", "x", ro), readable},
		{"write_ro_mount", file("write", "x", ro), no},
		{"connect_public_443", connect("93.184.216.34", 443), func(s scenario) bool {
			return s.network || slices.Contains(s.ports.Connect, 443)
		}},
		{"connect_public_22", connect("93.184.216.34", 22), func(s scenario) bool {
			return s.network && len(s.ports.Connect) == 0
		}},
		{"connect_loopback_5432", connect("127.0.0.1", 5432), func(s scenario) bool { return slices.Contains(s.ports.Loopback, 5432) }},
		{"connect_loopback_v6_5432", connect("::1", 5432), func(s scenario) bool { return slices.Contains(s.ports.Loopback, 5432) }},
		{"connect_loopback_8080", connect("127.0.0.1", 8080), no},
	}
}

func scenarios() []scenario {
	var out []scenario
	for _, mode := range backends.FsModes {
		for _, mounts := range []bool{false, true} {
			out = append(out,
				scenario{mode: mode, mounts: mounts},
				scenario{mode: mode, network: true, mounts: mounts},
				scenario{mode: mode, ports: backends.PortRules{Connect: []int{443}}, mounts: mounts},
				scenario{mode: mode, ports: backends.PortRules{Loopback: []int{5432}}, mounts: mounts},
				scenario{mode: mode, network: true, ports: backends.PortRules{Loopback: []int{5432}}, mounts: mounts},
			)
		}
	}
	return out
}

// TestSeatbeltAgreesWithBwrap asks every question of every scenario of
// the bwrap argv's meaning and of the Seatbelt profile's: the answers
// must be the same, and right.
func TestSeatbeltAgreesWithBwrap(t *testing.T) {
	t.Parallel()
	for _, s := range scenarios() {
		t.Run(s.name(), func(t *testing.T) {
			t.Parallel()
			bw := newBwrapMeaning(s.spec(linux))
			sb := newSeatbeltMeaning(t, s.spec(mac))
			for _, q := range questions() {
				want := q.want(s)
				gotB := bw.answer(q.ask(linux))
				gotS := sb.answer(t, q.ask(mac))
				if gotB != gotS || gotB != want {
					t.Errorf("%s: bwrap says %v, seatbelt says %v, want %v", q.name, gotB, gotS, want)
				}
			}
		})
	}
}

// TestSeatbeltPrivateAddresses records where the two differ on purpose:
// Seatbelt filters by port, not host, so with the network on it lets a
// private address through where the engine's proxy refuses it, and the
// run's Missing says so.
func TestSeatbeltPrivateAddresses(t *testing.T) {
	t.Parallel()
	s := scenario{mode: backends.FsStrict, network: true}
	sb := newSeatbeltMeaning(t, s.spec(mac))
	if !sb.answer(t, query{op: "connect", host: "10.0.0.1", port: 443}) {
		t.Fatal("seatbelt now refuses private addresses: update Missing and this test")
	}
	missing := strings.Join(seatbelt.Missing(s.spec(mac)), "; ")
	if !strings.Contains(missing, "private") {
		t.Errorf("Missing does not say that private addresses are reachable: %s", missing)
	}
}

// seatbeltMeaning answers questions with the evaluator.
type seatbeltMeaning struct{ p *sbeval.Profile }

func newSeatbeltMeaning(t *testing.T, spec *backends.Spec) seatbeltMeaning {
	t.Helper()
	links := map[string]string{}
	for _, m := range spec.Mounts {
		if !strings.Contains(m.Target, "/") {
			links[spec.Workspace+"/"+m.Target] = m.Source
		}
	}
	host := seatbelt.Host{Home: mac.home, Resolve: func(p string) string {
		for k, v := range links {
			if p == k || strings.HasPrefix(p, k+"/") {
				return v + strings.TrimPrefix(p, k)
			}
		}
		return p
	}}
	text, params, err := seatbelt.Profile(spec, host)
	if err != nil {
		t.Fatal(err)
	}
	pm := map[string]string{}
	for _, p := range params {
		pm[p.Key] = p.Value
	}
	if errs := sbeval.Check(text, pm); len(errs) > 0 {
		t.Fatalf("the profile's structure: %v", errs)
	}
	p, err := sbeval.Load(text, pm)
	if err != nil {
		t.Fatal(err)
	}
	return seatbeltMeaning{p}
}

func (m seatbeltMeaning) answer(t *testing.T, q query) bool {
	t.Helper()
	var ops []sbeval.Query
	switch q.op {
	case "read":
		ops = []sbeval.Query{{Op: "file-read-data", Path: q.path}}
	case "write":
		// Writing a new file creates it and writes its data.
		ops = []sbeval.Query{{Op: "file-write-create", Path: q.path}, {Op: "file-write-data", Path: q.path}}
	case "connect":
		ops = []sbeval.Query{{Op: "network-outbound", Proto: "tcp", Host: q.host, Port: q.port}}
	}
	for _, o := range ops {
		ok, err := m.p.Allowed(o)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return false
		}
	}
	return true
}

// bwrapMeaning reads the meaning of bwrap's argv: the mount table it
// builds, and the forwarder's loopback ports. Egress beyond them goes to
// the engine's proxy, which applies the spec's connect rules.
type bwrapMeaning struct {
	mounts   []bwMount
	network  bool
	loopback []int
	spec     *backends.Spec
}

type bwMount struct {
	src, dst string // src is "" for a tmpfs, /dev, /proc or a symlink
	rw       bool
}

func newBwrapMeaning(spec *backends.Spec) bwrapMeaning {
	host := bwrap.Host{
		Roots:  []bwrap.Root{{Path: "/usr"}, {Path: "/bin", Symlink: "usr/bin"}, {Path: "/etc"}},
		Hidden: map[string]bwrap.PathKind{},
	}
	for _, h := range spec.Hidden {
		host.Hidden[h] = bwrap.Dir
	}
	if spec.Network || !spec.Ports.Empty() {
		spec.Net = &backends.NetPlumbing{Dir: "/home/ann/.local/share/senclaw/net/s1", Forwarder: "/usr/lib/senclaw/senclaw-netfwd",
			Listen: spec.Ports.Listen, Loopback: spec.Ports.Loopback}
	}
	argv := bwrap.Args(spec, host, bwrap.FDs{Seccomp: 3, Info: 4, Block: 5})
	m := bwrapMeaning{spec: spec}
	i := 0
	for ; i < len(argv) && argv[i] != "--"; i++ {
		switch argv[i] {
		case "--bind", "--ro-bind", "--ro-bind-try":
			m.mounts = append(m.mounts, bwMount{src: argv[i+1], dst: argv[i+2], rw: argv[i] == "--bind"})
			i += 2
		case "--tmpfs", "--dev", "--proc":
			m.mounts = append(m.mounts, bwMount{dst: argv[i+1], rw: argv[i] == "--tmpfs"})
			i++
		case "--symlink":
			m.mounts = append(m.mounts, bwMount{dst: argv[i+2]})
			i += 2
		case "--seccomp", "--info-fd", "--block-fd", "--chdir":
			i++
		case "--bind-fd", "--ro-bind-fd":
			panic("the differential test binds by path")
		}
	}
	cmd := argv[i+1:]
	if len(cmd) > 0 && cmd[0] == netfwd.BinaryPath {
		m.network = true
		for j := 1; j < len(cmd) && cmd[j] != "--"; j++ {
			if cmd[j] == "--loopback" {
				p, _ := strconv.Atoi(cmd[j+1])
				m.loopback = append(m.loopback, p)
			}
		}
	}
	return m
}

func covers(root, p string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

// top is the mount that is seen at sandbox path p: the last one at or
// above it (a later mount hides what is under its mount point).
func (m bwrapMeaning) top(p string) int {
	at := -1
	for i, mt := range m.mounts {
		if covers(mt.dst, p) {
			at = i
		}
	}
	return at
}

// reach reports whether the host file h is seen inside, and writable,
// through some mount.
func (m bwrapMeaning) reach(h string) (seen, writable bool) {
	for i, mt := range m.mounts {
		if mt.src == "" || !covers(mt.src, h) {
			continue
		}
		inside := path.Join(mt.dst, strings.TrimPrefix(h, mt.src))
		if m.top(inside) == i {
			seen = true
			writable = writable || mt.rw
		}
	}
	return seen, writable
}

func (m bwrapMeaning) answer(q query) bool {
	switch q.op {
	case "read":
		seen, _ := m.reach(q.path)
		return seen
	case "write":
		_, w := m.reach(q.path)
		return w
	case "connect":
		if !m.network {
			return false
		}
		a := netip.MustParseAddr(q.host)
		if a.IsLoopback() {
			return slices.Contains(m.loopback, q.port)
		}
		r := m.spec.Ports
		if !m.spec.Network && len(r.Connect) == 0 {
			return false
		}
		return len(r.Connect) == 0 || slices.Contains(r.Connect, q.port)
	}
	panic(fmt.Sprintf("unknown question %q", q.op))
}
