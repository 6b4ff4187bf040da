package sbeval

import (
	"fmt"
	"slices"
	"strings"
)

// MaxLiteral is the longest string a profile may hold: paths are
// parameters, so a long literal means something was spliced in.
const MaxLiteral = 1024

// Check checks the structure of a profile written by backends/seatbelt
// against the parameters it is run with, and returns every problem found.
func Check(text string, params map[string]string) []error {
	nodes, err := Parse(text)
	if err != nil {
		return []error{err}
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	used := map[string]bool{}
	// A literal equal to a parameter's value is a path spliced in (the
	// system's own fixed paths are never parameters' values).
	spliced := map[string]string{}
	for k, v := range params {
		// The folders above a secret are often the system's own.
		if v != "" && v != "/" && !strings.HasPrefix(k, "HIDE_UP_") {
			spliced[v] = k
		}
	}
	var walk func(n Node)
	walk = func(n Node) {
		if n.IsStr && len(n.Str) > MaxLiteral {
			bad("a literal of %d bytes (more than %d): %.40q...", len(n.Str), MaxLiteral, n.Str)
		}
		if n.IsStr && spliced[n.Str] != "" {
			bad("the value of %q (%q) is spliced into the profile text", spliced[n.Str], n.Str)
		}
		if n.Head() == "param" && len(n.List) == 2 && n.List[1].IsStr {
			used[n.List[1].Str] = true
		}
		for _, c := range n.List {
			walk(c)
		}
	}
	for _, n := range nodes {
		walk(n)
	}
	for k := range used {
		if _, ok := params[k]; !ok {
			bad("the parameter %q is used but not defined", k)
		}
	}
	for k := range params {
		if !used[k] {
			bad("the parameter %q is defined but not used", k)
		}
	}

	p, err := Load(text, params)
	if err != nil {
		return append(errs, err)
	}
	// The secret denies come after every allow; only metadata of the
	// folders above a carved-out workspace may be allowed after them.
	firstSecret := slices.IndexFunc(p.Rules, func(r Rule) bool { return !r.Allow && usesKey(r.Node, "HIDE_") })
	if firstSecret < 0 {
		bad("no secret deny at all")
	} else {
		for _, r := range p.Rules[firstSecret:] {
			if r.Allow && !(slices.Equal(r.Ops, []string{"file-read-metadata"}) && onlyLiteralsOf(r, "HIDE_DIR_")) {
				bad("the allow %s comes after a secret deny", r.Node.String())
			}
		}
	}
	// The loopback deny comes after every outbound allow to any host.
	loop := slices.IndexFunc(p.Rules, func(r Rule) bool {
		return !r.Allow && slices.Contains(r.Ops, "network-outbound") && strings.Contains(r.Node.String(), `"localhost:*"`)
	})
	outbound := false
	for i, r := range p.Rules {
		s := r.Node.String()
		isOut := opMatches(r.Ops, "network-outbound")
		if isOut && strings.Contains(s, "(local ") {
			bad("a (local ...) filter on outbound matches the source address and allows everything: %s", s)
		}
		if r.Allow && isOut && strings.Contains(s, `"*:`) {
			outbound = true
			if loop < 0 || i > loop {
				bad("the outbound allow %s is not followed by the loopback deny", s)
			}
		}
		if r.Allow && isOut && len(r.Filters) == 0 {
			bad("an outbound allow with no filter: %s", s)
		}
	}
	if loop < 0 {
		bad("no loopback deny")
	}
	for _, r := range p.Rules {
		s := r.Node.String()
		if r.Allow && (strings.Contains(s, "mDNSResponder") || strings.Contains(s, "com.apple.dnssd.service")) && !outbound {
			bad("a DNS rule with outbound off: %s", s)
		}
	}
	return errs
}

// usesKey reports whether n refers to a parameter whose key starts with
// prefix.
func usesKey(n Node, prefix string) bool {
	if n.Head() == "param" && len(n.List) == 2 && strings.HasPrefix(n.List[1].Str, prefix) {
		return true
	}
	return slices.ContainsFunc(n.List, func(c Node) bool { return usesKey(c, prefix) })
}

// onlyLiteralsOf reports whether every filter of r is (literal (param K))
// with K starting with prefix.
func onlyLiteralsOf(r Rule, prefix string) bool {
	for _, f := range r.Filters {
		if f.Head() != "literal" || len(f.List) != 2 || !usesKey(f, prefix) {
			return false
		}
	}
	return len(r.Filters) > 0
}
