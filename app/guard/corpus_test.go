package guard

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// corpusCommand is one real-world command of testdata/commands.txt.
type corpusCommand struct {
	source, cmd string
}

// readCorpus reads testdata/commands.txt: "## SOURCE" lines name where
// the commands after them come from, other # lines are comments, and
// q"..." is a command in Go quoting (one that holds a newline).
func readCorpus(t testing.TB) []corpusCommand {
	t.Helper()
	f, err := os.Open("testdata/commands.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusCommand
	source := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			source = line[3:]
			continue
		case strings.HasPrefix(line, "#"), line == "":
			continue
		case strings.HasPrefix(line, `q"`):
			s, err := strconv.Unquote(line[1:])
			if err != nil {
				t.Fatalf("testdata/commands.txt: %q: %v", line, err)
			}
			line = s
		}
		out = append(out, corpusCommand{source, line})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The real-world commands pass, but for the environment dumps among
// them: the guard's refusals of everyday CI and install scripts are
// exactly these.
func TestRealWorldCommandsPass(t *testing.T) {
	t.Parallel()
	refused := map[string]Group{
		"env >/etc/docker-entrypoint-env": EnvDump,
		"env":                             EnvDump,
	}
	cmds := readCorpus(t)
	if len(cmds) != 1000 {
		t.Fatalf("testdata/commands.txt has %d commands, want 1000", len(cmds))
	}
	for _, c := range cmds {
		res := Check(c.cmd, testInput)
		want, listed := refused[c.cmd]
		switch {
		case res.Denied() && !listed:
			t.Errorf("%s: %q refused: %+v", c.source, c.cmd, res.Findings)
		case listed && res.First().Group != want:
			t.Errorf("%s: %q: want %s, got %+v", c.source, c.cmd, want, res.Findings)
		}
	}
}
