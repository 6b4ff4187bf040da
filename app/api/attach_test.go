package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/attach"
)

// TestAttachedAgentShell upgrades POST /agent-shell to attach frames over
// TCP: stdin goes in, output and the result come back. The upgrade gets
// the same checks as any request: no token, a foreign Host or Origin is
// answered before any switch, and nothing runs.
func TestAttachedAgentShell(t *testing.T) {
	t.Parallel()
	ts, _ := tcpServer(t, New(Options{Engine: testEngine(t), Token: testToken}))
	addr := ts.Listener.Addr().String()
	project := testDir(t)
	body := fmt.Sprintf(`{"projectDir": %q, "command": "read l; echo \"in:$l\"; echo err >&2; exit 4", "agent": "shell"}`, project)
	upgrade := func(headers string) (net.Conn, *bufio.Reader, *http.Response) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		fmt.Fprintf(conn, "POST /api/sandbox/agent-shell HTTP/1.1\r\nHost: %s\r\n%sConnection: Upgrade\r\nUpgrade: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			addr, headers, attach.Protocol, len(body), body)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		return conn, br, resp
	}
	for name, h := range map[string]string{
		"no_token":     "",
		"other_origin": "Authorization: Bearer " + testToken + "\r\nOrigin: http://evil.example\r\n",
	} {
		if _, _, resp := upgrade(h); resp.StatusCode == http.StatusSwitchingProtocols || resp.StatusCode < 400 {
			t.Errorf("%s: %s, want a refusal before the upgrade", name, resp.Status)
		}
	}
	conn, br, resp := upgrade("Authorization: Bearer " + testToken + "\r\n")
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Upgrade") != attach.Protocol {
		t.Fatalf("upgrade: %s %v", resp.Status, resp.Header)
	}
	w := attach.NewWriter(conn)
	w.Frame(attach.FrameStdin, []byte("hello\n"))
	w.Frame(attach.FrameStdinEOF, nil)
	stdout, stderr, started, result := readAttached(t, br)
	rep, _ := result["result"].(map[string]any)
	run, _ := rep["run"].(map[string]any)
	if stdout != "in:hello\n" || stderr != "err\n" || run["exitCode"] != float64(4) || started["source"] != "agent-shell" || run["agent"] != "shell" {
		t.Fatalf("stdout %q stderr %q started %v result %v", stdout, stderr, started, result)
	}
}

// readAttached reads an attached run's frames until its result: the
// output, the started record and the result.
func readAttached(t *testing.T, br *bufio.Reader) (stdout, stderr string, started, result map[string]any) {
	t.Helper()
	r := attach.NewReader(br)
	var out, errOut strings.Builder
	for result == nil {
		typ, payload, err := r.Next()
		if err != nil {
			t.Fatalf("reading frames: %v (stdout %q)", err, out.String())
		}
		switch typ {
		case attach.FrameStdout:
			out.Write(payload)
		case attach.FrameStderr:
			errOut.Write(payload)
		case attach.FrameStarted:
			json.Unmarshal(payload, &started)
		case attach.FrameResult:
			json.Unmarshal(payload, &result)
		}
	}
	return out.String(), errOut.String(), started, result
}

// TestAttachedExec upgrades POST /sandboxes/{id}/exec (senclaw shell):
// stdin goes in, and an interactive run has no deadline (the sandbox's 1 s
// timeout does not end it) and is recorded as interactive; terminal and
// interactive without the upgrade are refused, naming the field.
func TestAttachedExec(t *testing.T) {
	t.Parallel()
	e := testEngine(t)
	ts, _ := tcpServer(t, New(Options{Engine: e, Token: testToken}))
	addr := ts.Listener.Addr().String()
	sb, err := e.Create(context.Background(), app.SandboxConfig{Name: ptr("term"), Backend: ptr("direct"), TimeoutMs: ptr(1000)})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"argv": ["/bin/sh", "-c", "read l; sleep 1.5; echo \"in:$l\""], "interactive": true}`
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/sandbox/sandboxes/term/exec HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: Upgrade\r\nUpgrade: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		addr, testToken, attach.Protocol, len(body), body)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	w := attach.NewWriter(conn)
	w.Frame(attach.FrameStdin, []byte("hello\n"))
	stdout, _, _, result := readAttached(t, br)
	rep, _ := result["result"].(map[string]any)
	run, _ := rep["run"].(map[string]any)
	if stdout != "in:hello\n" || run["exitCode"] != float64(0) || run["interactive"] != true || run["sandboxId"] != sb.ID || run["timedOut"] == true {
		t.Fatalf("stdout %q result %v", stdout, result)
	}
	for field, b := range map[string]string{"terminal": `{"command": "true", "terminal": {"cols": 80, "rows": 24, "fds": [1]}}`, "interactive": `{"command": "true", "interactive": true}`} {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/sandbox/sandboxes/"+sb.ID+"/exec", strings.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || out["field"] != field {
			t.Errorf("%s without the upgrade: %s %v", field, resp.Status, out)
		}
	}
}

func ptr[T any](v T) *T { return &v }
