package guard

import (
	"strings"
)

// maxNesting bounds how deep constructs nest in a command (subshells,
// substitutions, braces, quotes, if/while/case, test and arithmetic
// operators).
const maxNesting = 40

// tooDeep reports whether s nests deeper than limit, before the parser
// sees it: the parser recurses once per level, and a deep enough command
// (a few hundred kilobytes of "(((") would exhaust its stack, which no
// recover survives. It is a scan, not a parse: it over-counts when in
// doubt (a keyword word where no keyword can be, an opening brace of a
// literal) and pops a level only with the closer of the same kind, so
// that a stray closer cannot hide real nesting. Here-document bodies
// are skipped as the shell skips them.
func tooDeep(s string, limit int) bool {
	var sc depthScan
	sc.limit = limit
	return sc.run(s)
}

// Kinds of nesting the scan tracks.
const (
	kParen  = '(' // subshell, $( ), <( ), >( )
	kBlock  = '{' // { list; }
	kParam  = '$' // ${ }
	kBack   = '`'
	kDouble = '"'
	kArith  = 'a' // $(( )), (( ))
	kArithB = 'b' // $[ ]
	kIndex  = 'x' // name[ ] in a word: an array index
	kTest   = '[' // [[ ]]
	kIf     = 'i'
	kLoop   = 'l' // while, until, for, select
	kCase   = 'k'
)

type depthScan struct {
	limit int
	stack []byte
	// ops counts the operators inside the innermost test or arithmetic,
	// which the parser nests by (a ? b ? c, ! ! a, a && b && c).
	ops []int
	// heredocs are the delimiters waiting for the end of the line.
	heredocs []heredoc
	cmdpos   bool
}

// heredoc is a here-document waiting for its body.
type heredoc struct {
	delim string
	tabs  bool // <<- strips leading tabs
}

func (sc *depthScan) top() byte {
	if len(sc.stack) == 0 {
		return 0
	}
	return sc.stack[len(sc.stack)-1]
}

// push returns false when the limit is passed.
func (sc *depthScan) push(k byte) bool {
	sc.stack = append(sc.stack, k)
	sc.ops = append(sc.ops, 0)
	return len(sc.stack) <= sc.limit
}

func (sc *depthScan) pop(k byte) {
	if sc.top() == k {
		sc.stack = sc.stack[:len(sc.stack)-1]
		sc.ops = sc.ops[:len(sc.ops)-1]
	}
}

// op counts an operator of the innermost test or arithmetic.
func (sc *depthScan) op() bool {
	n := len(sc.ops) - 1
	sc.ops[n]++
	return len(sc.stack)+sc.ops[n] <= sc.limit
}

// code reports whether the innermost context reads shell code (where
// keywords, comments and here-documents are).
func (sc *depthScan) code() bool {
	switch sc.top() {
	case 0, kParen, kBlock, kBack, kIf, kLoop, kCase:
		return true
	}
	return false
}

func (sc *depthScan) run(s string) bool {
	sc.cmdpos = true
	for i := 0; i < len(s); {
		c := s[i]
		switch top := sc.top(); {
		case top == kDouble:
			switch {
			case c == '\\':
				i += 2
				continue
			case c == '"':
				sc.pop(kDouble)
			case c == '`':
				if !sc.push(kBack) {
					return true
				}
			case c == '$' && i+2 < len(s) && s[i+1] == '(' && s[i+2] == '(':
				if !sc.push(kArith) {
					return true
				}
				sc.cmdpos = false
				i += 3
				continue
			case c == '$' && i+1 < len(s) && (s[i+1] == '(' || s[i+1] == '{'):
				k := byte(kParen)
				if s[i+1] == '{' {
					k = kParam
				}
				if !sc.push(k) {
					return true
				}
				sc.cmdpos = true
				i += 2
				continue
			}
			i++
			continue
		case top == kIndex:
			// An index ends with ] or with the word; in it << shifts.
			if c == ']' {
				sc.pop(kIndex)
				i++
				continue
			}
			if strings.IndexByte(" \t\r\n;&|", c) >= 0 {
				sc.pop(kIndex)
				continue
			}
		case top == kArithB && c == ']':
			sc.pop(kArithB)
			i++
			continue
		case top == kArith || top == kArithB || top == kTest:
			if stop, deep := sc.operator(s, &i); deep {
				return true
			} else if stop {
				continue
			}
			if strings.IndexByte("()$'\"`\\{}", c) < 0 {
				i++ // an operand's character: no word is read whole here
				continue
			}
		}
		next, deep := sc.step(s, i)
		if deep {
			return true
		}
		i = next
	}
	return false
}

