package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeContext stores a context the way `docker context create` does.
func writeContext(t *testing.T, configDir, name, host string, skipTLS, withTLS bool) {
	t.Helper()
	sum := sha256.Sum256([]byte(name))
	id := hex.EncodeToString(sum[:])
	meta := filepath.Join(configDir, "contexts", "meta", id)
	if err := os.MkdirAll(meta, 0o755); err != nil {
		t.Fatal(err)
	}
	skip := "false"
	if skipTLS {
		skip = "true"
	}
	body := `{"Name":"` + name + `","Metadata":{},"Endpoints":{"docker":{"Host":"` + host + `","SkipTLSVerify":` + skip + `}}}`
	if err := os.WriteFile(filepath.Join(meta, "meta.json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if withTLS {
		dir := filepath.Join(configDir, "contexts", "tls", id, "docker")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
			if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestResolveEndpoint(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cfg := filepath.Join(home, ".docker")
	writeContext(t, cfg, "desktop-linux", "unix://"+home+"/.docker/desktop/docker.sock", false, false)
	writeContext(t, cfg, "remote", "tcp://10.0.0.5:2376", false, true)
	writeContext(t, cfg, "insecure", "tcp://10.0.0.6:2376", true, false)
	if err := os.WriteFile(filepath.Join(cfg, "config.json"), []byte(`{"auths":{},"currentContext":"desktop-linux"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	altCfg := t.TempDir()
	writeContext(t, altCfg, "alt", "unix:///alt.sock", false, false)
	if err := os.WriteFile(filepath.Join(altCfg, "config.json"), []byte(`{"currentContext":"alt"}`), 0o600); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name     string
		opts     Options
		env      map[string]string
		wantHost string
		wantErr  string
		wantTLS  bool
	}{
		{name: "current_context_desktop", opts: Options{HomeDir: home}, wantHost: "unix://" + home + "/.docker/desktop/docker.sock"},
		{name: "docker_host_wins", opts: Options{HomeDir: home}, env: map[string]string{"DOCKER_HOST": "tcp://127.0.0.1:2375", "DOCKER_CONTEXT": "remote"}, wantHost: "tcp://127.0.0.1:2375"},
		{name: "explicit_host_wins", opts: Options{HomeDir: home, Host: "unix:///x.sock"}, env: map[string]string{"DOCKER_HOST": "tcp://127.0.0.1:2375"}, wantHost: "unix:///x.sock"},
		{name: "docker_context_env", opts: Options{HomeDir: home}, env: map[string]string{"DOCKER_CONTEXT": "remote"}, wantHost: "tcp://10.0.0.5:2376", wantTLS: true},
		{name: "default_context", opts: Options{HomeDir: home}, env: map[string]string{"DOCKER_CONTEXT": "default"}, wantHost: "unix:///var/run/docker.sock"},
		{name: "docker_config_dir", opts: Options{HomeDir: home}, env: map[string]string{"DOCKER_CONFIG": altCfg}, wantHost: "unix:///alt.sock"},
		{name: "no_config", opts: Options{HomeDir: t.TempDir()}, wantHost: "unix:///var/run/docker.sock"},
		{name: "missing_context", opts: Options{HomeDir: home}, env: map[string]string{"DOCKER_CONTEXT": "gone"}, wantErr: `docker context "gone" is selected`},
		{name: "skip_tls_refused", opts: Options{HomeDir: home}, env: map[string]string{"DOCKER_CONTEXT": "insecure"}, wantErr: "skips TLS verification"},
		{name: "ssh_refused", opts: Options{}, env: map[string]string{"DOCKER_HOST": "ssh://me@box"}, wantErr: "uses ssh"},
		{name: "not_a_url", opts: Options{}, env: map[string]string{"DOCKER_HOST": "/var/run/docker.sock"}, wantErr: "is not a URL"},
		{name: "cert_path", opts: Options{}, env: map[string]string{"DOCKER_HOST": "tcp://h:2376", "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": "/certs"}, wantHost: "tcp://h:2376", wantTLS: true},
		{name: "plain_tcp_elsewhere_refused", opts: Options{}, env: map[string]string{"DOCKER_HOST": "tcp://10.0.0.7:2375"}, wantErr: "without TLS"},
		{name: "plain_tcp_loopback", opts: Options{}, env: map[string]string{"DOCKER_HOST": "tcp://127.0.0.1:2375"}, wantHost: "tcp://127.0.0.1:2375"},
		{name: "engine_host", opts: Options{Remote: &Remote{Name: "big", Host: "tcp://10.0.0.9:2376", CACert: "/c/ca.pem", Cert: "/c/cert.pem", Key: "/c/key.pem"}}, env: map[string]string{"DOCKER_HOST": "unix:///ignored.sock"}, wantHost: "tcp://10.0.0.9:2376", wantTLS: true},
		{name: "engine_context", opts: Options{HomeDir: home, Remote: &Remote{Name: "big", Context: "remote"}}, wantHost: "tcp://10.0.0.5:2376", wantTLS: true},
		{name: "engine_context_skip_tls_refused", opts: Options{HomeDir: home, Remote: &Remote{Name: "big", Context: "insecure"}}, wantErr: "skips TLS verification"},
		{name: "engine_plain_tcp_refused", opts: Options{Remote: &Remote{Name: "big", Host: "tcp://127.0.0.1:2375"}}, wantErr: "without TLS"},
		{name: "engine_ssh_refused", opts: Options{Remote: &Remote{Name: "big", Host: "ssh://me@box"}}, wantErr: "uses ssh, which SenClaw does not support yet"},
		{name: "engine_cert_without_key", opts: Options{Remote: &Remote{Name: "big", Host: "tcp://h:2376", CACert: "/c/ca.pem", Cert: "/c/cert.pem"}}, wantErr: "without its key"},
		{name: "engine_forwarded_socket", opts: Options{Remote: &Remote{Name: "big", Host: "unix:///tmp/remote.sock"}}, wantHost: "unix:///tmp/remote.sock"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := tc.opts
			opts.Getenv = func(k string) string { return tc.env[k] }
			ep, err := resolveEndpoint(opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ep.Host != tc.wantHost || (ep.CACert != "") != tc.wantTLS {
				t.Fatalf("got host %q (tls %q), want %q (tls %v)", ep.Host, ep.CACert, tc.wantHost, tc.wantTLS)
			}
		})
	}
}
