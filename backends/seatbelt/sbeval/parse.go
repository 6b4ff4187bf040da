// Package sbeval reads the Seatbelt profiles that backends/seatbelt writes,
// as Seatbelt would.
//
// It parses them, checks their structure (balanced, every parameter defined
// and used, the secret denies last, the loopback deny after the outbound
// allows, no DNS without outbound, no (local ...) on outbound, no long
// literals), and answers questions about their meaning the way Seatbelt
// does, the last matching rule winning: may this path be read or written,
// may this host:port be dialled.
//
// It knows the subset of the profile language our profiles use, not all
// of it; a filter it does not know in a rule that could decide a question
// is an error, never a guess.
package sbeval

import (
	"fmt"
	"strings"
)

// Node is one expression of a profile: an atom, a string, a regex or a
// list.
type Node struct {
	Atom  string
	Str   string
	IsStr bool
	// IsRegex marks a #"..." literal (its text is in Str).
	IsRegex bool
	List    []Node
	IsList  bool
}

// Head is the first atom of a list, or "".
func (n Node) Head() string {
	if n.IsList && len(n.List) > 0 && !n.List[0].IsList && !n.List[0].IsStr {
		return n.List[0].Atom
	}
	return ""
}

// String writes n back as profile text.
func (n Node) String() string {
	switch {
	case n.IsList:
		parts := make([]string, len(n.List))
		for i, c := range n.List {
			parts[i] = c.String()
		}
		return "(" + strings.Join(parts, " ") + ")"
	case n.IsRegex:
		return `#"` + n.Str + `"`
	case n.IsStr:
		return fmt.Sprintf("%q", n.Str)
	}
	return n.Atom
}

// Parse reads a profile's top-level expressions.
func Parse(text string) ([]Node, error) {
	p := &parser{s: text}
	var out []Node
	for {
		p.space()
		if p.i >= len(p.s) {
			return out, nil
		}
		n, err := p.node()
		if err != nil {
			return nil, err
		}
		if !n.IsList {
			return nil, fmt.Errorf("at byte %d: a top-level %q outside any list", p.i, n.String())
		}
		out = append(out, n)
	}
}

type parser struct {
	s string
	i int
}

func (p *parser) space() {
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == ';':
			for p.i < len(p.s) && p.s[p.i] != '\n' {
				p.i++
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) node() (Node, error) {
	p.space()
	if p.i >= len(p.s) {
		return Node{}, fmt.Errorf("unexpected end of profile (unbalanced parentheses)")
	}
	switch c := p.s[p.i]; {
	case c == '(':
		start := p.i
		p.i++
		n := Node{IsList: true}
		for {
			p.space()
			if p.i >= len(p.s) {
				return Node{}, fmt.Errorf("the list opened at byte %d is never closed", start)
			}
			if p.s[p.i] == ')' {
				p.i++
				return n, nil
			}
			c, err := p.node()
			if err != nil {
				return Node{}, err
			}
			n.List = append(n.List, c)
		}
	case c == ')':
		return Node{}, fmt.Errorf("at byte %d: a ')' closes nothing", p.i)
	case c == '"':
		s, err := p.str()
		return Node{Str: s, IsStr: true}, err
	case c == '#' && p.i+1 < len(p.s) && p.s[p.i+1] == '"':
		p.i++
		s, err := p.str()
		return Node{Str: s, IsStr: true, IsRegex: true}, err
	default:
		start := p.i
		for p.i < len(p.s) && !strings.ContainsRune(" \t\r\n()\";", rune(p.s[p.i])) {
			p.i++
		}
		return Node{Atom: p.s[start:p.i]}, nil
	}
}

// str reads a "..." string with \" and \\ escapes.
func (p *parser) str() (string, error) {
	start := p.i
	p.i++ // the opening quote
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch c {
		case '"':
			p.i++
			return b.String(), nil
		case '\\':
			if p.i+1 >= len(p.s) {
				return "", fmt.Errorf("the string at byte %d ends in a backslash", start)
			}
			b.WriteByte(p.s[p.i+1])
			p.i += 2
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return "", fmt.Errorf("the string at byte %d is never closed", start)
}
