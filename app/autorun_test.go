package app

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// agentProject is a project as agents and git leave it: Claude Code's
// settings and hooks, a repository with a hook and husky's hooks
// directory, VS Code's settings, direnv's .envrc; Gemini CLI, Codex,
// Cursor and JetBrains have nothing in it yet. Everything belongs to the
// sandbox user, who may write the project.
func agentProject(t *testing.T, e *Engine) (string, map[string]string) {
	t.Helper()
	project := testDir(t)
	files := map[string]string{
		".claude/settings.json":   `{"hooks": {}}`,
		".claude/hooks/check.sh":  "#!/bin/sh\n",
		".git/config":             "[core]\n\thooksPath = .husky/_\n",
		".git/HEAD":               "ref: refs/heads/main\n",
		".git/hooks/pre-commit":   "#!/bin/sh\n",
		".husky/_/h":              "#!/bin/sh\n",
		".husky/pre-commit":       "npm test\n",
		".vscode/settings.json":   "{}",
		".envrc":                  "export A=1\n",
		"src/main.go":             "package main\n",
		".git/objects/info/.keep": "",
	}
	for name, text := range files {
		p := filepath.Join(project, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(text), 0o644))
	}
	e.giveToAgent(t, project)
	return project, files
}

// agentShellOn turns e's Agent shell switch on.
func agentShellOn(t *testing.T, e *Engine) {
	t.Helper()
	pol := e.Policy()
	pol.ExecShell = true
	if _, err := e.SetPolicy(pol); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestAgentsAndGitsFilesAreReadOnlyInTheAgentSandbox: a command the agent
// shell runs in a project can change neither what the agents and git on
// this machine run code from (settings, hooks, git's config), nor make
// what is missing of it, by any way a program writes files; it reads
// them, and writes the rest of the project (git's own writes in .git
// included). Once the run is over the project holds exactly what it held
// and what the command made elsewhere: the empty directories that stood
// for the missing ones are gone. The file API refuses the same writes.
func TestAgentsAndGitsFilesAreReadOnlyInTheAgentSandbox(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	agentShellOn(t, e)
	project, files := agentProject(t, e)
	attempts := []struct{ name, cmd string }{
		{"append_claude_settings", "echo x >> .claude/settings.json"},
		{"new_claude_local_settings", `echo '{"hooks":{"PreToolUse":[]}}' > .claude/settings.local.json`},
		{"replace_claude_hook", "echo evil > .claude/hooks/check.sh"},
		{"chmod_claude_hook", "chmod 777 .claude/hooks/check.sh"},
		{"rename_claude_away", "mv .claude .claude-old"},
		{"remove_claude", "rm -rf .claude"},
		{"make_gemini_settings", "mkdir -p .gemini && echo '{}' > .gemini/settings.json"},
		{"make_codex_config", "mkdir -p .codex && echo x > .codex/config.toml"},
		{"codex_as_a_file", "echo x > .codex"},
		{"make_cursor_mcp", "mkdir -p .cursor && echo '{}' > .cursor/mcp.json"},
		{"make_idea", "mkdir .idea"},
		{"link_gemini_elsewhere", "rmdir .gemini; ln -s src .gemini && test -L .gemini"},
		{"append_git_config", "printf '[core]\\n\\tfsmonitor = ./evil\\n' >> .git/config"},
		{"replace_git_config", "cp .git/config /tmp/c && rm -f .git/config && cp /tmp/c .git/config"},
		{"link_git_config", "ln -sf /tmp/c .git/config && test -L .git/config"},
		{"new_git_hook", "echo evil > .git/hooks/post-checkout"},
		{"change_git_hook", "echo evil >> .git/hooks/pre-commit"},
		{"move_hooks_away", "mv .git/hooks .git/hooks-old"},
		{"change_husky_hook", "echo evil >> .husky/pre-commit"},
		{"new_husky_stub", "echo evil > .husky/_/post-merge"},
		{"change_vscode_settings", "echo x >> .vscode/settings.json"},
		{"change_envrc", "echo evil >> .envrc"},
		{"truncate_envrc", "truncate -s 0 .envrc"},
		{"hardlink_claude_settings_then_write", "ln .claude/settings.json s && echo x >> s"},
	}
	var script strings.Builder
	script.WriteString("for x in .claude/settings.json .git/config .envrc; do cat $x >/dev/null || echo 'UNREADABLE '$x; done\n")
	for _, a := range attempts {
		script.WriteString("( " + a.cmd + " ) 2>/dev/null && echo 'WROTE " + a.name + "'\n")
	}
	script.WriteString("echo ok > src/new.go && touch .git/index.lock && rm .git/index.lock && mkdir -p .git/objects/ab && echo READY\n")
	res, err := e.AgentShell(context.Background(), AgentShellRequest{ProjectDir: project, Command: script.String()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.Isolation != "bwrap" {
		t.Fatalf("isolation %q", res.Record.Isolation)
	}
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		if strings.HasPrefix(line, "WROTE") || strings.HasPrefix(line, "UNREADABLE") {
			t.Errorf("%s", line)
		}
	}
	if !strings.Contains(res.Stdout, "READY") {
		t.Errorf("the rest of the project was not writable: %q %q", res.Stdout, res.Stderr)
	}
	for name, text := range files {
		if b, err := os.ReadFile(filepath.Join(project, name)); err != nil || string(b) != text {
			t.Errorf("%s changed on the host: %q %v", name, b, err)
		}
	}
	got, _ := os.ReadDir(project)
	var names []string
	for _, d := range got {
		names = append(names, d.Name())
	}
	if want := []string{".claude", ".envrc", ".git", ".husky", ".vscode", "src"}; !slices.Equal(names, want) {
		t.Errorf("the project holds %q after the run, want %q (nothing made for the run may stay)", names, want)
	}
	if _, err := os.Stat(filepath.Join(project, "src", "new.go")); err != nil {
		t.Errorf("the command's own file is missing: %v", err)
	}

	id := res.Record.SandboxID
	for _, p := range []string{".claude/settings.json", ".claude/settings.local.json", ".gemini/settings.json", ".git/config", ".git/hooks/pre-push", ".envrc", ".husky/pre-commit", ".Claude/settings.json"} {
		if _, err := e.WriteFile(id, p, []byte("evil")); err == nil || !strings.Contains(err.Error(), "read-only for sandboxes") {
			t.Errorf("the file API wrote %s: %v", p, err)
		}
	}
	if err := e.DeleteFile(id, ".claude"); err == nil {
		t.Error("the file API removed .claude")
	}
	if err := e.Mkdir(id, ".gemini"); err == nil {
		t.Error("the file API made .gemini")
	}
	if _, err := e.WriteFile(id, "src/ok.go", []byte("package main\n")); err != nil {
		t.Errorf("the file API refused a project file: %v", err)
	}
}

// TestAPlantedCommondirRefusesTheRun: git writes a commondir only in a
// worktree's git dir; one in a repository's own .git makes git read
// another config. A sandbox can make one (the .git folder stays writable
// for git's own writes), and the next run in that project is refused
// until it is removed; so is a run in a project whose .claude is a link.
func TestAPlantedCommondirRefusesTheRun(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	agentShellOn(t, e)
	project, _ := agentProject(t, e)
	if _, err := e.AgentShell(context.Background(), AgentShellRequest{ProjectDir: project, Command: "echo ../evil > .git/commondir"}); err != nil {
		t.Fatal(err)
	}
	_, err := e.AgentShell(context.Background(), AgentShellRequest{ProjectDir: project, Command: "true"})
	if !IsRefused(err) || !strings.Contains(err.Error(), ".git/commondir") {
		t.Fatalf("a run after a planted commondir: %v, want a refusal naming it", err)
	}
	must(t, os.Remove(filepath.Join(project, ".git", "commondir")))
	must(t, os.Rename(filepath.Join(project, ".claude"), filepath.Join(project, "claude-real")))
	must(t, os.Symlink("claude-real", filepath.Join(project, ".claude")))
	_, err = e.AgentShell(context.Background(), AgentShellRequest{ProjectDir: project, Command: "true"})
	if !IsRefused(err) || !strings.Contains(err.Error(), ".claude") {
		t.Fatalf("a run with .claude a link: %v, want a refusal naming it", err)
	}
}

// TestAgentsAndGitsFilesUnderLandlockSaySoInTheNote: Landlock cannot keep
// a file inside a writable folder read-only (its rules add rights to a
// whole tree): the run's record says which files it may change, and which
// missing ones it may make.
func TestAgentsAndGitsFilesUnderLandlockSaySoInTheNote(t *testing.T) {
	t.Parallel()
	e := landlockEngine(t)
	agentShellOn(t, e)
	project, _ := agentProject(t, e)
	res, err := e.AgentShell(context.Background(), AgentShellRequest{ProjectDir: project, Command: "true"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.Isolation != "landlock" {
		t.Fatalf("isolation %q", res.Record.Isolation)
	}
	missing := strings.Join(res.Record.Missing, "\n")
	for _, want := range []string{"Landlock cannot keep", project + "/.claude,", project + "/.git/config", project + "/.gemini", "not kept from being made"} {
		if !strings.Contains(missing, want) {
			t.Errorf("the note does not say %q:\n%s", want, missing)
		}
	}
	for _, gone := range []string{".gemini", ".codex"} {
		if _, err := os.Lstat(filepath.Join(project, gone)); err == nil {
			t.Errorf("%s was made in the project for a Landlock run", gone)
		}
	}
}

// TestGitWorksInAProtectedRepository: with the repository's config and
// hooks read-only (and a missing hooks folder standing as an empty one),
// git in the agent sandbox still commits, without a warning, while
// changing its config fails.
func TestGitWorksInAProtectedRepository(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	e := bwrapEngine(t)
	agentShellOn(t, e)
	project := testDir(t)
	git := exec.Command("git", "init", "-q", project)
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	must(t, os.RemoveAll(filepath.Join(project, ".git", "hooks")))
	e.giveToAgent(t, project)
	res, err := e.AgentShell(context.Background(), AgentShellRequest{ProjectDir: project, Command: `export HOME=/tmp GIT_CONFIG_NOSYSTEM=1
echo hi > a.txt && git add a.txt && git -c user.email=a@b -c user.name=a commit -q -m first && echo COMMITTED
git config user.name someone 2>/dev/null && echo CONFIG_CHANGED
git log --oneline | wc -l`})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Stdout, "COMMITTED") || strings.Contains(res.Stdout, "CONFIG_CHANGED") {
		t.Errorf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	if strings.Contains(res.Stderr, "hint:") {
		t.Errorf("git warned in the sandbox: %q", res.Stderr)
	}
	if _, err := os.Lstat(filepath.Join(project, ".git", "hooks")); err == nil {
		t.Error("the empty hooks folder made for the run is still there")
	}
}
