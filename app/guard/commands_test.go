package guard

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Commands yields every program a line would start, through each
// wrapper the credentialed-CLI check needs followed, three deep and
// more, with the wrappers it runs under.
func TestCommandsThroughWrappers(t *testing.T) {
	t.Parallel()
	wraps := map[string]string{
		"sh -c":       "sh -c 'WRAPPED'",
		"bash -c":     `bash -c "WRAPPED"`,
		"env":         "env A=1 WRAPPED",
		"nohup":       "nohup WRAPPED",
		"timeout":     "timeout -s KILL 5 WRAPPED",
		"xargs":       "xargs -0 -n1 WRAPPED",
		"sudo":        "sudo -u root -E WRAPPED",
		"nice":        "nice -n 10 WRAPPED",
		"exec":        "exec WRAPPED",
		"command":     "command WRAPPED",
		"builtin":     "builtin WRAPPED",
		"eval":        "eval 'WRAPPED'",
		"find -exec":  "find . -exec WRAPPED {} ;",
		"su -c":       "su -c 'WRAPPED' root",
		"stdbuf":      "stdbuf -oL WRAPPED",
		"time":        "time WRAPPED",
		"doas":        "doas WRAPPED",
		"setsid":      "setsid WRAPPED",
		"flock -c":    "flock /tmp/l -c 'WRAPPED'",
		"watch":       "watch -n 1 WRAPPED",
		"busybox":     "busybox WRAPPED",
		"ionice":      "ionice -c 3 WRAPPED",
		"chroot":      "chroot / WRAPPED",
		"taskset":     "taskset 0x1 WRAPPED",
		"unbuffer":    "unbuffer WRAPPED",
		"strace":      "strace -f -o /dev/null WRAPPED",
		"runuser":     "runuser -u nobody -- WRAPPED",
		"proxychains": "proxychains WRAPPED",
	}
	names := make([]string, 0, len(wraps))
	for n := range wraps {
		names = append(names, n)
	}
	slices.Sort(names)
	// Every wrapper alone, and every three in a row (each in each place).
	var chains [][]string
	for _, n := range names {
		chains = append(chains, []string{n})
	}
	for i, a := range names {
		b, c := names[(i+7)%len(names)], names[(i+13)%len(names)]
		chains = append(chains, []string{a, b, c}, []string{c, a, b})
	}
	for _, chain := range chains {
		cmd := "gh auth token"
		for i := len(chain) - 1; i >= 0; i-- {
			w := wraps[chain[i]]
			if strings.Contains(w, "'WRAPPED'") {
				cmd = strings.ReplaceAll(cmd, "'", `'\''`)
			} else if strings.Contains(w, `"WRAPPED"`) {
				cmd = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`").Replace(cmd)
			}
			cmd = strings.Replace(w, "WRAPPED", cmd, 1)
		}
		t.Run(strings.Join(chain, "/"), func(t *testing.T) {
			var found *Invocation
			s := Parse(cmd, Input{})
			for _, inv := range s.Commands() {
				if inv.Matches("gh") {
					found = &inv
				}
			}
			if found == nil {
				t.Fatalf("%q: gh not among %v", cmd, commandNames(s))
			}
			if len(found.Via) < len(chain) {
				t.Errorf("%q: gh runs via %v, want at least %v", cmd, found.Via, chain)
			}
			if res := s.Result(); res.Denied() {
				t.Errorf("%q refused: %+v", cmd, res.Findings)
			}
		})
	}
}

func commandNames(s *Script) []string {
	var out []string
	for _, inv := range s.Commands() {
		out = append(out, inv.Name)
	}
	return out
}

// A name not known before the run may be any program: Matches says so,
// so that a check can fail closed; a glob matches what it could expand
// to; `command -v` looks a name up and runs nothing.
func TestCommandsUnknownNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cmd   string
		match bool
	}{
		{"$CLI auth token", true},
		{"/usr/bin/g? auth token", true},
		{`"$(which gh)" auth token`, true},
		{"x=gh; $x auth token", true},
		{"command -v gh", false},
		{"echo gh", false},
		{"ghx auth", false},
	} {
		got := false
		for _, inv := range Parse(tc.cmd, Input{}).Commands() {
			got = got || inv.Matches("gh")
		}
		if got != tc.match {
			t.Errorf("%q: Matches(gh) %v, want %v", tc.cmd, got, tc.match)
		}
	}
}

// The credentialed-CLI check is a few lines on top of Commands.
func ExampleScript_Commands() {
	credentialed := []string{"gh", "aws", "kubectl"}
	cmd := `sudo -E env AWS_PROFILE=prod nohup sh -c 'aws s3 ls | xargs -n1 echo'`
	for _, inv := range Parse(cmd, Input{}).Commands() {
		for _, c := range credentialed {
			if inv.Matches(c) {
				fmt.Printf("%s via %s\n", inv.Name, strings.Join(inv.Via, " > "))
			}
		}
	}
	// Output: aws via sudo > env > nohup > sh -c
}
