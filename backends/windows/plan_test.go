package windows

import (
	"encoding/json"
	"flag"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

var testHost = Host{
	UserSID:         "S-1-5-21-1111111111-2222222222-3333333333-1001",
	Home:            `C:\Users\Ann`,
	InterpreterDirs: []string{`C:\Program Files\Python312`},
	CPUs:            8,
}

func baseSpec(mode backends.FsMode) *backends.Spec {
	return &backends.Spec{
		SandboxID: "s1", RunID: "r1",
		Workspace: `C:\Users\Ann\AppData\Local\senclaw\workspaces\s1`,
		Argv:      []string{`C:\Program Files\Python312\python.exe`, "-c", `print("hi there")`, `C:\dir with space\`},
		Env:       []string{"PATH=C:\\Windows\\System32", "TEMP=C:\\Users\\Ann\\AppData\\Local\\senclaw\\workspaces\\s1\\.tmp", "Path=C:\\Python", "HOME=x"},
		FsMode:    mode,
		ReadPaths: []string{`D:\datasets`},
		Hidden:    []string{`C:\Users\Ann\AppData\Local\senclaw`, `C:\Users\Ann\AppData\Roaming\senclaw`},
		Network:   true,
		Limits:    backends.Limits{CPUs: 2, MemoryMB: 1024, Pids: 64},
	}
}

func planCases() []struct {
	name string
	spec *backends.Spec
} {
	type c = struct {
		name string
		spec *backends.Spec
	}
	var out []c
	for _, mode := range backends.FsModes {
		out = append(out, c{string(mode), baseSpec(mode)})
		m := baseSpec(mode)
		m.Mounts = []backends.Mount{{Source: `D:\data`, Target: "data"}, {Source: `D:\data\models`, Target: "models", ReadOnly: true}, {Source: `E:\ref`, Target: "ref", ReadOnly: true}}
		out = append(out, c{string(mode) + "_mounts", m})
		p := baseSpec(mode)
		p.Network, p.Ports = false, backends.PortRules{Connect: []int{443}, Loopback: []int{5432}, Listen: []int{8000}}
		out = append(out, c{string(mode) + "_ports", p})
	}
	masked := baseSpec(backends.FsOpen)
	masked.Masked = []string{`C:\Program Files\nodejs\node.exe`}
	out = append(out, c{"open_masked", masked})
	return out
}

func TestPlanGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range planCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := Plan(tc.spec, testHost)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.MarshalIndent(p, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, filepath.Join("testdata", tc.name+".golden"), string(b)+"\n", *update)
		})
	}
}

// TestPlanMeaning checks what the ACEs mean, case by case.
func TestPlanMeaning(t *testing.T) {
	t.Parallel()
	for _, tc := range planCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := Plan(tc.spec, testHost)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Undo, reversed(p.Add)) {
				t.Error("the undo is not the added ACEs in reverse")
			}
			deny := map[string]bool{}
			for _, a := range p.Add {
				if a.SID != p.CapabilitySID {
					t.Errorf("an ACE for %s, not the capability SID", a.SID)
				}
				if a.Deny {
					deny[a.Path] = true
				}
			}
			for _, s := range []string{`c:\users\ann\.ssh`, `c:\users\ann\.aws`, `c:\users\ann\appdata\local\senclaw`, `c:\users\ann\appdata\local\google\chrome\user data`} {
				if !deny[s] {
					t.Errorf("no DENY ACE on %s", s)
				}
			}
			if len(tc.spec.Mounts) > 0 && !slices.ContainsFunc(p.Add, func(a ACE) bool {
				return a.Path == `d:\data\models` && a.Deny && a.Mask == MaskDenyWrite
			}) {
				t.Error("the read-only mount inside the read-write one is not denied writes")
			}
			home := slices.ContainsFunc(p.Add, func(a ACE) bool { return a.Path == `c:\users\ann` && !a.Deny })
			if home != (tc.spec.FsMode == backends.FsOpen) {
				t.Errorf("profile folder granted = %v in %s mode", home, tc.spec.FsMode)
			}
			if !p.Job.KillOnClose || p.Job.MemoryBytes != 1<<30 || p.Job.ActiveProcesses != 64 || p.Job.CPURate != 2500 {
				t.Errorf("job limits %+v", p.Job)
			}
			if !strings.HasSuffix(p.Block, "\x00\x00") || strings.Count(p.Block, "\x00") != len(p.Environment)+1 {
				t.Errorf("environment block %q", p.Block)
			}
		})
	}
}

func reversed(a []ACE) []ACE {
	r := slices.Clone(a)
	slices.Reverse(r)
	return r
}

func TestPlanRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(*backends.Spec)
		want string
	}{
		{"network_off", func(s *backends.Spec) { s.Network = false }, "no firewall rule"},
		{"ads_mount", func(s *backends.Spec) { s.Mounts = []backends.Mount{{Source: `D:\data:secret`, Target: "d"}} }, "alternate data stream"},
		{"unc_mount", func(s *backends.Spec) { s.Mounts = []backends.Mount{{Source: `\\server\share`, Target: "d"}} }, "UNC"},
		{"device_path", func(s *backends.Spec) { s.Workspace = `\\?\C:\ws` }, `\\?\`},
		{"short_name", func(s *backends.Spec) { s.Mounts = []backends.Mount{{Source: `C:\PROGRA~1\x`, Target: "d"}} }, "8.3 short name"},
		{"dotdot", func(s *backends.Spec) { s.Workspace = `C:\ws\..\Users\Ann` }, `".."`},
		{"mount_in_secret", func(s *backends.Spec) { s.Mounts = []backends.Mount{{Source: `C:\Users\Ann\.SSH\keys`, Target: "k"}} }, "no sandbox may see"},
		{"env_nul", func(s *backends.Spec) { s.Env = []string{"A=b\x00c"} }, "NUL"},
		{"no_sandbox_id", func(s *backends.Spec) { s.SandboxID = "" }, "sandbox id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := baseSpec(backends.FsStrict)
			tc.edit(s)
			_, err := Plan(s, testHost)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Plan error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`C:\Users\Ann\Project`, `c:\users\ann\project`},
		{`c:/users/ann/./project/`, `c:\users\ann\project`},
		{`D:\`, `d:\`},
		{`C:\a\\b`, `c:\a\b`},
		{`C:\data~x\y`, `c:\data~x\y`},
		{`C:\a:b`, ""}, {`C:\a\b::$DATA`, ""}, {`\\?\C:\a`, ""}, {`\\.\pipe\x`, ""}, {`\\host\share\x`, ""},
		{`C:\PROGRA~1`, ""}, {`C:\docume~2.txt`, ""}, {`C:\a\..\b`, ""}, {`C:\secret.`, ""}, {`C:\secret `, ""},
		{`C:\a\NUL`, ""}, {`C:\a\con.txt`, ""}, {`relative\x`, ""}, {`C:relative`, ""}, {`C:\a?b`, ""},
	} {
		got, err := Normalize("path", tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("Normalize(%q) = %q, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// splitCommandLine is the C runtime's parser (CommandLineToArgvW) for the
// arguments after the program, as Microsoft documents it.
func splitCommandLine(s string) []string {
	var out []string
	var cur strings.Builder
	inQuote, have := false, false
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			n := 0
			for i < len(s) && s[i] == '\\' {
				n++
				i++
			}
			if i < len(s) && s[i] == '"' {
				cur.WriteString(strings.Repeat(`\`, n/2))
				if n%2 == 1 {
					cur.WriteByte('"')
					i++
				}
			} else {
				cur.WriteString(strings.Repeat(`\`, n))
			}
			have = true
			continue
		case c == '"':
			inQuote = !inQuote
			have = true
		case (c == ' ' || c == '\t') && !inQuote:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteByte(c)
			have = true
		}
		i++
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}

func TestCommandLineRoundTrip(t *testing.T) {
	t.Parallel()
	args := []string{"plain", "", "two words", `quote"inside`, `trailing\`, `C:\dir with space\`, `\\"x\\`, "tab\there", `a\\b`}
	line, err := CommandLine(append([]string{`C:\p.exe`}, args...))
	if err != nil {
		t.Fatal(err)
	}
	got := splitCommandLine(line)
	if got[0] != `C:\p.exe` || !slices.Equal(got[1:], args) {
		t.Errorf("CommandLine(%q) = %s, which parses back as %q", args, line, got)
	}
}

func FuzzCommandLine(f *testing.F) {
	for _, s := range []string{"", `a"b`, `a\`, `\\"`, "a b"} {
		f.Add(s, s+`\`)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if strings.ContainsRune(a+b, 0) {
			t.Skip()
		}
		line, err := CommandLine([]string{`C:\p.exe`, a, b})
		if err != nil {
			t.Fatal(err)
		}
		got := splitCommandLine(line)
		if len(got) != 3 || got[1] != a || got[2] != b {
			t.Fatalf("%q %q became %s, parsed back as %q", a, b, line, got)
		}
	})
}

// FuzzNormalize: whatever Normalize accepts is one plain local path,
// folded, and normalizing it again changes nothing.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{`C:\Users\Ann`, `C:\a:b`, `\\?\C:\x`, `C:\PROGRA~1`, `c:/x/./y/`, `C:\a\..\b`, `C:\x.`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		n, err := Normalize("path", p)
		if err != nil {
			return
		}
		if strings.Contains(n[2:], ":") || strings.HasPrefix(n, `\\`) || strings.Contains(n, "/") {
			t.Fatalf("Normalize(%q) = %q: a stream, device or UNC form got through", p, n)
		}
		if n != strings.ToLower(n) {
			t.Fatalf("Normalize(%q) = %q is not folded", p, n)
		}
		for _, c := range strings.Split(n[3:], `\`) {
			if c == ".." || c == "." || shortName().MatchString(c) {
				t.Fatalf("Normalize(%q) = %q keeps the component %q", p, n, c)
			}
		}
		again, err := Normalize("path", n)
		if err != nil || again != n {
			t.Fatalf("Normalize(%q) = %q, but again %q, %v", p, n, again, err)
		}
		up, err := Normalize("path", strings.ToUpper(p))
		if err == nil && up != strings.ToLower(up) {
			t.Fatalf("the upper-case spelling of %q normalizes to %q", p, up)
		}
	})
}

func TestNetworkNote(t *testing.T) {
	t.Parallel()
	b := New(Options{})
	if got := b.NetworkNote(false, backends.PortRules{}); !strings.Contains(got, "refused") || !strings.Contains(got, "firewall") {
		t.Errorf("the network-off note %q does not say that runs are refused and why", got)
	}
	if got := b.NetworkNote(true, backends.PortRules{Connect: []int{443}}); !strings.Contains(got, "not enforced") {
		t.Errorf("the network-on note %q does not say the rules are not enforced", got)
	}
}
