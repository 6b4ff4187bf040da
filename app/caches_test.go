package app

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
)

// npmRegistry serves one package, senclaw-demo 1.0.0, as an npm registry
// on 127.0.0.1 does, and counts the tarball's downloads.
type npmRegistry struct {
	port      int
	downloads int
}

func serveNPMRegistry(t *testing.T) *npmRegistry {
	t.Helper()
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	for name, body := range map[string]string{
		"package/package.json": `{"name": "senclaw-demo", "version": "1.0.0", "main": "index.js"}`,
		"package/index.js":     `module.exports = "from the cache's package";`,
	} {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(1700000000, 0)})
		tw.Write([]byte(body))
	}
	tw.Close()
	gz.Close()
	sha := sha1.Sum(tgz.Bytes())
	integrity := sha512.Sum512(tgz.Bytes())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &npmRegistry{port: ln.Addr().(*net.TCPAddr).Port}
	base := "http://127.0.0.1:" + strconv.Itoa(r.port)
	packument := fmt.Sprintf(`{"name": "senclaw-demo", "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": {"name": "senclaw-demo", "version": "1.0.0", "dist": {"tarball": %q, "shasum": %q, "integrity": %q}}}}`,
		base+"/senclaw-demo/-/senclaw-demo-1.0.0.tgz", hex.EncodeToString(sha[:]), "sha512-"+base64.StdEncoding.EncodeToString(integrity[:]))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/senclaw-demo":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(packument))
		case "/senclaw-demo/-/senclaw-demo-1.0.0.tgz":
			r.downloads++
			w.Write(tgz.Bytes())
		default:
			http.NotFound(w, req)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return r
}

// TestPackageCachesLastPerProject: a project's npm cache lasts from one
// run to the next, its sandbox's runs and run --here's one-shots alike
// (each with a uid of its own, as root), so that a second install works
// offline; another project's runs do not see it (nothing of one
// project's cache reaches another); ClearCaches empties it, and the
// project's sandbox going with its files (rm --purge) removes it. A
// persistent sandbox keeps its caches at the usual places in its
// workspace, which its disk quota counts.
func TestPackageCachesLastPerProject(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("npm"); err != nil {
		testutil.Need(t, "npm is not installed")
	}
	ctx := context.Background()
	e := bwrapEngine(t)
	reg := serveNPMRegistry(t)
	base := testutil.SandboxDir(t, "sc-caches-")
	projects := map[string]string{}
	for _, name := range []string{"a", "b"} {
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, 0o755)
		projects[name] = dir
	}
	loopback := []int{reg.port}
	install := func(cfg SandboxConfig, offline bool) (*RunResult, time.Duration) {
		t.Helper()
		cmd := "rm -rf node_modules package.json package-lock.json && npm install --no-audit --no-fund --registry http://127.0.0.1:" + strconv.Itoa(reg.port) + " senclaw-demo"
		if offline {
			cmd += " --offline"
		}
		cmd += " && node -e 'console.log(require(\"senclaw-demo\"))'"
		start := time.Now()
		res, err := e.RunOnce(ctx, cfg, RunRequest{Command: cmd, TimeoutMs: 120000})
		if err != nil {
			t.Fatal(err)
		}
		return res, time.Since(start)
	}
	here := func(name string) SandboxConfig {
		dir := projects[name]
		return SandboxConfig{ProjectDir: &dir, Loopback: loopback}
	}

	first, cold := install(here("a"), false)
	if !first.Record.OK() || !strings.Contains(first.Stdout, "from the cache's package") || reg.downloads != 1 {
		t.Fatalf("the first install: %+v\nstdout %s\nstderr %s", first.Record, first.Stdout, first.Stderr)
	}
	if enf := strings.Join(first.Record.Enforced, "\n"); !strings.Contains(enf, "package caches: the project's own") {
		t.Errorf("the record does not say where the caches are: %s", enf)
	}
	for _, dir := range []string{".npm", ".cache", "senclaw-cache"} {
		if _, err := os.Lstat(filepath.Join(projects["a"], dir)); err == nil {
			t.Errorf("the project holds %s: the caches are made in it", dir)
		}
	}
	second, warm := install(here("a"), true)
	if !second.Record.OK() || !strings.Contains(second.Stdout, "from the cache's package") || reg.downloads != 1 {
		t.Fatalf("an offline install in the same project did not find the cache: %+v\nstderr %s", second.Record, second.Stderr)
	}
	t.Logf("npm install of one package from a registry on 127.0.0.1: %v with an empty cache, %v offline from the project's", cold.Round(time.Millisecond), warm.Round(time.Millisecond))

	// The project's sandbox shares its project's cache.
	dirA := projects["a"]
	sb, err := e.Create(ctx, SandboxConfig{ProjectDir: &dirA, Loopback: loopback})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Exec(ctx, sb.ID, RunRequest{Command: "rm -rf node_modules && npm install --offline --no-audit --no-fund --registry http://127.0.0.1:" + strconv.Itoa(reg.port) + " senclaw-demo >/dev/null && echo installed", TimeoutMs: 120000})
	if err != nil || !res.Record.OK() {
		t.Fatalf("the project's sandbox: %v %+v %s", err, res.Record, res.Stderr)
	}

	// Project b sees nothing of a's.
	if other, _ := install(here("b"), true); other.Record.OK() || !strings.Contains(other.Stderr, "ENOTCACHED") {
		t.Fatalf("another project found a's cache: %+v\nstderr %s", other.Record, other.Stderr)
	}
	list, err := e.Caches()
	if err != nil {
		t.Fatal(err)
	}
	var a *CacheInfo
	for i, c := range list {
		if c.Project == projects["a"] {
			a = &list[i]
		}
	}
	if a == nil || a.Bytes == 0 || a.SandboxID != sb.ID {
		t.Fatalf("caches: %+v", list)
	}

	if err := e.ClearCaches(sb.ID); err != nil {
		t.Fatal(err)
	}
	if again, _ := install(here("a"), true); again.Record.OK() {
		t.Fatalf("the cache was not cleared: %+v", again.Record)
	}
	if _, err := e.Delete(ctx, sb.ID, true); err != nil {
		t.Fatal(err)
	}
	if list, _ := e.Caches(); len(list) != 1 || list[0].Project != projects["b"] {
		t.Errorf("after rm --purge of a's sandbox: %+v", list)
	}
	if _, err := os.Stat(projects["a"]); err != nil {
		t.Errorf("the project itself went: %v", err)
	}
}

