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

// TestGeminiCLIEndToEnd runs the real Gemini CLI (SENCLAW_GEMINI_CLI, its
// bundle/gemini.js; make test-gemini-cli fetches the pinned version from
// npm) as an ordinary user in non-interactive mode, with senclaw
// integrate's BeforeTool hook, against a stand-in for the Gemini API on
// 127.0.0.1 (GOOGLE_GEMINI_BASE_URL) that asks for one run_shell_command
// call and then ends the turn. With the agent shell on the command runs
// through senclaw agent-shell, jailed, and its record says bwrap; off, on
// the host under the agent's own Landlock domain, recorded "landlock
// (host exec)" (writing the project only); with no allow rule for the shell tool, Gemini
// CLI withholds it and answers a call of it with an error
// (non-interactive: nobody can approve it), for the hook never approves;
// and a person who had switched Gemini CLI's hooks off gets them back on
// from integrate, so the command still runs jailed. Without
// SENCLAW_GEMINI_CLI it is skipped: go test ./... needs no npm.
func TestGeminiCLIEndToEnd(t *testing.T) {
	gemini := os.Getenv("SENCLAW_GEMINI_CLI")
	if gemini == "" {
		t.Skip("set SENCLAW_GEMINI_CLI to Gemini CLI's bundle/gemini.js (make test-gemini-cli)")
	}
	testutil.RequireRoot(t)
	testutil.RequireBwrap(t)
	a := newAgentUser(t, "sc-gemini-", ".gemini")
	api := newStandInGemini(t)
	home, project, beside := a.home, a.project, a.beside
	as, senclaw, lastRun := a.as, a.senclaw, a.lastRun
	// The person's own settings, which integrate keeps: the Gemini API
	// with a key (GOOGLE_GEMINI_BASE_URL alone picks the "gateway" auth,
	// which non-interactive mode refuses as "Invalid auth method"), and
	// nothing leaves for Google (usage statistics, the update check).
	settings := filepath.Join(home, ".gemini", "settings.json")
	own := `{"security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": false},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false}}`
	if err := os.WriteFile(settings, []byte(own), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(settings, a.u.UID, a.u.GID); err != nil {
		t.Fatal(err)
	}
	senclaw("integrate", "gemini-cli")
	geminiEnv := []string{"GOOGLE_GEMINI_BASE_URL=" + api.url, "GEMINI_API_KEY=stand-in", "GEMINI_TELEMETRY_ENABLED=false"}

	for _, tc := range []struct {
		name, agentShell string
		allow            bool
		isolation        string
		hooksOff         bool
	}{
		{"agent shell on", "on", true, "bwrap", false},
		{"agent shell off", "off", true, "landlock (host exec)", false},
		{"no allow rule", "on", false, "", false},
		// The person had switched Gemini CLI's hooks off (hooksConfig.enabled),
		// and integrates again: the hook must run all the same.
		{"hooks switched off", "on", true, "bwrap", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.hooksOff {
				switchHooksOff(t, settings)
				senclaw("integrate", "gemini-cli")
			}
			senclaw("policy", "--agent-shell", tc.agentShell)
			marker := strings.ReplaceAll(tc.name, " ", "-")
			// Into the project (the agent shell's to write) and beside it
			// (only the host's).
			command := fmt.Sprintf("echo ran-%s > %s/in-project; touch %s/%s; echo ran-%s", marker, project, beside, marker, marker)
			api.expect(command)
			args := []string{"-p", "run the check", "--output-format", "json", "--model", "gemini-2.5-flash", "--skip-trust"}
			if tc.allow {
				args = append(args, "--allowed-tools", "run_shell_command")
			}
			out, err := as(project, geminiEnv, gemini, args...)
			result, called := api.toolResult()
			_, errBeside := os.Stat(filepath.Join(beside, marker))
			if !tc.allow {
				// Non-interactive, Gemini CLI withholds a tool nobody can
				// approve, and a call of it gets an error back.
				if strings.Contains(result, "ran-"+marker) || errBeside == nil {
					t.Fatalf("with no allow rule the command ran: tool result %q", result)
				}
				if !called || !strings.Contains(result, `"error"`) {
					t.Errorf("with no allow rule Gemini CLI did not refuse the call (answered %v): %q\ngemini: %s", called, result, out)
				}
				if rec := lastRun(); rec.Command == command {
					t.Errorf("with no allow rule the command reached the agent shell: %+v", rec)
				}
				return
			}
			if !api.wasOffered() {
				t.Errorf("Gemini CLI did not offer run_shell_command with --allowed-tools run_shell_command")
			}
			if err != nil {
				t.Fatalf("gemini -p: %v\n%s\nthe stand-in saw: %s", err, out, api.seen())
			}
			if !strings.Contains(result, "ran-"+marker) {
				t.Fatalf("the command's output did not come back to the model: tool result %q\ngemini: %s\nthe stand-in saw: %s", result, out, api.seen())
			}
			rec := lastRun()
			if rec.Source != apitype.SourceAgentShell || rec.Agent != "gemini-cli" || rec.Command != command || rec.Isolation != tc.isolation {
				t.Errorf("the run's record: source %q agent %q isolation %q command %q; want agent-shell, gemini-cli, %q, %q",
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

// switchHooksOff sets hooksConfig.enabled false in Gemini CLI's settings
// file, as a person does who turned the hooks off.
func switchHooksOff(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	doc["hooksConfig"] = map[string]any{"enabled": false}
	data, _ = json.MarshalIndent(doc, "", "  ")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// standInGemini is the Gemini API (generateContent and
// streamGenerateContent) as far as one turn goes: asked with
// run_shell_command offered and no function response yet, it calls it
// with the expected command; given the response, it ends the turn.
// Anything else (a routing or a next-speaker question, countTokens) gets
// a short text.
type standInGemini struct {
	url     string
	mu      sync.Mutex
	command string
	result  string
	called  bool
	offered bool
	paths   []string
}

func newStandInGemini(t *testing.T) *standInGemini {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &standInGemini{url: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return a
}

func (a *standInGemini) expect(command string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.command, a.result, a.called, a.offered = command, "", false, false
}

// toolResult is the function response Gemini CLI sent back, as JSON
// text, and whether one came at all.
func (a *standInGemini) toolResult() (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.result, a.called
}

// wasOffered says whether a request since expect offered run_shell_command.
func (a *standInGemini) wasOffered() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.offered
}

func (a *standInGemini) seen() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.paths, ", ")
}

func (a *standInGemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	a.mu.Lock()
	a.paths = append(a.paths, r.Method+" "+r.URL.Path)
	command := a.command
	a.mu.Unlock()
	method := r.URL.Path[strings.LastIndex(r.URL.Path, ":")+1:]
	if r.Method != http.MethodPost || !strings.Contains(r.URL.Path, "/models/") {
		http.NotFound(w, r)
		return
	}
	if method == "countTokens" {
		writeJSONBody(w, map[string]any{"totalTokens": 10})
		return
	}
	if method != "generateContent" && method != "streamGenerateContent" {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				FunctionResponse json.RawMessage `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	hasShell := false
	for _, tool := range req.Tools {
		for _, f := range tool.FunctionDeclarations {
			hasShell = hasShell || f.Name == "run_shell_command"
		}
	}
	result, answered := "", false
	if n := len(req.Contents); n > 0 {
		for _, p := range req.Contents[n-1].Parts {
			if len(p.FunctionResponse) > 0 {
				answered, result = true, string(p.FunctionResponse)
			}
		}
	}
	var part map[string]any
	switch {
	case answered:
		a.mu.Lock()
		a.result, a.called = result, true
		a.mu.Unlock()
		part = map[string]any{"text": "Done."}
	case command != "":
		// Asked for even when not offered: a model may call a tool the
		// CLI withheld, and the CLI must still refuse it.
		a.mu.Lock()
		a.offered = a.offered || hasShell
		a.mu.Unlock()
		part = map[string]any{"functionCall": map[string]any{"name": "run_shell_command",
			"args": map[string]any{"command": command, "description": "Run the check"}}}
	default:
		part = map[string]any{"text": "Check"}
	}
	response := map[string]any{
		"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}},
			"finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  "gemini-2.5-flash",
	}
	if method == "generateContent" {
		writeJSONBody(w, response)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	bw := bufio.NewWriter(w)
	data, _ := json.Marshal(response)
	fmt.Fprintf(bw, "data: %s\r\n\r\n", data)
	bw.Flush()
}
