package app

import (
	"fmt"
	"strings"
	"testing"
)

// TestARunsRefusalsAreItsOwnCountedBoundedAndEscaped: a refusal reaches
// the runs of its sandbox going then, and no other; the same refusal is
// counted, not repeated; the list is bounded; what the sandbox chose
// (paths with escapes) cannot move a terminal's cursor.
func TestARunsRefusalsAreItsOwnCountedBoundedAndEscaped(t *testing.T) {
	t.Parallel()
	var l refusalLog
	a, b := l.watch("sb1"), l.watch("sb1")
	other := l.watch("sb2")
	l.add("sb1", Refusal{Kind: RefusedHTTP, Host: "api.test", Port: 443, Method: "POST", Path: "/x\x1b[2J", Rule: "allowHttp api.test: GET on any path", Allow: "add POST"})
	l.add("sb1", Refusal{Kind: RefusedHTTP, Host: "api.test", Port: 443, Method: "POST", Path: "/x\x1b[2J", Rule: "allowHttp api.test: GET on any path", Allow: "add POST"})
	l.stop("sb1", b)
	l.add("sb1", Refusal{Kind: RefusedUnix, Target: "/run/x.sock", Rule: "the Unix socket guard"})
	got := a.result()
	if len(got) != 2 || got[0].Count != 2 || got[0].Path != `/x\x1b[2J` || got[1].Kind != RefusedUnix {
		t.Fatalf("a: %+v", got)
	}
	if len(b.result()) != 1 || other.result() != nil {
		t.Fatalf("b %+v, other %+v", b.result(), other.result())
	}
	if line := got[0].Line(); line != `http POST api.test:443/x\x1b[2J: allowHttp api.test: GET on any path (2 times); to allow it: add POST` {
		t.Fatalf("line %q", line)
	}
	for i := 0; i < 2*maxRefusalsKept; i++ {
		l.add("sb1", Refusal{Kind: RefusedConnect, Host: fmt.Sprintf("h%d.test", i), Port: 443, Rule: "r"})
	}
	got = a.result()
	if len(got) != maxRefusalsKept+1 || got[len(got)-1].Kind != "more" || !strings.Contains(got[len(got)-1].Rule, "34 more") {
		t.Fatalf("bounded: %d, last %+v", len(got), got[len(got)-1])
	}
}
