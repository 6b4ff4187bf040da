package agentshell

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A settings file with other content: permissions, env, another hook on
// the same event, a key order of its own.
const claudeSettings = `{
  "permissions": {
    "allow": [
      "Bash(npm run test:*)"
    ],
    "deny": [
      "Read(./.env)"
    ]
  },
  "env": {
    "FOO": "a&b <c>"
  },
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Write",
        "hooks": [
          {
            "type": "command",
            "command": "prettier --check"
          }
        ]
      }
    ]
  },
  "model": "opus"
}
`

func TestIntegrateKeepsTheSettingsAndRemoveUndoesIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		target func(home string) Target
		orig   string
		event  string
	}{
		{"claude_user", func(h string) Target { return ClaudeTarget(h, "") }, claudeSettings, "PreToolUse"},
		{"claude_project", func(h string) Target { return ClaudeTarget(h, filepath.Join(h, "proj")) }, claudeSettings, "PreToolUse"},
		{"claude_tab_indent", func(h string) Target { return ClaudeTarget(h, "") }, strings.ReplaceAll(claudeSettings, "  ", "\t"), "PreToolUse"},
		{"gemini_user", func(h string) Target { return GeminiTarget(h, "") }, "{\n  \"theme\": \"dark\",\n  \"tools\": {\n    \"enableHooks\": true\n  }\n}\n", "BeforeTool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			tgt := tc.target(home)
			os.MkdirAll(filepath.Dir(tgt.Path), 0o755)
			if err := os.WriteFile(tgt.Path, []byte(tc.orig), 0o600); err != nil {
				t.Fatal(err)
			}
			senclaw := "/opt/sen claw/senclaw"
			c, err := Plan(tgt, senclaw, false)
			if err != nil || !c.Changed() {
				t.Fatalf("plan: %v changed %v", err, c.Changed())
			}
			if err := Apply(c); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(tgt.Path)
			if fi, _ := os.Stat(tgt.Path); fi.Mode().Perm() != 0o600 {
				t.Errorf("the file's mode became %o", fi.Mode().Perm())
			}
			ok, cmd, err := Installed(tgt)
			if !ok || err != nil || cmd != HookCommand(senclaw, tgt.Agent) {
				t.Fatalf("installed %v %q %v in:\n%s", ok, cmd, err, got)
			}
			// Everything else is still there, in its place and form.
			for _, line := range strings.Split(tc.orig, "\n") {
				if !strings.Contains(string(got), line) {
					t.Errorf("line %q of the original is gone:\n%s", line, got)
				}
			}
			if !strings.Contains(string(got), `"`+tc.event+`"`) || strings.Contains(string(got), `\u0026`) {
				t.Errorf("the hook is not under %s, or text was escaped:\n%s", tc.event, got)
			}
			// Idempotent.
			again, err := Plan(tgt, senclaw, false)
			if err != nil || again.Changed() {
				t.Fatalf("a second install changes the file: %v\n%s", err, again.After)
			}
			// Undone by --remove, to the byte.
			rm, err := Plan(tgt, senclaw, true)
			if err != nil {
				t.Fatal(err)
			}
			if err := Apply(rm); err != nil {
				t.Fatal(err)
			}
			back, _ := os.ReadFile(tgt.Path)
			if string(back) != tc.orig {
				t.Fatalf("after --remove the file differs from the original:\n%s\nwant:\n%s", back, tc.orig)
			}
		})
	}
}

// A new file gets just the hook; removing it leaves an empty object, and
// a broken file is refused with its path, untouched.
func TestIntegrateNewAndBrokenFiles(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	tgt := ClaudeTarget(home, "")
	c, err := Plan(tgt, "/usr/bin/senclaw", false)
	if err != nil || c.Before != nil {
		t.Fatal(err)
	}
	if err := Apply(c); err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := Installed(tgt); !ok {
		t.Fatal("not installed in a new file")
	}
	os.WriteFile(tgt.Path, []byte(`{"hooks": [`), 0o644)
	if _, err := Plan(tgt, "/usr/bin/senclaw", false); err == nil || !strings.Contains(err.Error(), tgt.Path) {
		t.Fatalf("a broken file: %v", err)
	}
}

// Status reads a project's file only inside the project: a settings file
// that is a symlink leading out of it (a sandboxed command may write the
// project) is reported, not followed.
func TestStatusDoesNotFollowLinksOutOfAProject(t *testing.T) {
	t.Parallel()
	home, project := t.TempDir(), t.TempDir()
	secret := filepath.Join(home, "secret.json")
	os.WriteFile(secret, []byte(`{"hooks":{"PreToolUse":[{"hooks":[{"command":"x senclaw hook claude-code"}]}]}}`), 0o600)
	os.MkdirAll(filepath.Join(project, ".claude"), 0o755)
	os.Symlink(secret, filepath.Join(project, ".claude", "settings.local.json"))
	for _, in := range Status(home, t.TempDir(), []string{project}) {
		if in.Project == project && in.Installed {
			t.Fatalf("followed a link out of the project: %+v", in)
		}
	}
}

// Gemini CLI runs no hook while hooksConfig.enabled is false (its switch
// since tools.enableHooks): installing turns it on, says so, and keeps
// the rest of hooksConfig.
func TestIntegrateGeminiTurnsItsHooksSwitchOn(t *testing.T) {
	t.Parallel()
	tgt := GeminiTarget(t.TempDir(), "")
	os.MkdirAll(filepath.Dir(tgt.Path), 0o755)
	orig := `{"hooksConfig": {"enabled": false, "disabled": ["lint"]}, "theme": "dark"}`
	if err := os.WriteFile(tgt.Path, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Plan(tgt, "/usr/bin/senclaw", false)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		HooksConfig struct {
			Enabled  bool     `json:"enabled"`
			Disabled []string `json:"disabled"`
		} `json:"hooksConfig"`
		Theme string `json:"theme"`
	}
	if err := json.Unmarshal(c.After, &got); err != nil {
		t.Fatalf("%v:\n%s", err, c.After)
	}
	if !got.HooksConfig.Enabled || len(got.HooksConfig.Disabled) != 1 || got.Theme != "dark" {
		t.Fatalf("hooksConfig not turned on, or the rest lost:\n%s", c.After)
	}
	if !strings.Contains(strings.Join(c.Notes, "\n"), "hooksConfig.enabled") {
		t.Errorf("no note says hooksConfig.enabled was turned on: %q", c.Notes)
	}
	// A file where it is on (or not set) is not touched for it.
	os.WriteFile(tgt.Path, []byte(`{"hooksConfig": {"enabled": true}}`), 0o600)
	if c, err := Plan(tgt, "/usr/bin/senclaw", false); err != nil || strings.Contains(strings.Join(c.Notes, "\n"), "hooksConfig") {
		t.Errorf("hooksConfig on: %v %q", err, c.Notes)
	}
}