// TestAPersistentSandboxsCachesAreInItsQuota: a persistent sandbox's
// package managers are pointed at the usual places in its workspace,
// which last with it and which its disk quota holds: a cache that grows
// past the quota ends the run as any file would; ClearCaches empties it.
func TestAPersistentSandboxsCachesAreInItsQuota(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := bwrapEngine(t)
	disk := 20
	sb, err := e.Create(ctx, SandboxConfig{DiskMB: &disk})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Exec(ctx, sb.ID, RunRequest{Command: `echo "$PIP_CACHE_DIR $npm_config_cache $GOCACHE $GOMODCACHE $CARGO_HOME" && mkdir -p "$PIP_CACHE_DIR" && echo wheel > "$PIP_CACHE_DIR/w"`})
	if err != nil || !res.Record.OK() {
		t.Fatalf("%v %+v %s", err, res.Record, res.Stderr)
	}
	ws := sb.Workspace
	want := strings.Join([]string{ws + "/.cache/pip", ws + "/.npm", ws + "/.cache/go-build", ws + "/go/pkg/mod", ws + "/.cargo"}, " ")
	if strings.TrimSpace(res.Stdout) != want {
		t.Errorf("the variables: %q, want %q", res.Stdout, want)
	}
	res, err = e.Exec(ctx, sb.ID, RunRequest{Command: `cat "$PIP_CACHE_DIR/w"`})
	if err != nil || res.Stdout != "wheel\n" {
		t.Fatalf("the next run does not find the cache: %v %q", err, res.Stdout)
	}
	over, err := e.Exec(ctx, sb.ID, RunRequest{Command: `head -c 40000000 /dev/zero > "$PIP_CACHE_DIR/big" && echo written`})
	if err != nil {
		t.Fatal(err)
	}
	if over.Record.OK() || strings.Contains(over.Stdout, "written") {
		t.Errorf("a cache past the 20 MB quota was written: %+v %q", over.Record, over.Stdout)
	}
	if err := e.ClearCaches(sb.ID); err != nil {
		t.Fatal(err)
	}
	if res, _ := e.Exec(ctx, sb.ID, RunRequest{Command: `ls -A "$HOME/.cache" 2>/dev/null | wc -l`}); strings.TrimSpace(res.Stdout) != "0" {
		t.Errorf("after ClearCaches the workspace holds %q in .cache", res.Stdout)
	}
}
