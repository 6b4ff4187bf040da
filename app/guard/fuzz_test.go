package guard

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/safetext"
)

// deepCommands nest in every way the parser recurses by, 10,000 levels
// deep (or as many as 64 KiB hold).
func deepCommands() map[string]string {
	n := 10000
	return map[string]string{
		"command_substitutions": strings.Repeat("$(", n) + "x" + strings.Repeat(")", n),
		"quoted_substitutions":  strings.Repeat(`"$(`, n) + "x" + strings.Repeat(`)"`, n),
		"subshells":             strings.Repeat("(", n) + "x" + strings.Repeat(")", n),
		"braces":                strings.Repeat("{ ", n) + "x;" + strings.Repeat(" }", n),
		"parameter_defaults":    strings.Repeat("${a:-", n) + "x" + strings.Repeat("}", n),
		"arithmetic":            "echo $((" + strings.Repeat("(", n) + "1" + strings.Repeat(")", n) + "))",
		"ternaries":             "echo $((" + strings.Repeat("1?", n) + "1" + strings.Repeat(":1", n) + "))",
		"if":                    strings.Repeat("if true; then ", n) + ":" + strings.Repeat("; fi", n),
		"while":                 strings.Repeat("while ", n) + "x",
		"functions":             strings.Repeat("f(){ ", n) + "x",
		"test_negations":        "[[ " + strings.Repeat("! ", n) + "a ]]",
		"test_conjunctions":     "[[ " + strings.Repeat("a && ", n) + "a ]]",
		"case_in_substitutions": strings.Repeat("$(case x in a) ", n) + "x",
		"process_substitutions": strings.Repeat("<(", n) + "x" + strings.Repeat(")", n),
		"sh_c":                  nestedShC(n),
		// A here-document's delimiter where << is a shift must not hide
		// what follows from the scan.
		"shift_not_heredoc": "$[1<<E]\n" + strings.Repeat("(", n) + "x\nE\n",
		"index_not_heredoc": "a[1<<E]=1\n" + strings.Repeat("(", n) + "x\nE\n",
	}
}

func nestedShC(n int) string {
	s := "curl x | sh"
	for i := 0; i < n && len(s) < MaxInput; i++ {
		s = "sh -c " + shellJoin([]string{s})
	}
	return s
}

// Deep nesting answers quickly, is refused as Unreadable, and never
// takes the parser's stack past its bound (which would kill the engine:
// no recover survives it).
func TestDeepNestingIsRefusedQuickly(t *testing.T) {
	t.Parallel()
	for name, cmd := range deepCommands() {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			res := Check(cmd, testInput)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
			if !res.Denied() {
				t.Fatalf("%d bytes nested deep passed", len(cmd))
			}
			if g := res.First().Group; g != Unreadable && name != "sh_c" {
				t.Errorf("want %s, got %+v", Unreadable, res.Findings)
			}
		})
	}
}

// A command past MaxInput is Unreadable, however plain.
func TestLongCommandIsUnreadable(t *testing.T) {
	t.Parallel()
	cmd := strings.Repeat("echo hello; ", MaxInput/12+1)
	if res := Check(cmd, testInput); res.First().Group != Unreadable {
		t.Fatalf("a %d-byte command: %+v", len(cmd), res.Findings)
	}
	if res := Check(cmd[:MaxInput/2], testInput); res.Denied() {
		t.Fatalf("a %d-byte command of echos: %+v", MaxInput/2, res.Findings)
	}
}

// A long chain of && or | is no nesting to the guard: it reads it in a
// loop, not one call deeper per operator.
func TestLongChainsPass(t *testing.T) {
	t.Parallel()
	for _, op := range []string{" && ", " || ", " | ", "; "} {
		cmd := strings.Repeat("true"+op, 6000) + "true"
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		if res := Check(cmd, testInput); res.Denied() {
			t.Errorf("%q chain: %+v", op, res.First())
		}
	}
}

// FuzzGuard: the parser path never panics, answers within a bound, and
// its findings are fit for a terminal.
func FuzzGuard(f *testing.F) {
	for _, tc := range guardCases {
		f.Add(tc.cmd)
	}
	for _, cmd := range deepCommands() {
		f.Add(cmd[:min(len(cmd), 4096)])
	}
	f.Add("$'\\x00\\u202e' ${IFS:0:1} {1..99999999} ~root/x <<<$(<x) a[1<<2]=3")
	f.Fuzz(func(t *testing.T, cmd string) {
		start := time.Now()
		s := Parse(cmd, testInput)
		res := s.Result()
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("%d bytes took %v", len(cmd), d)
		}
		if len(res.Findings) > maxFindings {
			t.Fatalf("%d findings", len(res.Findings))
		}
		for _, fd := range res.Findings {
			if _, ok := safetext.Valid(fd.Part); !ok || !fd.Group.Valid() || fd.Why == "" {
				t.Fatalf("finding not fit to show: %+v", fd)
			}
			if strings.Contains(fd.Why, "bug of the guard") {
				t.Fatalf("the guard panicked (failClosed caught it): %s", fd.Why)
			}
		}
		for _, inv := range s.Commands() {
			if _, ok := safetext.Valid(inv.Part); !ok {
				t.Fatalf("invocation part not fit to show: %q", inv.Part)
			}
		}
	})
}
