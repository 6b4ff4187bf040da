package daemon

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/internal/testutil"
)

// senclawIn is senclaw with text on its stdin.
func senclawIn(t *testing.T, text string, args ...string) (int, string, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "stdin")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var out, errOut bytes.Buffer
	code := cli.Main(args, cli.Env{Stdin: in, Stdout: &out, Stderr: &errOut, Hosting: Hosting{}})
	return code, out.String(), errOut.String()
}

// TestSecretsAndRefusalsThroughTheCLI: senclaw secrets takes a value on
// stdin and never shows it again; a run with --secret finds its
// placeholder; a run's stderr ends with what it was refused and names
// runs show, which lists the same refusals again, as text and JSON.
func TestSecretsAndRefusalsThroughTheCLI(t *testing.T) {
	testutil.RequireBwrap(t)
	requireTools(t, "curl")
	data := cliEnv(t)
	served := serveInProcess(t, data)
	defer stopServed(t, served)
	const value = "a-cli-secret-value-1234"

	if code, _, errOut := senclawIn(t, value, "secrets", "add", "gh"); code != cli.ExitUsage || !strings.Contains(errOut, "--host") {
		t.Errorf("add without --host: %d %q", code, errOut)
	}
	if code, out, errOut := senclawIn(t, value+"\n", "secrets", "add", "gh", "--host", "api.github.com", "--header", "Authorization", "--format", "Bearer {}"); code != 0 || !strings.Contains(out, "GH") {
		t.Fatalf("secrets add: %d %q %q", code, out, errOut)
	}
	for _, args := range [][]string{{"secrets", "ls"}, {"secrets", "ls", "--json"}} {
		code, out, errOut := senclaw(t, args...)
		if code != 0 || !strings.Contains(out, "api.github.com") || !strings.Contains(out, "GH") || strings.Contains(out+errOut, value) {
			t.Errorf("%v: %d %q %q", args, code, out, errOut)
		}
	}

	code, out, errOut := senclaw(t, "run", "--network", "--secret", "gh", "--", "sh", "-c", `echo "$GH"; curl -sS -m 10 -o /dev/null http://10.1.2.3/ || true`)
	if code != 0 || !strings.HasPrefix(out, "<senclaw-secret:gh:") || strings.Contains(out+errOut, value) {
		t.Fatalf("run --secret: %d %q %q", code, out, errOut)
	}
	m := regexp.MustCompile(`senclaw: refused during the run \(again: senclaw runs show (r[0-9a-f]+) --refusals\):\nsenclaw:   connect 10\.1\.2\.3:80: [^\n]*private network address[^\n]*\n$`).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("run's stderr does not end with its refusals:\n%s", errOut)
	}
	id := m[1]
	if code, out, _ := senclaw(t, "runs", "show", id, "--refusals"); code != 0 || !strings.HasPrefix(out, "connect 10.1.2.3:80: ") {
		t.Errorf("runs show --refusals: %d %q", code, out)
	}
	code, out, _ = senclaw(t, "runs", "show", id, "--refusals", "--json")
	var list []map[string]any
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list) != 1 || list[0]["kind"] != "connect" || list[0]["host"] != "10.1.2.3" {
		t.Errorf("runs show --refusals --json: %d %q %v", code, out, err)
	}
	if code, out, _ := senclaw(t, "runs", "show", id); code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "refused during the run:\n  connect 10.1.2.3:80") {
		t.Errorf("runs show: %d %q", code, out)
	}
	if code, out, _ := senclaw(t, "run", "--", "true"); code != 0 || out != "" {
		t.Errorf("a run refused nothing: %d %q", code, out)
	}
	if code, _, errOut := senclaw(t, "runs", "show"); code != cli.ExitUsage || !strings.Contains(errOut, "run's id") {
		t.Errorf("runs show without an id: %d %q", code, errOut)
	}

	// A sandbox with a secret and an HTTP rule says both in its note.
	code, out, errOut = senclaw(t, "create", "--name", "gh-read", "--network", "--secret", "gh", "--allow-http", "api.github.com GET,HEAD /repos/")
	if code != 0 || !strings.Contains(errOut, "HTTP rules for api.github.com; secrets gh as placeholders") {
		t.Fatalf("create --allow-http: %d %q %q", code, out, errOut)
	}
	c := client.DialSocket(apitype.SocketPath(filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "senclaw")))
	sb, err := c.Sandbox(t.Context(), strings.TrimSpace(out))
	if err != nil || len(sb.Ports.AllowHTTP) != 1 || strings.Join(sb.Ports.AllowHTTP[0].Methods, ",") != "GET,HEAD" || sb.Ports.AllowHTTP[0].Paths[0] != "/repos/" {
		t.Errorf("the sandbox's HTTP rules: %+v %v", sb, err)
	}
	if code, _, errOut := senclaw(t, "create", "--allow-http", "api.github.com GET /a extra"); code != cli.ExitUsage || !strings.Contains(errOut, "--allow-http") {
		t.Errorf("a bad --allow-http: %d %q", code, errOut)
	}
	if code, _, errOut := senclaw(t, "rm", "gh-read"); code != 0 {
		t.Errorf("rm: %d %q", code, errOut)
	}

	if code, out, errOut := senclawIn(t, "a-new-cli-value-5678", "secrets", "rotate", "gh"); code != 0 || strings.Contains(out+errOut, "5678") {
		t.Errorf("secrets rotate: %d %q %q", code, out, errOut)
	}
	if code, out, errOut := senclaw(t, "secrets", "rm", "gh"); code != 0 || !strings.Contains(out, "removed secret gh") {
		t.Errorf("secrets rm: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := senclaw(t, "secrets", "rm", "gh"); code == 0 || !strings.Contains(errOut, "gh") {
		t.Errorf("secrets rm of a removed secret: %d %q", code, errOut)
	}
}
