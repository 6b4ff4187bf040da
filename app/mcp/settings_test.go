package mcp

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app"
)

func TestParseSettingsPatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in string
		want     string // the patch as JSON, or "" for a read
		err      string
	}{
		{"empty", ``, "", ""},
		{"null", `null`, "", ""},
		{"no_fields", `{}`, "", ""},
		{"all_null", `{"defaultPids": null}`, "", ""},
		{"merge", `{"defaultPids": 64, "defaultNetwork": true}`, `{"defaultNetwork":true,"defaultPids":64}`, ""},
		{"allowlist_clear", `{"allowlist": []}`, `{"allowlist":[]}`, ""},
		{"allowlist_replace", `{"allowlist": ["/srv/data"]}`, `{"allowlist":["/srv/data"]}`, ""},
		{"allow_direct", `{"allowDirect": true}`, "", "allowDirect cannot be changed"},
		{"allow_direct_false", `{"allowDirect": false}`, "", "allowDirect cannot be changed"},
		{"allow_direct_case", `{"ALLOWDIRECT": true}`, "", "allowDirect cannot be changed"},
		{"sandbox_uid", `{"defaultPids": 64, "sandboxUid": 0}`, "", "sandboxUid cannot be changed"},
		{"mount_allow", `{"mountAllow": ["/etc"]}`, "", "mountAllow cannot be changed"},
		{"mount_allow_case", `{"MountAllow": ["/etc"]}`, "", "mountAllow cannot be changed"},
		{"shell_guard", `{"guard": {"envDump": false}}`, "", "guard cannot be changed"},
		{"shell_guard_case", `{"Guard": {"sandbox": "off"}}`, "", "guard cannot be changed"},
		{"sandbox_gid", `{"SandboxGid": 0}`, "", "sandboxGid cannot be changed"},
		{"allowed_sockets", `{"allowedSockets": ["/var/run/docker.sock"]}`, "", "allowedSockets cannot be changed"},
		{"allowed_sockets_case", `{"AllowedSockets": []}`, "", "allowedSockets cannot be changed"},
		{"nested_depth", `{"nestedProjectDepth": 0}`, "", "nestedProjectDepth cannot be changed"},
		{"nested_limit_case", `{"NestedProjectLimit": 1}`, "", "nestedProjectLimit cannot be changed"},
		{"engines", `{"Engines": [{"name": "mine", "host": "tcp://attacker:2376"}]}`, "", "engines cannot be changed"},
		{"case_variant", `{"DefaultPids": 64}`, "", `unknown setting "DefaultPids"`},
		{"unknown", `{"theme": "dark"}`, "", `unknown setting "theme"`},
		{"wrong_type", `{"defaultCpus": "many"}`, "", "defaultCpus: expected float64, got string"},
		{"not_object", `[1]`, "", "must be a JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			patch, err := parseSettingsPatch([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if patch != nil {
				data, _ := json.Marshal(patch)
				got = string(data)
			}
			if got != tc.want {
				t.Fatalf("patch %s, want %s", got, tc.want)
			}
		})
	}
}

// FuzzParseSettingsPatch checks that no argument object, however spelled,
// yields a patch that changes allowDirect, sandboxUid, sandboxGid or
// mountAllow once
// the engine decodes it (encoding/json, which matches names without
// regard to case), and that a patch names only settable fields.
func FuzzParseSettingsPatch(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `null`, `{"defaultPids": 64}`, `{"allowDirect": true}`, `{"AllowDirect": true}`,
		`{"allowlist": ["/a", "/b"], "defaultFsMode": "open"}`, `{"sandboxUid": 0, "sandboxGid": 0}`,
		`{"defaultCpus": 1.5, "defaultCpus": "x"}`, `{"allowDirect\u0000": true}`, `{"ALLOWDİRECT": true}`,
		`{"defaultImage": "x", "defaultTimeoutMs": 1000}`, `[]`, `"str"`, `{"a":`, `{"mountAllow": ["/etc"]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		patch, err := parseSettingsPatch(raw)
		if err != nil || patch == nil {
			return
		}
		for name := range patch {
			if !slices.Contains(settableSettings, name) {
				t.Fatalf("patch names %q", name)
			}
		}
		data, err := json.Marshal(patch)
		if err != nil {
			t.Fatalf("patch does not marshal: %v", err)
		}
		st := app.DefaultSettings()
		if err := json.Unmarshal(data, &st); err != nil {
			return // the engine refuses it as a whole
		}
		if st.AllowDirect || st.SandboxUID != 65534 || st.SandboxGID != 65534 || len(st.MountAllow) > 0 {
			t.Fatalf("%s changed a protected setting: %+v", raw, st)
		}
	})
}

func TestRunSummaryText(t *testing.T) {
	t.Parallel()
	zero, three := 0, 3
	cases := []struct {
		name string
		r    RunSummary
		want []string
	}{
		{"ok", RunSummary{RunID: "r1", OK: true, ExitCode: &zero, Isolation: "bwrap", Stdout: "42\n", State: "done"}, []string{"run r1: exit 0 (ok)", "isolation bwrap; network off", "--- stdout ---\n42\n"}},
		{"failed", RunSummary{RunID: "r2", ExitCode: &three, Isolation: "bwrap", Stderr: "boom", Network: true, State: "done"}, []string{"exit 3 (failed)", "network on", "--- stderr ---\nboom\n"}},
		{"timed_out", RunSummary{RunID: "r3", TimedOut: true, Truncated: true, State: "done"}, []string{"timed out", "output truncated"}},
		{"killed", RunSummary{RunID: "r4", Killed: "cancelled by the caller", State: "done"}, []string{"killed: cancelled by the caller"}},
		{"background", RunSummary{RunID: "r5", State: "running", Background: true, LogPath: ".runs/r5.log", notes: notes{Note: "memory not enforced"}}, []string{"still running in the background", "log file (sbx_file_read path): .runs/r5.log", "note: memory not enforced"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tc.r.text()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
		})
	}
}

func TestTailKeepsWholeRunes(t *testing.T) {
	t.Parallel()
	s := strings.Repeat("é", 10) // 2 bytes each
	for n := 1; n < 20; n++ {
		got := tail(s, n)
		if !json.Valid([]byte(`"`+got+`"`)) || len(got) > n || !strings.HasSuffix(s, got) || strings.ContainsRune(got, '\uFFFD') {
			t.Fatalf("tail(%d) = %q", n, got)
		}
	}
	if tail("abc", 5) != "abc" || tail("abcdef", 3) != "def" {
		t.Fatal("ascii tail")
	}
}

func TestLogPath(t *testing.T) {
	t.Parallel()
	if got := logPath("r1", "/data/workspaces/x/.runs/r1.log"); got != ".runs/r1.log" {
		t.Fatal(got)
	}
	if got := logPath("r1", "/elsewhere/r1.log"); got != "" {
		t.Fatal(got)
	}
}
