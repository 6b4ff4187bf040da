package app

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app/policyfile"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// writePolicy writes a policy file, making its folder.
func writePolicy(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOwnerPolicyFileIsTheSettings: the engine writes the owner's file
// from the settings and the exec policy, a change of either rewrites it,
// and an edit of the file changes them.
func TestOwnerPolicyFileIsTheSettings(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	path := filepath.Join(e.opts.ConfigDir, OwnerPolicyFile)
	read := func() policyfile.File {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := policyfile.Parse(path, data)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	if f := read(); f.AllowDirect == nil || !*f.AllowDirect || f.FsMode != string(e.Settings().DefaultFsMode) {
		t.Fatalf("the file does not say the settings: %+v", f)
	}
	s := e.Settings()
	s.DefaultMemoryMB = 777
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	if f := read(); *f.Limits.MemoryMB != 777 {
		t.Fatalf("memory in the file %d after SetSettings", *f.Limits.MemoryMB)
	}
	writePolicy(t, path, `{"fsMode": "strict", "network": true, "limits": {"memoryMb": 640}, "allowedDomains": ["api.example.org"], "agentShell": {"sandboxed": true}}`)
	owner, err := e.OwnerPolicy()
	if err != nil {
		t.Fatal(err)
	}
	if s := e.Settings(); s.DefaultFsMode != backends.FsStrict || !s.DefaultNetwork || s.DefaultMemoryMB != 640 || !e.Policy().ExecShell {
		t.Fatalf("the edit did not reach the settings: %+v %+v", s, e.Policy())
	}
	if !slices.Equal(owner.File.AllowedDomains, []string{"api.example.org"}) {
		t.Fatalf("the file's own keys: %+v", owner.File)
	}
	if f := read(); f.AllowDirect == nil || !slices.Equal(f.AllowedDomains, []string{"api.example.org"}) {
		t.Fatalf("the file was not written whole again: %+v", f)
	}
	sb, err := e.Create(context.Background(), directConfig())
	if err != nil {
		t.Fatal(err)
	}
	writePolicy(t, path, "{\n  \"fsMode\": strict\n}")
	if _, err := e.RunOnce(context.Background(), directConfig(), RunRequest{Command: "true"}); err == nil || !strings.Contains(err.Error(), path+":2:13:") {
		t.Fatalf("a run with the owner's file broken: %v", err)
	}
	// Every way in to a run reads the file as it is: a hand edit holds for
	// an install, a supervised server and a new sandbox as for a run.
	_, errInstall := e.Install(context.Background(), sb.ID, InstallRequest{Manager: "pip", Packages: []string{"six"}})
	_, errLaunch := e.Launch(context.Background(), sb.ID, RunRequest{Command: "sleep 1"}, LaunchOptions{Output: io.Discard})
	_, errCreate := e.Create(context.Background(), directConfig())
	for what, err := range map[string]error{"an install": errInstall, "a launch": errLaunch, "a new sandbox": errCreate} {
		if err == nil || !strings.Contains(err.Error(), path+":2:13:") {
			t.Errorf("%s with the owner's file broken: %v", what, err)
		}
	}
}

// TestProjectPolicyOnlyNarrows is the layering case through a
// real run: the owner's file says strict, one domain and 512 MB; the
// project's asks for open, a second domain and 4096 MB. The run is
// strict (a file elsewhere is unreadable), one domain, 512 MB, and its
// record has three notes naming the keys.
func TestProjectPolicyOnlyNarrows(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	writePolicy(t, filepath.Join(e.opts.ConfigDir, OwnerPolicyFile), `{"fsMode": "strict", "network": true, "allowedDomains": ["api.example.org"], "limits": {"memoryMb": 512}}`)
	project, elsewhere := testDir(t), testDir(t)
	must(t, os.WriteFile(filepath.Join(elsewhere, "secret.txt"), []byte("x"), 0o644))
	writePolicy(t, filepath.Join(project, ProjectPolicyFile), `{"fsMode": "open", "allowedDomains": ["api.example.org", "evil.example.net"], "limits": {"memoryMb": 4096}}`)

	if _, err := e.OwnerPolicy(); err != nil { // as RunOnce does first
		t.Fatal(err)
	}
	sb, err := e.newSandbox(SandboxConfig{ProjectDir: &project})
	if err != nil {
		t.Fatal(err)
	}
	notes, err := e.applyProjectPolicy(&sb, nil, false, SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if sb.FsMode != backends.FsStrict || !slices.Equal(sb.Ports.Domains, []string{"api.example.org"}) || sb.MemoryMB != 512 || !sb.Network {
		t.Fatalf("sandbox %s %v %d MB network %v", sb.FsMode, sb.Ports.Domains, sb.MemoryMB, sb.Network)
	}
	if len(notes) != 3 {
		t.Fatalf("notes %q", notes)
	}

	res, err := e.RunOnce(context.Background(), SandboxConfig{ProjectDir: &project}, RunRequest{Command: "cat " + elsewhere + "/secret.txt; echo $?"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(res.Stdout) == "x\n0" || !strings.HasSuffix(strings.TrimSpace(res.Stdout), "1") {
		t.Fatalf("the run read a file outside the project (fs mode open?): %q %q", res.Stdout, res.Stderr)
	}
	rec := res.Record
	if len(rec.Policy) != 3 {
		t.Fatalf("record's policy notes %q", rec.Policy)
	}
	for i, key := range []string{"fsMode", "allowedDomains[1]", "limits.memoryMb"} {
		if !strings.Contains(rec.Policy[i], ": "+key+" ") {
			t.Errorf("note %q does not name %s", rec.Policy[i], key)
		}
	}
	if details := strings.Join(RunNotes(&rec).Details, "\n"); !strings.Contains(details, "policy: ") {
		t.Errorf("the reply's details do not carry the notes: %q", details)
	}
}

// TestBrokenProjectPolicyRefusesTheRun: no fallback to defaults; the
// refusal names the file, line and column, and the record says so.
func TestBrokenProjectPolicyRefusesTheRun(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	project := testDir(t)
	path := filepath.Join(project, ProjectPolicyFile)
	writePolicy(t, path, "{\n  \"fsMode\": \"strict\",\n    \"netwrok\": false\n}\n")
	res, err := e.RunOnce(context.Background(), SandboxConfig{ProjectDir: &project}, RunRequest{Command: "touch ran"})
	var r *RefusedError
	if !errors.As(err, &r) || !strings.Contains(err.Error(), path+":3:5: unknown key \"netwrok\"") {
		t.Fatalf("err %v", err)
	}
	if res == nil || !strings.HasPrefix(res.Record.Isolation, "refused: "+path+":3:5") {
		t.Fatalf("record %+v", res)
	}
	if _, err := os.Stat(filepath.Join(project, "ran")); err == nil {
		t.Fatal("the command ran")
	}
}

// TestProjectPolicyIsReadOnlyInTheSandbox: the agent shell's sandbox
// cannot change, replace or remove the project's policy file, nor make
// one where there is none.
func TestProjectPolicyIsReadOnlyInTheSandbox(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	agentShellOn(t, e)
	project, bare := testDir(t), testDir(t)
	path := filepath.Join(project, ProjectPolicyFile)
	writePolicy(t, path, `{"network": false}`)
	e.giveToAgent(t, project)
	e.giveToAgent(t, bare)
	for _, cmd := range []string{
		`echo '{"network": true}' > .senclaw/policy.json`,
		`rm -f .senclaw/policy.json`,
		`mv .senclaw .senclaw-old`,
		`rm -rf .senclaw`,
		`touch .senclaw/other.json`,
	} {
		res, err := e.AgentShell(context.Background(), AgentShellRequest{ProjectDir: project, Command: cmd})
		if err != nil {
			t.Fatal(err)
		}
		if res.Record.Isolation != "bwrap" {
			t.Fatalf("%s: isolation %q", cmd, res.Record.Isolation)
		}
		if data, err := os.ReadFile(path); err != nil || string(data) != `{"network": false}` {
			t.Fatalf("%s changed the policy file: %q %v", cmd, data, err)
		}
	}
	res, err := e.AgentShell(context.Background(), AgentShellRequest{ProjectDir: bare, Command: `mkdir -p .senclaw && echo '{}' > .senclaw/policy.json`})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(bare, ProjectPolicyFile)); err == nil {
		t.Fatalf("the sandbox made a policy file: %+v", res.Record)
	}
}

// BenchmarkPolicyFiles is what the policy files add to a run: the stat
// of the owner's file every one-shot pays (owner_stat), and reading and
// merging both files for a run in a project (project_run), which a
// --here or agent shell run pays on top.
func BenchmarkPolicyFiles(b *testing.B) {
	e := directEngine(b)
	project := b.TempDir()
	if err := os.MkdirAll(filepath.Join(project, ".senclaw"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ProjectPolicyFile), []byte(`{"fsMode": "strict", "network": false, "allowedDomains": ["api.example.org"], "limits": {"pids": 128, "memoryMb": 256}, "env": ["HOME"]}`), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("owner_stat", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.ownerPolicyFresh(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("project_run", func(b *testing.B) {
		for b.Loop() {
			sb := e.defaultSandbox()
			sb.Workspace = project
			if _, err := e.applyProjectPolicy(&sb, map[string]string{"HOME": "/x"}, false, SandboxConfig{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestSettingsChangeKeepsABrokenOwnerFile: a change of the settings or
// the exec policy while the owner's file is broken is refused with the
// file's line and column, and the file is left as it is: writing the
// settings over it would drop the hand edit (and the keys only the file
// holds) silently, a fallback to what was there before.
func TestSettingsChangeKeepsABrokenOwnerFile(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	path := filepath.Join(e.opts.ConfigDir, OwnerPolicyFile)
	broken := "{\n  \"fsMode\": \"strict\",\n  \"httpRules\": [{\"host\": \"api.example.org\", \"methods\": [\"GET\"]}],\n}\n"
	writePolicy(t, path, broken)
	s := e.Settings()
	s.DefaultMemoryMB = 777
	if _, err := e.SetSettings(s); err == nil || !strings.Contains(err.Error(), path+":4:1") {
		t.Errorf("SetSettings with the owner's file broken: %v", err)
	}
	if _, err := e.SetPolicy(e.Policy()); err == nil || !strings.Contains(err.Error(), path+":4:1") {
		t.Errorf("SetPolicy with the owner's file broken: %v", err)
	}
	if data, _ := os.ReadFile(path); string(data) != broken {
		t.Fatalf("the broken file was written over:\n%s", data)
	}
	if e.Settings().DefaultMemoryMB == 777 {
		t.Fatal("the settings changed")
	}
}

// TestOwnerPolicyFileOfAnotherUserIsRefused: the owner's file says
// whether the agent shell runs on the host and whether direct runs are
// allowed, so a file another local user could have written (theirs, in
// a config folder they may write, or one they may write into) is never
// taken: runs are refused until it is the owner's again; and the engine
// writes no file through a link planted where its temporary file goes.
func TestOwnerPolicyFileOfAnotherUserIsRefused(t *testing.T) {
	t.Parallel()
	other := testutil.SecondUser(t)
	e := bwrapEngine(t)
	agentShellOn(t, e)
	dir := e.opts.ConfigDir
	path := filepath.Join(dir, OwnerPolicyFile)
	must(t, os.Chmod(dir, 0o777)) // a config folder others may write
	wide := `{"allowDirect": true, "agentShell": {"sandboxed": false}}`
	other.Run(t, "sh", "-c", `printf '%s' "$1" > "$2.new" && mv -f "$2.new" "$2"`, "sh", wide, path)
	if _, err := e.OwnerPolicy(); err == nil || !strings.Contains(err.Error(), "uid") {
		t.Errorf("another user's file was taken: err %v, agent shell sandboxed %v", err, e.Policy().ExecShell)
	}
	if !e.Policy().ExecShell {
		t.Fatal("another user's file took the agent shell to the host")
	}
	must(t, os.Remove(path))
	writePolicy(t, path, `{"fsMode": "strict"}`)
	must(t, os.Chmod(path, 0o666))
	if _, err := e.OwnerPolicy(); err == nil || !strings.Contains(err.Error(), "mode") {
		t.Errorf("a file others may write was taken: %v", err)
	}
	must(t, os.Chmod(path, 0o600))
	if _, err := e.OwnerPolicy(); err != nil {
		t.Fatal(err)
	}
	// A link where the engine's temporary file goes leads nowhere.
	target := filepath.Join(other.Home, "planted-by-other")
	_ = os.Remove(target)
	other.Run(t, "ln", "-sf", target, path+".senclaw-tmp")
	s := e.Settings()
	s.DefaultMemoryMB = 640
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(target); err == nil {
		os.Remove(target)
		t.Fatal("the engine wrote its policy through a link another user planted")
	}
}