// operator handles the operators of a test or an arithmetic at s[*i];
// stop says it took them.
func (sc *depthScan) operator(s string, i *int) (stop, deep bool) {
	c := s[*i]
	two := ""
	if *i+1 < len(s) {
		two = s[*i : *i+2]
	}
	switch {
	case sc.top() == kArith && two == "))":
		sc.pop(kArith)
		*i += 2
		sc.cmdpos = false
		return true, false
	case sc.top() == kTest && two == "]]":
		sc.pop(kTest)
		*i += 2
		sc.cmdpos = false
		return true, false
	case two == "&&" || two == "||":
		*i += 2
		return true, !sc.op()
	case c == '!' || c == '?' || c == '~' || ((c == '-' || c == '+') && sc.top() != kTest):
		*i++
		return true, !sc.op()
	}
	return false, false
}

// step scans one token of code (or of a ${ } or an arithmetic) at s[i]
// and returns where the next begins.
func (sc *depthScan) step(s string, i int) (int, bool) {
	c := s[i]
	wordStart := i == 0 || strings.IndexByte(" \t\n;&|()<>", s[i-1]) >= 0
	switch c {
	case '\\':
		sc.cmdpos = false
		return i + 2, false
	case '\'':
		ansi := i > 0 && s[i-1] == '$'
		j := i + 1
		for j < len(s) && s[j] != '\'' {
			if ansi && s[j] == '\\' {
				j++
			}
			j++
		}
		sc.cmdpos = false
		return j + 1, false
	case '"':
		sc.cmdpos = false
		return i + 1, !sc.push(kDouble)
	case '`':
		if sc.top() == kBack {
			sc.pop(kBack)
			sc.cmdpos = false
			return i + 1, false
		}
		sc.cmdpos = true
		return i + 1, !sc.push(kBack)
	case '$':
		switch {
		case strings.HasPrefix(s[i:], "$(("):
			sc.cmdpos = false
			return i + 3, !sc.push(kArith)
		case strings.HasPrefix(s[i:], "$("):
			sc.cmdpos = true
			return i + 2, !sc.push(kParen)
		case strings.HasPrefix(s[i:], "${"):
			return i + 2, !sc.push(kParam)
		case strings.HasPrefix(s[i:], "$["):
			return i + 2, !sc.push(kArithB)
		}
		return i + 1, false
	case '(':
		if sc.cmdpos && strings.HasPrefix(s[i:], "((") {
			sc.cmdpos = false
			return i + 2, !sc.push(kArith)
		}
		sc.cmdpos = true
		return i + 1, !sc.push(kParen)
	case ')':
		sc.pop(kParen)
		sc.cmdpos = true // after a subshell, or a case pattern, a command
		return i + 1, false
	case '{':
		k := byte(kBlock)
		if sc.top() == kParam {
			k = kParam
		}
		sc.cmdpos = true
		return i + 1, !sc.push(k)
	case '}':
		if sc.top() == kParam {
			sc.pop(kParam)
		} else {
			sc.pop(kBlock)
		}
		sc.cmdpos = false
		return i + 1, false
	case '#':
		if wordStart && sc.code() {
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				return len(s), false
			}
			return i + j, false
		}
		return i + 1, false
	case '\n':
		sc.cmdpos = true
		i++
		if len(sc.heredocs) > 0 {
			i = sc.skipBodies(s, i)
		}
		return i, false
	case ';', '&', '|':
		sc.cmdpos = true
		return i + 1, false
	case ' ', '\t', '\r':
		return i + 1, false
	case '<':
		if strings.HasPrefix(s[i:], "<<<") {
			return i + 3, false
		}
		if strings.HasPrefix(s[i:], "<<") && sc.code() {
			return sc.heredocStart(s, i+2), false
		}
		if strings.HasPrefix(s[i:], "<(") {
			sc.cmdpos = true
			return i + 2, !sc.push(kParen)
		}
		return i + 1, false
	case '>':
		if strings.HasPrefix(s[i:], ">(") {
			sc.cmdpos = true
			return i + 2, !sc.push(kParen)
		}
		return i + 1, false
	}
	// A word: a keyword where a command begins, else nothing to count.
	j := i
	for j < len(s) && strings.IndexByte(" \t\r\n;&|()<>'\"`$\\{}", s[j]) < 0 {
		if s[j] == '[' && j > i && sc.code() && isName(s[i:j]) {
			// a[1<<2]=x: arithmetic, where << is no here-document.
			sc.cmdpos = false
			return j + 1, !sc.push(kIndex)
		}
		j++
	}
	if j == i {
		j++
	}
	word := s[i:j]
	if !sc.cmdpos || !sc.code() {
		if strings.IndexByte(word, '=') < 0 {
			sc.cmdpos = false
		}
		return j, false
	}
	switch word {
	case "if":
		return j, !sc.push(kIf)
	case "while", "until", "for", "select":
		sc.cmdpos = word != "for" && word != "select"
		return j, !sc.push(kLoop)
	case "case":
		sc.cmdpos = false
		return j, !sc.push(kCase)
	case "[[":
		sc.cmdpos = false
		return j, !sc.push(kTest)
	case "fi":
		sc.pop(kIf)
	case "done":
		sc.pop(kLoop)
	case "esac":
		sc.pop(kCase)
	case "then", "do", "else", "elif", "!", "time", "coproc", "function":
		return j, false // a command follows
	default:
		if strings.IndexByte(word, '=') < 0 {
			sc.cmdpos = false // an assignment leaves room for the command
		}
	}
	return j, false
}

