package netproxy

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/senclaw/sandbox/backends"
)

// Bounds of the HTTP rules.
const (
	MaxHTTPRules   = 64
	maxRuleMethods = 16
	maxRulePaths   = 32
	maxPathBytes   = 512
	// maxJudgedPath bounds the request paths a host's rules are matched
	// against (longer ones are refused there), and so the work of a glob.
	maxJudgedPath = 4096
)

// HTTPRuleError is a bad HTTP rule: the field (allowHttp[2].paths[0])
// and the value.
type HTTPRuleError struct {
	Field, Value string
	Err          error
}

func (e *HTTPRuleError) Error() string { return fmt.Sprintf("%s %q: %v", e.Field, e.Value, e.Err) }

// NormalizeHTTPRules checks a sandbox's HTTP rules and returns them
// normalised: hosts as NormalizeHostPattern spells them, methods in upper
// case, sorted, without duplicates. A bad one is an *HTTPRuleError.
func NormalizeHTTPRules(rules []backends.HTTPRule) ([]backends.HTTPRule, error) {
	if len(rules) > MaxHTTPRules {
		return nil, &HTTPRuleError{"allowHttp", fmt.Sprint(len(rules)), fmt.Errorf("at most %d rules", MaxHTTPRules)}
	}
	out := make([]backends.HTTPRule, 0, len(rules))
	for i, r := range rules {
		field := fmt.Sprintf("allowHttp[%d]", i)
		host, err := NormalizeHostPattern(r.Host)
		if err != nil {
			return nil, &HTTPRuleError{field + ".host", r.Host, err}
		}
		n := backends.HTTPRule{Host: host, Methods: []string{}, Paths: []string{}}
		if len(r.Methods) > maxRuleMethods {
			return nil, &HTTPRuleError{field + ".methods", strings.Join(r.Methods, ","), fmt.Errorf("at most %d methods", maxRuleMethods)}
		}
		for j, m := range r.Methods {
			m = strings.ToUpper(strings.TrimSpace(m))
			if !isToken(m) || len(m) > 32 {
				return nil, &HTTPRuleError{fmt.Sprintf("%s.methods[%d]", field, j), r.Methods[j], errors.New("is not an HTTP method (GET, POST, ...)")}
			}
			if !slices.Contains(n.Methods, m) {
				n.Methods = append(n.Methods, m)
			}
		}
		if len(r.Paths) > maxRulePaths {
			return nil, &HTTPRuleError{field + ".paths", strings.Join(r.Paths, ","), fmt.Errorf("at most %d paths", maxRulePaths)}
		}
		for j, p := range r.Paths {
			if err := checkRulePath(p); err != nil {
				return nil, &HTTPRuleError{fmt.Sprintf("%s.paths[%d]", field, j), p, err}
			}
			if !slices.Contains(n.Paths, p) {
				n.Paths = append(n.Paths, p)
			}
		}
		slices.Sort(n.Methods)
		out = append(out, n)
	}
	return out, nil
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return true
}

func checkRulePath(p string) error {
	switch {
	case !strings.HasPrefix(p, "/"):
		return errors.New("must start with /")
	case len(p) > maxPathBytes:
		return fmt.Errorf("is longer than %d bytes", maxPathBytes)
	case strings.ContainsAny(p, "[]{}\\"):
		return errors.New("holds a character globs do not have here: use * (within a segment), ** (across segments) and ? only")
	case strings.Contains(p, "***"):
		return errors.New("holds ***: use * or **")
	}
	for _, r := range p {
		if r <= ' ' || r == 0x7f {
			return errors.New("holds a space or a control character")
		}
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return errors.New("holds a . or .. segment, which no request path the proxy lets through has")
		}
	}
	return nil
}

// isGlob reports whether a rule path is a glob (else a prefix).
func isGlob(p string) bool { return strings.ContainsAny(p, "*?") }

