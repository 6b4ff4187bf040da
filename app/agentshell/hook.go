// Package agentshell connects the agents people use to the engine's agent
// shell.
//
// It holds the hooks that Claude Code and Gemini CLI call before their shell
// tool runs a command (they rewrite it to run through `senclaw agent-shell
// -c`, or deny it with the reason when the agent shell would refuse it), the
// edits of those agents' settings files that install and remove the hooks,
// the wrapper script for any program that honours SHELL, and the reading of
// where each is installed.
//
// It talks to no daemon itself: the caller passes what asks the engine
// (Checker), so the package serves the CLI and the API alike.
package agentshell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Agents that have hooks, by the name the CLI takes.
const (
	ClaudeCode = "claude-code"
	GeminiCLI  = "gemini-cli"
	// Shell is the SHELL wrapper's name in records and in the state.
	Shell = "shell"
)

// Checker says what the agent shell would do for a command in
// projectDir: the isolation it would get ("none" with the switch off), or
// why it would refuse. An error that is not a refusal means the engine
// could not be asked.
type Checker func(ctx context.Context, projectDir string) (isolation string, err error)

// HookInput is the part of a hook's stdin this package reads. Claude Code
// (PreToolUse) and Gemini CLI (BeforeTool) both send the session's cwd,
// the tool's name and its input as the model wrote it.
type HookInput struct {
	Event     string          `json:"hook_event_name"`
	Cwd       string          `json:"cwd"`
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
}

// HookRequest is one call of a hook.
type HookRequest struct {
	Agent string
	// Input is the hook's stdin (at most MaxHookInput bytes are read).
	Input []byte
	// ProjectDir is the agent's project root from its environment
	// (CLAUDE_PROJECT_DIR, GEMINI_PROJECT_DIR), "" if unset.
	ProjectDir string
	// Senclaw is the absolute path of the senclaw binary the rewritten
	// command calls.
	Senclaw string
	Check   Checker
}

// MaxHookInput bounds what a hook reads from its stdin.
const MaxHookInput = 4 << 20

// shellTool is each agent's shell tool, as its hooks name it.
var shellTool = map[string]string{ClaudeCode: "Bash", GeminiCLI: "run_shell_command"}

// Hook answers one hook call: the JSON to print on stdout, nothing when
// the tool call is none of the agent shell's business (another tool).
//
// Claude Code (hooks reference, PreToolUse, https://code.claude.com/docs/en/hooks):
// the answer is {"hookSpecificOutput": {"hookEventName": "PreToolUse",
// "updatedInput": {...}}}. updatedInput replaces the whole tool input,
// so every field of the original is kept and only command changes
// (anthropics/claude-code#30770). No permissionDecision goes with it: an
// "allow" would skip the permission prompt the person set up, and in
// bypassPermissions mode Claude Code drops updatedInput when a decision
// is present (rtk-ai/rtk#981 and rtk-ai/rtk#893). A denial is
// permissionDecision "deny" with permissionDecisionReason, which Claude
// Code shows to the model.
// Claude Code checks its permission rules against the rewritten command
// (anthropics/claude-code#65393): allow rules written for the bare
// command ask again, and deny rules become prompts (docs/agent-shell.md).
//
// Gemini CLI (docs/hooks/reference.md, BeforeTool): the answer is
// {"hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input":
// {"command": ...}}}, which merges with and overrides the model's
// arguments; a denial is {"decision": "deny", "reason": ...}, sent to the
// agent as the tool's error.
func Hook(ctx context.Context, req HookRequest) ([]byte, error) {
	tool, ok := shellTool[req.Agent]
	if !ok {
		return nil, fmt.Errorf("no hook for agent %q: use %s or %s", req.Agent, ClaudeCode, GeminiCLI)
	}
	var in HookInput
	if err := json.Unmarshal(req.Input, &in); err != nil {
		return deny(req.Agent, "senclaw could not read the hook's input ("+err.Error()+"), so the command was not run"), nil
	}
	if in.ToolName != tool {
		return nil, nil
	}
	var input map[string]json.RawMessage
	if err := json.Unmarshal(in.ToolInput, &input); err != nil {
		return deny(req.Agent, "senclaw could not read the tool's input, so the command was not run"), nil
	}
	var command string
	if raw, ok := input["command"]; !ok || json.Unmarshal(raw, &command) != nil {
		return deny(req.Agent, "senclaw found no command in the tool's input, so nothing was run"), nil
	}
	project := ProjectFor(in.Cwd, req.ProjectDir)
	if project == "" {
		return deny(req.Agent, fmt.Sprintf("senclaw: the hook's cwd %q is not an absolute path, so the agent shell cannot tell the project; nothing was run", in.Cwd)), nil
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := req.Check(cctx, project); err != nil {
		return deny(req.Agent, "senclaw agent shell: "+err.Error()+"; the command was not run"), nil
	}
	timeout := 0
	if raw, ok := input["timeout"]; ok && req.Agent == ClaudeCode {
		_ = json.Unmarshal(raw, &timeout) // milliseconds, as the Bash tool takes it
	}
	rewritten := Rewrite(req.Senclaw, req.Agent, project, command, timeout)
	data, _ := json.Marshal(rewritten)
	switch req.Agent {
	case ClaudeCode:
		input["command"] = data
		return json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName": "PreToolUse", "updatedInput": input}})
	default:
		return json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName": "BeforeTool", "tool_input": map[string]string{"command": rewritten}}})
	}
}

// deny is the agent's form of a refusal with reason.
func deny(agent, reason string) []byte {
	var v any
	if agent == ClaudeCode {
		v = map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}}
	} else {
		v = map[string]any{"decision": "deny", "reason": reason}
	}
	data, _ := json.Marshal(v)
	return data
}

// ProjectFor is the project a hook's command belongs to: the agent's
// project root when cwd lies in it, else cwd itself; "" when cwd is not
// absolute.
func ProjectFor(cwd, root string) string {
	if !filepath.IsAbs(cwd) {
		return ""
	}
	cwd = filepath.Clean(cwd)
	if root != "" && filepath.IsAbs(root) {
		root = filepath.Clean(root)
		if cwd == root || strings.HasPrefix(cwd, strings.TrimSuffix(root, "/")+"/") {
			return root
		}
	}
	return cwd
}

// Rewrite is the command line that runs command through the agent shell
// of project: the original goes, byte for byte, as the single quoted
// argument of -c, which sh hands on unchanged (quotes, newlines,
// heredocs, a trailing newline). timeoutMs, when set, is the agent's own
// limit for the command.
func Rewrite(senclaw, agent, project, command string, timeoutMs int) string {
	var b strings.Builder
	b.WriteString(Quote(senclaw))
	b.WriteString(" agent-shell --agent " + agent + " --project " + Quote(project))
	if timeoutMs >= 1000 && timeoutMs <= 600000 {
		b.WriteString(" --timeout " + strconv.Itoa(timeoutMs) + "ms")
	}
	b.WriteString(" -c " + Quote(command))
	return b.String()
}

// Quote quotes s for sh: in single quotes, where nothing is special but
// the single quote itself.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ErrUnreachable is what a Checker returns when no engine answers.
var ErrUnreachable = errors.New("the SenClaw engine cannot be reached")
