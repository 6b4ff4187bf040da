package sbeval

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// Rule is one (allow ...) or (deny ...) of a profile.
type Rule struct {
	Allow   bool
	Ops     []string
	Filters []Node
	// Index is the rule's place among the profile's expressions.
	Index int
	Node  Node
}

// Profile is a parsed profile with its parameters.
type Profile struct {
	Rules  []Rule
	Params map[string]string
}

// Load parses text and binds params (KEY=VALUE pairs as given to -D).
func Load(text string, params map[string]string) (*Profile, error) {
	nodes, err := Parse(text)
	if err != nil {
		return nil, err
	}
	p := &Profile{Params: params}
	for i, n := range nodes {
		h := n.Head()
		if h != "allow" && h != "deny" {
			continue
		}
		r := Rule{Allow: h == "allow", Index: i, Node: n}
		for _, c := range n.List[1:] {
			if c.IsList {
				r.Filters = append(r.Filters, c)
			} else if !c.IsStr {
				r.Ops = append(r.Ops, c.Atom)
			}
		}
		if len(r.Ops) == 0 {
			return nil, fmt.Errorf("the rule %s names no operation", n.String())
		}
		p.Rules = append(p.Rules, r)
	}
	return p, nil
}

// Query is one question: an operation on a path, or a network operation
// to or on an address.
type Query struct {
	// Op is the operation: file-read-data, file-write-create,
	// file-write-data, file-write-unlink, file-read-metadata,
	// process-exec, network-outbound, network-bind, network-inbound.
	Op string
	// Path is the file's real path, for file operations and process-exec.
	Path string
	// Vnode is the file's type (REGULAR-FILE when empty).
	Vnode string
	// Proto ("tcp", "udp"), Host (an IP address) and Port are the remote
	// side for network-outbound, the local side for bind and inbound.
	Proto string
	Host  string
	Port  int
	// Unix is a Unix socket's path, for network-outbound to one.
	Unix string
}

// Allowed answers q: the last rule that matches decides, and nothing
// matching means denied.
func (p *Profile) Allowed(q Query) (bool, error) {
	allowed := false
	for _, r := range p.Rules {
		if !opMatches(r.Ops, q.Op) {
			continue
		}
		m, err := p.anyFilter(r.Filters, q)
		if err != nil {
			return false, fmt.Errorf("rule %s: %w", r.Node.String(), err)
		}
		if m {
			allowed = r.Allow
		}
	}
	return allowed, nil
}

// opMatches reports whether one of ops names op: exactly, by a trailing
// "*" wildcard, or as "default".
func opMatches(ops []string, op string) bool {
	for _, o := range ops {
		if o == "default" || o == op || (strings.HasSuffix(o, "*") && strings.HasPrefix(op, strings.TrimSuffix(o, "*"))) {
			return true
		}
	}
	return false
}

// anyFilter: the filters of a rule are alternatives; none means all.
func (p *Profile) anyFilter(fs []Node, q Query) (bool, error) {
	if len(fs) == 0 {
		return true, nil
	}
	for _, f := range fs {
		m, err := p.filter(f, q)
		if err != nil || m {
			return m, err
		}
	}
	return false, nil
}

func (p *Profile) filter(f Node, q Query) (bool, error) {
	args := f.List[1:]
	switch h := f.Head(); h {
	case "require-all":
		for _, a := range args {
			m, err := p.filter(a, q)
			if err != nil || !m {
				return false, err
			}
		}
		return true, nil
	case "require-any":
		return p.anyFilter(args, q)
	case "require-not":
		if len(args) != 1 {
			return false, fmt.Errorf("require-not takes one filter")
		}
		m, err := p.filter(args[0], q)
		return !m, err
	case "literal", "subpath", "regex":
		if q.Path == "" {
			return false, nil
		}
		if len(args) != 1 {
			return false, fmt.Errorf("%s takes one argument", h)
		}
		if h == "regex" {
			if !args[0].IsRegex {
				return false, fmt.Errorf("regex takes a #\"...\" literal")
			}
			re, err := regexp.Compile(args[0].Str)
			if err != nil {
				return false, err
			}
			return re.MatchString(q.Path), nil
		}
		v, err := p.value(args[0])
		if err != nil {
			return false, err
		}
		if h == "literal" {
			return q.Path == v, nil
		}
		return q.Path == v || v == "/" || strings.HasPrefix(q.Path, strings.TrimSuffix(v, "/")+"/"), nil
	case "vnode-type":
		want := "REGULAR-FILE"
		if q.Vnode != "" {
			want = q.Vnode
		}
		return len(args) == 1 && args[0].Atom == want, nil
	case "remote", "local":
		return p.address(h, args, q)
	case "target", "sysctl-name", "sysctl-name-prefix", "global-name", "iokit-registry-entry-class", "ipc-posix-name-prefix":
		// Filters of operations the queries do not ask about.
		return false, nil
	}
	return false, fmt.Errorf("unknown filter %s", f.String())
}

// address matches (remote PROTO "HOST:PORT"), (local ...) and
// (remote unix-socket (path-literal P)).
func (p *Profile) address(side string, args []Node, q Query) (bool, error) {
	if q.Op != "network-outbound" && q.Op != "network-bind" && q.Op != "network-inbound" {
		return false, nil
	}
	if len(args) < 1 {
		return false, fmt.Errorf("%s needs a protocol", side)
	}
	proto := args[0].Atom
	if proto == "unix-socket" {
		if side != "remote" || len(args) != 2 || args[1].Head() != "path-literal" || len(args[1].List) != 2 {
			return false, fmt.Errorf("unix-socket takes (path-literal PATH)")
		}
		v, err := p.value(args[1].List[1])
		return err == nil && q.Unix != "" && q.Unix == v, err
	}
	if q.Unix != "" || (side == "local") == (q.Op == "network-outbound") {
		return false, nil
	}
	if proto != "ip" && proto != q.Proto {
		return false, nil
	}
	if len(args) != 2 || !args[1].IsStr {
		return false, fmt.Errorf("%s %s takes \"HOST:PORT\"", side, proto)
	}
	host, port, ok := strings.Cut(args[1].Str, ":")
	if !ok {
		return false, fmt.Errorf("%q is not HOST:PORT", args[1].Str)
	}
	switch host {
	case "*":
	case "localhost":
		a, err := netip.ParseAddr(q.Host)
		if err != nil || !a.IsLoopback() {
			return false, nil
		}
	default:
		//lint:ignore ST1005 Seatbelt is a proper name: the capital is its own, not a sentence's.
		return false, fmt.Errorf("Seatbelt knows only the hosts * and localhost, not %q", host)
	}
	if port == "*" {
		return true, nil
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return false, fmt.Errorf("bad port in %q", args[1].Str)
	}
	return n == q.Port, nil
}

// value is a string or (param "KEY").
func (p *Profile) value(n Node) (string, error) {
	if n.IsStr && !n.IsRegex {
		return n.Str, nil
	}
	if n.Head() == "param" && len(n.List) == 2 && n.List[1].IsStr {
		v, ok := p.Params[n.List[1].Str]
		if !ok {
			return "", fmt.Errorf("the parameter %q is not defined", n.List[1].Str)
		}
		return v, nil
	}
	return "", fmt.Errorf("%s is not a string or a parameter", n.String())
}