// matchGlob matches path against a glob: * is any run of characters but
// /, ** any run at all, ? one character but /. It walks the glob once
// over the path (len(glob) x len(path) steps), whatever the glob holds.
func matchGlob(glob, path string) bool {
	prev := make([]bool, len(path)+1)
	cur := make([]bool, len(path)+1)
	prev[0] = true
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		double := c == '*' && i+1 < len(glob) && glob[i+1] == '*'
		if double {
			i++
		}
		cur[0] = (c == '*') && prev[0]
		for j := 1; j <= len(path); j++ {
			b := path[j-1]
			switch {
			case double:
				cur[j] = prev[j] || cur[j-1]
			case c == '*':
				cur[j] = prev[j] || cur[j-1] && b != '/'
			case c == '?':
				cur[j] = prev[j-1] && b != '/'
			default:
				cur[j] = prev[j-1] && b == c
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(path)]
}

func pathAllowed(paths []string, path string) bool {
	if len(paths) == 0 {
		return true
	}
	for _, p := range paths {
		if isGlob(p) && matchGlob(p, path) || !isGlob(p) && strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// httpRulesFor returns the rules naming host:port (host normalised).
func httpRulesFor(rules []backends.HTTPRule, host string, port int) []backends.HTTPRule {
	var out []backends.HTTPRule
	for _, r := range rules {
		if matchHostPattern(r.Host, host, port, portHTTPS, portHTTP) {
			out = append(out, r)
		}
	}
	return out
}

// methodOverrides are the headers with which some hosts take a request
// for another method than its own (a POST that acts as a DELETE).
var methodOverrides = []string{"x-http-method-override", "x-http-method", "x-method-override"}

// checkRequest decides req as checkHTTP does, for its method and for
// each method a header of methodOverrides names (in any spelling): the
// host may act on either.
func checkRequest(rules []backends.HTTPRule, host string, port int, req *http.Request) *Refusal {
	if ref := checkHTTP(rules, host, port, req.Method, req.URL.Path); ref != nil {
		return ref
	}
	for k, vs := range req.Header {
		if !slices.Contains(methodOverrides, strings.ReplaceAll(strings.ToLower(k), "_", "-")) {
			continue
		}
		for _, v := range vs {
			if ref := checkHTTP(rules, host, port, strings.ToUpper(strings.TrimSpace(v)), req.URL.Path); ref != nil {
				ref.Rule += " (the method named by the request's " + k + " header)"
				return ref
			}
		}
	}
	return nil
}

// checkHTTP decides a request against the HTTP rules of its host: a host
// no rule names is not limited; one that some rule names lets through
// only what one of its rules allows. A refusal says which rule refused
// it and how to allow it.
func checkHTTP(rules []backends.HTTPRule, host string, port int, method, path string) *Refusal {
	mine := httpRulesFor(rules, host, port)
	if len(mine) == 0 {
		return nil
	}
	ref := &Refusal{Kind: KindHTTP, Host: host, Port: port, Method: method, Path: clipPath(path)}
	if len(path) > maxJudgedPath {
		ref.Rule = fmt.Sprintf("the path is longer than the %d bytes the allowHttp rules of %s judge", maxJudgedPath, host)
		ref.Allow = "send a shorter path"
		return ref
	}
	for _, seg := range strings.Split(path, "/") {
		if seg == "." || seg == ".." {
			ref.Rule = "the path holds a . or .. segment, which the allowHttp rules of " + host + " cannot judge"
			ref.Allow = "send the path in its plain form"
			return ref
		}
	}
	methodOK := false
	for _, r := range mine {
		m := len(r.Methods) == 0 || slices.Contains(r.Methods, method)
		methodOK = methodOK || m
		if m && pathAllowed(r.Paths, path) {
			return nil
		}
	}
	r := mine[0]
	ref.Rule = "allowHttp " + describeRule(r)
	if len(mine) > 1 {
		ref.Rule = fmt.Sprintf("the %d allowHttp rules of %s (%s, ...)", len(mine), r.Host, describeRule(r))
	}
	if !methodOK {
		ref.Allow = fmt.Sprintf("add %s to the methods of the allowHttp rule for %s (sbx_ports allowHttp)", method, r.Host)
	} else {
		ref.Allow = fmt.Sprintf("add %s (or a prefix or glob of it) to the paths of the allowHttp rule for %s (sbx_ports allowHttp)", clipPath(path), r.Host)
	}
	return ref
}

// HTTPAllows reports whether rules let a request for method and path
// to host:port (host normalised) through, as the proxy decides it: the
// policy files' merge is tested against it.
func HTTPAllows(rules []backends.HTTPRule, host string, port int, method, path string) bool {
	return checkHTTP(rules, host, port, method, path) == nil
}

// describeRule is a rule in a few words: "api.github.com: GET, HEAD on
// /repos/".
func describeRule(r backends.HTTPRule) string {
	m, p := "any method", "any path"
	if len(r.Methods) > 0 {
		m = strings.Join(r.Methods, ", ")
	}
	if len(r.Paths) > 0 {
		p = strings.Join(r.Paths, ", ")
	}
	return r.Host + ": " + m + " on " + p
}

// clipPath bounds a path as it is kept and shown.
func clipPath(p string) string {
	if len(p) <= 200 {
		return p
	}
	return strings.ToValidUTF8(p[:200], "") + "…"
}