// heredocStart reads the delimiter after << (at s[i]) and queues it.
func (sc *depthScan) heredocStart(s string, i int) int {
	h := heredoc{}
	if i < len(s) && s[i] == '-' {
		h.tabs = true
		i++
	}
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	var d strings.Builder
	for i < len(s) && strings.IndexByte(" \t\r\n;&|()<>", s[i]) < 0 {
		switch c := s[i]; c {
		case '\'', '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				j = len(s) - i - 1
			}
			d.WriteString(s[i+1 : i+1+j])
			i += j + 2
			continue
		case '\\':
			if i+1 < len(s) {
				d.WriteByte(s[i+1])
			}
			i += 2
			continue
		}
		d.WriteByte(s[i])
		i++
	}
	h.delim = d.String()
	sc.heredocs = append(sc.heredocs, h)
	return min(i, len(s))
}

// skipBodies skips the bodies of the queued here-documents, which begin
// at s[i], and returns where the code goes on.
func (sc *depthScan) skipBodies(s string, i int) int {
	for _, h := range sc.heredocs {
		for i < len(s) {
			end := strings.IndexByte(s[i:], '\n')
			line := s[i:]
			if end >= 0 {
				line = s[i : i+end]
			}
			if end < 0 {
				i = len(s)
			} else {
				i += end + 1
			}
			if h.tabs {
				line = strings.TrimLeft(line, "\t")
			}
			if line == h.delim {
				break
			}
		}
	}
	sc.heredocs = sc.heredocs[:0]
	return i
}

// isName reports whether s is a shell variable name.
func isName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return s != ""
}
