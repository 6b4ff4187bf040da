//go:build linux

package daemon

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestClaudeCodeEndToEnd runs the real Claude Code (SENCLAW_CLAUDE_CODE,
// its Linux binary; make test-claude-code fetches the pinned version
// from npm) as an ordinary user in print mode, with senclaw integrate's
// hook, against a stand-in for the Messages API on 127.0.0.1 that asks
// for one Bash tool call and then ends the turn. With the agent shell on
// the command runs through senclaw agent-shell, jailed, and its record
// says bwrap; off, on the host under the agent's own Landlock domain, recorded
// "landlock (host exec)" (writing the project only); with no allow rule for
// Bash, Claude Code still asks (print mode: it refuses the call), for
// the hook never approves. Without SENCLAW_CLAUDE_CODE it is skipped:
// go test ./... needs no npm.
func TestClaudeCodeEndToEnd(t *testing.T) {
	claude := os.Getenv("SENCLAW_CLAUDE_CODE")
	if claude == "" {
		t.Skip("set SENCLAW_CLAUDE_CODE to Claude Code's binary (make test-claude-code)")
	}
	testutil.RequireRoot(t)
	testutil.RequireBwrap(t)
	a := newAgentUser(t, "sc-claude-")
	api := newStandInAPI(t)
	project, beside := a.project, a.beside
	as, senclaw, lastRun := a.as, a.senclaw, a.lastRun
	senclaw("integrate", "claude-code")
	claudeEnv := []string{"ANTHROPIC_BASE_URL=" + api.url, "ANTHROPIC_API_KEY=sk-ant-stand-in",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1"}

	for _, tc := range []struct {
		name, agentShell string
		allow            bool
		isolation        string
	}{
		{"agent shell on", "on", true, "bwrap"},
		{"agent shell off", "off", true, "landlock (host exec)"},
		{"no allow rule", "on", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			senclaw("policy", "--agent-shell", tc.agentShell)
			marker := strings.ReplaceAll(tc.name, " ", "-")
			// Into the project (the agent shell's to write) and beside it
			// (only the host's).
			command := fmt.Sprintf("echo ran-%s > %s/in-project; touch %s/%s; echo ran-%s", marker, project, beside, marker, marker)
			api.expect(command)
			args := []string{"-p", "run the check", "--output-format", "json", "--model", "claude-sonnet-4-5"}
			if tc.allow {
				args = append(args, "--allowedTools", "Bash")
			}
			out, err := as(project, claudeEnv, claude, args...)
			if err != nil {
				t.Fatalf("claude -p: %v\n%s\nthe stand-in saw: %s", err, out, api.seen())
			}
			result := api.toolResult()
			_, errBeside := os.Stat(filepath.Join(beside, marker))
			if !tc.allow {
				if strings.Contains(result, "ran-"+marker) || errBeside == nil {
					t.Fatalf("with no allow rule the command ran: tool result %q", result)
				}
				if !strings.Contains(out, "permission_denials") || !strings.Contains(out, `"tool_name":"Bash"`) {
					t.Errorf("with no allow rule Claude Code did not refuse the call for want of permission:\n%s", out)
				}
				return
			}
			if !strings.Contains(result, "ran-"+marker) {
				t.Fatalf("the command's output did not come back to the model: tool result %q\nclaude: %s", result, out)
			}
			rec := lastRun()
			if rec.Source != apitype.SourceAgentShell || rec.Agent != "claude-code" || rec.Command != command || rec.Isolation != tc.isolation {
				t.Errorf("the run's record: source %q agent %q isolation %q command %q; want agent-shell, claude-code, %q, %q",
					rec.Source, rec.Agent, rec.Isolation, rec.Command, tc.isolation, command)
			}
			if got, _ := os.ReadFile(filepath.Join(project, "in-project")); string(got) != "ran-"+marker+"\n" {
				t.Errorf("the project's file holds %q", got)
			}
			if jailed := tc.isolation != "none"; jailed != (errBeside != nil) {
				t.Errorf("isolation %s, and the command wrote beside the project: %v", tc.isolation, errBeside == nil)
			}
		})
	}
}

// standInAPI is the Messages API as far as one turn goes: asked with the
// Bash tool offered and no tool result yet, it calls Bash with the
// expected command; given the tool's result, it ends the turn. Anything
// else (a title, a quota check) gets a short text.
type standInAPI struct {
	url     string
	mu      sync.Mutex
	command string
	result  string
	paths   []string
}

func newStandInAPI(t *testing.T) *standInAPI {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &standInAPI{url: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return a
}

func (a *standInAPI) expect(command string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.command, a.result = command, ""
}

func (a *standInAPI) toolResult() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.result
}

func (a *standInAPI) seen() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.paths, ", ")
}

func (a *standInAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	a.mu.Lock()
	a.paths = append(a.paths, r.Method+" "+r.URL.Path)
	command := a.command
	a.mu.Unlock()
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/v1/messages") {
		if strings.HasSuffix(r.URL.Path, "/count_tokens") {
			writeJSONBody(w, map[string]any{"input_tokens": 10})
			return
		}
		http.NotFound(w, r)
		return
	}
	var req struct {
		Stream bool `json:"stream"`
		Tools  []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	hasBash := false
	for _, tool := range req.Tools {
		hasBash = hasBash || tool.Name == "Bash"
	}
	result, answered := "", false
	if n := len(req.Messages); n > 0 {
		var blocks []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(req.Messages[n-1].Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "tool_result" {
					answered, result = true, toolResultText(b.Content)
				}
			}
		}
	}
	var block map[string]any
	stop := "end_turn"
	switch {
	case answered:
		a.mu.Lock()
		a.result = result
		a.mu.Unlock()
		block = map[string]any{"type": "text", "text": "Done."}
	case hasBash && command != "":
		input, _ := json.Marshal(map[string]any{"command": command, "description": "Run the check"})
		block = map[string]any{"type": "tool_use", "id": "toolu_standin1", "name": "Bash", "input": json.RawMessage(input)}
		stop = "tool_use"
	default:
		block = map[string]any{"type": "text", "text": "Check"}
	}
	message := map[string]any{"id": "msg_standin", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"stop_reason": stop, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 10, "output_tokens": 5}}
	if !req.Stream {
		message["content"] = []any{block}
		writeJSONBody(w, message)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	bw := bufio.NewWriter(w)
	event := func(name string, v map[string]any) {
		v["type"] = name
		data, _ := json.Marshal(v)
		fmt.Fprintf(bw, "event: %s\ndata: %s\n\n", name, data)
	}
	start := map[string]any{}
	for k, v := range message {
		start[k] = v
	}
	start["content"], start["stop_reason"] = []any{}, nil
	event("message_start", map[string]any{"message": start})
	if block["type"] == "tool_use" {
		input := block["input"]
		open := map[string]any{"type": "tool_use", "id": block["id"], "name": block["name"], "input": map[string]any{}}
		event("content_block_start", map[string]any{"index": 0, "content_block": open})
		event("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(input.(json.RawMessage))}})
	} else {
		event("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		event("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": block["text"]}})
	}
	event("content_block_stop", map[string]any{"index": 0})
	event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}})
	event("message_stop", map[string]any{})
	bw.Flush()
}

// toolResultText is a tool_result's content as text: a string, or the
// text of its blocks.
func toolResultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &blocks)
	var b strings.Builder
	for _, x := range blocks {
		b.WriteString(x.Text)
	}
	return b.String()
}

func writeJSONBody(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
