package daemon

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/tenants"
	"github.com/senclaw/sandbox/internal/testutil"
)

// dummyAddress gives this machine an address of its own on an interface
// the test makes (never a real LAN): a dummy one, or where the kernel has
// no dummy driver one end of a veth pair; it is removed after.
func dummyAddress(t *testing.T, addr string) {
	t.Helper()
	testutil.RequireRoot(t)
	requireTools(t, "ip")
	dev := fmt.Sprintf("sclan%d", os.Getpid()%10000)
	link := []string{"link", "add", dev, "type", "dummy"}
	if exec.Command("ip", link...).Run() != nil {
		link = []string{"link", "add", dev, "type", "veth", "peer", "name", dev + "p"}
	} else {
		exec.Command("ip", "link", "del", dev).Run()
	}
	for _, args := range [][]string{link, {"addr", "add", addr + "/32", "dev", dev}, {"link", "set", dev, "up"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			exec.Command("ip", "link", "del", dev).Run()
			t.Fatalf("ip %v: %v %s", args, err, out)
		}
	}
	t.Cleanup(func() { exec.Command("ip", "link", "del", dev).Run() })
}

// lanDaemon is a real `senclaw serve --lan`, and where its LAN listener is.
type lanDaemon struct {
	*testDaemon
	url, fingerprint string
}

func startLANDaemon(t *testing.T, lan string) *lanDaemon {
	t.Helper()
	testutil.RequireBwrap(t)
	bin := testutil.Senclaw(t)
	root := testutil.SandboxDir(t, "sc-lan-")
	testutil.StopDaemonAtCleanup(t, filepath.Join(root, "run", "senclaw"))
	d := &testDaemon{bin: bin, root: root, home: filepath.Join(root, "home")}
	os.MkdirAll(d.home, 0o755)
	d.env = append(os.Environ(), "XDG_RUNTIME_DIR="+filepath.Join(root, "run"), "XDG_CONFIG_HOME="+filepath.Join(root, "config"),
		"XDG_DATA_HOME=", "SENCLAW_DATA_DIR="+filepath.Join(root, "data"), "HOME="+d.home, "DOCKER_HOST=unix://"+filepath.Join(root, "no-docker.sock"))
	cmd := exec.Command(bin, "serve", "--listen", "", "--lan", lan)
	cmd.Env = d.env
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = testutil.LogFile(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	ld := &lanDaemon{testDaemon: d}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "LAN listener on "); ok {
			ld.url, _, _ = strings.Cut(rest, " ")
			_, ld.fingerprint, _ = strings.Cut(rest, "certificate SHA-256 ")
		}
		if strings.HasPrefix(line, "socket ") {
			break
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	if ld.url == "" || ld.fingerprint == "" {
		t.Fatal("serve --lan did not say where its LAN listener is and its certificate's fingerprint")
	}
	d.c = client.DialSocket(apitype.SocketPath(filepath.Join(root, "run", "senclaw")))
	if err := d.c.Ping(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	return ld
}

// pinned is an HTTPS client that trusts exactly the certificate whose
// SHA-256 is fp, as a client told the fingerprint does.
func pinned(fp string) *http.Client {
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, // the fingerprint is the verification
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			sum := sha256.Sum256(raw[0])
			if got := fmt.Sprintf("%X", sum[:]); got != strings.ReplaceAll(fp, ":", "") {
				return errors.New("the certificate is not the one whose fingerprint was printed")
			}
			return nil
		},
	}}}
}

// call sends method path with the bearer tok to the LAN listener.
func (ld *lanDaemon) call(t *testing.T, c *http.Client, method, path, tok string, headers ...string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, ld.url+path, nil)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(data, &out)
	if out == nil {
		out = map[string]any{"_raw": string(data)}
	}
	return resp.StatusCode, out
}

