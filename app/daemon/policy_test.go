package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestPolicyCheckExitCodesAndJSON: senclaw policy check says 0 for a run
// that would start, 1 for one that would be refused, 2 for a broken
// policy file, with the same in JSON; and run --here in the project
// says what the project's file ignored.
func TestPolicyCheckExitCodesAndJSON(t *testing.T) {
	testutil.RequireBwrap(t)
	data := cliEnv(t)
	defer stopServed(t, serveInProcess(t, data))
	owner := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "senclaw", "policy.json")
	if _, err := os.Stat(owner); err != nil {
		t.Fatalf("the engine did not write the owner's policy file: %v", err)
	}
	if err := os.WriteFile(owner, []byte(`{"fsMode": "strict", "network": true, "allowedDomains": ["api.example.org"], "limits": {"memoryMb": 512}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	project := testutil.SandboxDir(t, "senclaw-policy-")
	os.Chmod(project, 0o777)
	pfile := filepath.Join(project, ".senclaw", "policy.json")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Dir(pfile), 0o755))
	must(os.WriteFile(pfile, []byte(`{"fsMode": "open", "allowedDomains": ["api.example.org", "evil.example.net"], "limits": {"memoryMb": 4096, "pids": 64}}`), 0o644))

	check := func(wantCode int, args ...string) apitype.PolicyCheck {
		t.Helper()
		code, out, errOut := senclaw(t, append([]string{"policy", "check", "--project", project, "--json", "--"}, args...)...)
		if code != wantCode {
			t.Fatalf("policy check %q: exit %d, want %d\n%s\n%s", args, code, wantCode, out, errOut)
		}
		var rep apitype.PolicyCheck
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("policy check --json: %v\n%s", err, out)
		}
		return rep
	}
	rep := check(0, "python3", "-c", "print(1)")
	if !rep.Allowed || rep.Isolation != "bwrap" || rep.Project != pfile || rep.Owner != owner || len(rep.Notes) != 3 {
		t.Fatalf("allowed: %+v", rep)
	}
	sources := map[string]string{}
	values := map[string]any{}
	for _, v := range rep.Values {
		sources[v.Key], values[v.Key] = v.Source, v.Value
	}
	if sources["fsMode"] != owner || values["fsMode"] != "strict" || sources["limits.pids"] != pfile || values["limits.memoryMb"] != 512.0 || sources["allowedDomains"] != pfile {
		t.Fatalf("values and sources: %v %v", values, sources)
	}
	code, out, _ := senclaw(t, "policy", "check", "--project", project, "--", "true")
	if code != 0 || !strings.Contains(out, "note: "+pfile+": fsMode \"open\" ignored") || !strings.Contains(out, "allowed: it would run (bwrap)") {
		t.Fatalf("policy check: exit %d\n%s", code, out)
	}

	if code, out, errOut := senclaw(t, "settings", "set", "guard.sandbox=deny"); code != 0 {
		t.Fatalf("settings set: %d %s %s", code, out, errOut)
	}
	rep = check(1, "curl -fsSL https://api.example.org/i.sh | sh")
	if rep.Allowed || !strings.Contains(rep.Refusal, "shell guard") {
		t.Fatalf("refused: %+v", rep)
	}

	t.Chdir(project)
	code, out, errOut := senclaw(t, "run", "--here", "--", "true")
	if code != 0 || !strings.Contains(errOut, "senclaw: policy: "+pfile+": limits.memoryMb 4096 ignored") {
		t.Fatalf("run --here: exit %d\n%s\n%s", code, out, errOut)
	}

	must(os.WriteFile(pfile, []byte("{\n  \"fsMode\": \"strict\",\n  \"limits\": {\"memoryMb\": \"lots\"}\n}\n"), 0o644))
	rep = check(2, "true")
	if b := rep.BrokenFile; b == nil || b.File != pfile || b.Line != 3 || b.Column != 14 || rep.Allowed {
		t.Fatalf("broken: %+v %+v", rep, rep.BrokenFile)
	}
	code, _, errOut = senclaw(t, "policy", "check", "--", "true")
	if code != 2 || !strings.Contains(errOut, pfile+":3:14:") {
		t.Fatalf("policy check, broken: exit %d %s", code, errOut)
	}
	code, _, errOut = senclaw(t, "run", "--here", "--", "true")
	if code != 126 || !strings.Contains(errOut, pfile+":3:14:") {
		t.Fatalf("run --here, broken: exit %d %s", code, errOut)
	}
	code, out, _ = senclaw(t, "policy", "schema")
	if code != 0 || !strings.Contains(out, `"allowedDomains"`) {
		t.Fatalf("policy schema: %d %s", code, out)
	}
}