// TestTheLANListener runs `senclaw serve --lan` on an address of a dummy
// interface: TLS only (plain HTTP refused), the certificate the one whose
// fingerprint it printed; the owner's token refused, a tenant's and an
// agent's token served (also to a second Unix user, a teammate's agent
// on a shared box, who cannot use the owner's socket), /mcp served, no
// dashboard; each token rate-limited; an address sending tokens nobody
// has locked out; a sandbox still never reaches it; each refusal a
// security event.
func TestTheLANListener(t *testing.T) {
	if testing.Short() {
		t.Skip("builds senclaw")
	}
	requireTools(t, "curl")
	const addr = "198.51.100.77" // TEST-NET-2: never a real LAN's
	dummyAddress(t, addr)
	port := testutil.FreePort(t)
	ld := startLANDaemon(t, fmt.Sprintf("%s:%d", addr, port))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if ld.url != fmt.Sprintf("https://%s:%d", addr, port) {
		t.Fatalf("the LAN listener is at %s", ld.url)
	}
	var added tenants.Added
	if err := ld.c.Do(ctx, "POST", "/tenants", nil, map[string]any{"name": "teammate"}, &added); err != nil {
		t.Fatal(err)
	}
	tenantTok := added.Token.Secret
	agent, err := ld.c.AddToken(ctx, "remote-bot", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	ownerTok, err := os.ReadFile(filepath.Join(ld.root, "config", "senclaw", "api-token"))
	if err != nil {
		t.Fatal(err)
	}
	hc := pinned(ld.fingerprint)

	// TLS only: plain HTTP gets no API.
	resp, err := http.Get(fmt.Sprintf("http://%s:%d/api/sandbox/whoami", addr, port))
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || bytes.Contains(body, []byte(`"kind"`)) {
			t.Errorf("plain HTTP: %d %s", resp.StatusCode, body)
		}
	}
	if code, body := ld.call(t, hc, "GET", "/api/sandbox/whoami", strings.TrimSpace(string(ownerTok))); code != 403 || !strings.Contains(fmt.Sprint(body["error"]), "owner's API token is never taken") {
		t.Errorf("the owner's token on the LAN: %d %v", code, body)
	}
	if code, body := ld.call(t, hc, "GET", "/api/sandbox/whoami", tenantTok); code != 200 || body["kind"] != "tenant" || body["via"] != "lan" {
		t.Errorf("the tenant's token on the LAN: %d %v", code, body)
	}
	if code, body := ld.call(t, hc, "GET", "/api/sandbox/whoami", agent.Secret); code != 200 || body["kind"] != "agent" {
		t.Errorf("an agent token on the LAN: %d %v", code, body)
	}
	if code, body := ld.call(t, hc, "PUT", "/api/sandbox/exec-policy", agent.Secret); code != 403 || body["scope"] != "policy:write" {
		t.Errorf("an agent changing the policy over the LAN: %d %v", code, body)
	}
	for _, path := range []string{"/", "/login?code=x", "/index.html"} {
		if code, _ := ld.call(t, hc, "GET", path, tenantTok); code != 404 {
			t.Errorf("%s over the LAN: %d, want 404 (no dashboard there)", path, code)
		}
	}
	if code, _ := ld.call(t, hc, "GET", "/api/sandbox/whoami", tenantTok, "Origin", "http://evil.example"); code != 403 {
		t.Errorf("a web page's request over the LAN: %d", code)
	}
	// MCP over the LAN with the official SDK client: the tenant's tools.
	tr := &sdk.StreamableClientTransport{Endpoint: ld.url + "/mcp", HTTPClient: &http.Client{Transport: lanBearer{tenantTok, hc.Transport}}}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "lan-agent", Version: "v0"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 4 {
		t.Errorf("the tenant's tools over the LAN: %v %v", tools, err)
	}
	if text, isErr := toolText(t, cs, "sbx_run", map[string]any{"command": "echo over-the-lan"}); isErr || !strings.Contains(text, "over-the-lan") {
		t.Errorf("sbx_run over the LAN: %s", text)
	}
	cs.Close()

	// A teammate's agent, another Unix user of this box: the LAN
	// listener with its tenant token, never the owner's socket.
	other := testutil.SecondUser(t)
	out, err := other.Command("curl", "-sk", "-H", "Authorization: Bearer "+tenantTok, ld.url+"/api/sandbox/whoami").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"name":"teammate"`) {
		t.Errorf("the second user with the tenant's token: %v %s", err, out)
	}
	sock := apitype.SocketPath(filepath.Join(ld.root, "run", "senclaw"))
	if out, err := other.Command("curl", "-s", "--unix-socket", sock, "http://senclaw/api/sandbox/whoami").CombinedOutput(); err == nil || strings.Contains(string(out), "owner") {
		t.Errorf("the second user on the owner's socket: %v %s", err, out)
	}

	// A sandbox never reaches the listener, network on or not.
	sb, err := ld.c.Create(ctx, app.SandboxConfig{Name: new("prober"), Network: new(true)})
	if err != nil {
		t.Fatal(err)
	}
	probe := fmt.Sprintf(`python3 -c "import urllib.request, ssl; print(urllib.request.urlopen('https://%s:%d/api/sandbox/whoami', context=ssl._create_unverified_context(), timeout=5).status)"`, addr, port)
	r, err := ld.c.Exec(ctx, sb.Sandbox.ID, client.RunBody{Command: probe}, nil)
	if err != nil || r.OK || strings.Contains(r.Stdout, "200") || strings.Contains(r.Stdout, "401") {
		t.Errorf("a sandbox reaching the LAN listener: %+v %v", r, err)
	}
	st, err := ld.c.SandboxStats(ctx, sb.Sandbox.ID)
	if err != nil || st.Denied == 0 || !strings.Contains(strings.Join(st.RecentDenied, " "), addr) {
		t.Errorf("the proxy's refusal of the LAN listener: %+v %v", st, err)
	}
	loop, err := ld.c.RunOnce(ctx, client.RunOnceBody{RunBody: client.RunBody{Command: strings.Replace(probe, addr, "127.0.0.1", 1)}, Sandbox: app.SandboxConfig{Loopback: []int{port}}}, nil)
	if err == nil && strings.Contains(loop.Stdout, "200") {
		t.Errorf("a sandbox reaching the LAN listener's port on loopback: %+v", loop)
	}

	// Rate limit: past its burst, a token waits.
	limited := 0
	for range 60 {
		if code, _ := ld.call(t, hc, "GET", "/api/sandbox/whoami", agent.Secret); code == 429 {
			limited++
		}
	}
	if limited == 0 {
		t.Error("60 requests at once of one token were all served: no rate limit")
	}
	// Tokens nobody has: the address is locked out, good tokens too.
	for i := range 10 {
		ld.call(t, hc, "GET", "/api/sandbox/whoami", fmt.Sprintf("sclw_nobody_%d", i))
	}
	if code, body := ld.call(t, hc, "GET", "/api/sandbox/whoami", tenantTok); code != 429 || !strings.Contains(fmt.Sprint(body["error"]), "locked out") {
		t.Errorf("after 10 bad tokens: %d %v", code, body)
	}

	var events struct {
		Events []struct{ Kind, Source string } `json:"events"`
	}
	if err := ld.c.Do(ctx, "GET", "/security-events", url.Values{"limit": {"1000"}}, nil, &events); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, ev := range events.Events {
		if ev.Source == "lan" {
			kinds[ev.Kind]++
		}
	}
	for _, k := range []string{"security.lan_owner_refused", "security.lan_rate_limited", "security.lan_locked_out", "security.token_rejected", "security.scope_denied"} {
		if kinds[k] == 0 {
			t.Errorf("no %s event from the LAN listener: %v", k, kinds)
		}
	}
}

type lanBearer struct {
	tok  string
	next http.RoundTripper
}

func (b lanBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return b.next.RoundTrip(r)
}
