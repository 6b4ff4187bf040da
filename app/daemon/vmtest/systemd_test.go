//go:build linux

package vmtest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
)

// guestScript runs as root when the systemd VM has booted: it waits for
// the user manager of senclaw-user (uid 1000, lingering) and runs
// userScript as that user, from a system unit's cgroup, which is not the
// user's: the engine must ask the user manager for cgroups of its own.
const guestScript = `
echo "SENCLAW-BEGIN controllers"; cat /sys/fs/cgroup/cgroup.controllers; echo "SENCLAW-END controllers 0"
i=0; while [ ! -S /run/user/1000/bus ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
# The bus is there before the user manager has started its units, and an
# emulated machine on a busy host may take longer than the engine's 10 s
# to answer then: wait until it is up, as a login session would.
setpriv --reuid=1000 --regid=1000 --init-groups env -i XDG_RUNTIME_DIR=/run/user/1000 \
	timeout 300 systemctl --user is-system-running --wait >/dev/null 2>&1 || true
setpriv --reuid=1000 --regid=1000 --init-groups env -i HOME=/home/senclaw-user USER=senclaw-user LOGNAME=senclaw-user \
	PATH=/usr/bin:/bin XDG_RUNTIME_DIR=/run/user/1000 sh /mnt/test/user.sh
`

// userScript is the ordinary user's session: a real engine, its card,
// a run over its memory limit and one within it.
const userScript = `
S=/mnt/test/senclaw
cd "$HOME"
section() { name=$1; shift; echo "SENCLAW-BEGIN $name"; "$@" 2>&1; echo "SENCLAW-END $name $?"; }
$S serve --listen "" >serve.log 2>&1 &
pid=$!
i=0; while [ ! -S "$XDG_RUNTIME_DIR/senclaw/api.sock" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done
# An emulated machine (and a busy host) can be slower than the probe's
# trial sandbox allows: probe again until bwrap answers.
healthy() { $S caps --json | python3 -c 'import json, sys; sys.exit(0 if any(b["backend"] == "bwrap" and b["state"] == "healthy" for b in json.load(sys.stdin)["backends"]) else 1)'; }
i=0; until healthy || [ $i -ge 30 ]; do sleep 2; i=$((i+1)); done
section caps $S caps --json
section engine_cgroup cat /proc/$pid/cgroup
section over $S run --json --memory 64 -- python3 -c 'b = bytearray(200 << 20); print("allocated")'
section within $S run --json --memory 256 -- python3 -c 'b = bytearray(100 << 20); print("fits")'
section scopes systemctl --user list-units --type=scope --no-legend --plain
section node $S run -- node -e 'console.log(6 * 7)'
python3 -c 'import http.server as h; h.HTTPServer(("127.0.0.1", 18080), type("H", (h.BaseHTTPRequestHandler,), {"do_GET": lambda s: (s.send_response(200), s.end_headers(), s.wfile.write(b"from the host"))})).serve_forever()' &
section network $S run --loopback 18080 -- python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:18080/").read().decode())'
id=$($S run --background --listen 18081 -- python3 -m http.server --bind 127.0.0.1 18081 | cut -d' ' -f1)
section listen python3 -c '
import time, urllib.request
for i in range(300):
    try:
        print(urllib.request.urlopen("http://127.0.0.1:18081/").status); break
    except OSError:
        time.sleep(0.1)'
$S kill "$id" >/dev/null
section trace $S run --trace -- cat /etc/hostname
tid=$($S runs --json | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["id"])')
section events $S events "$tid"
cp -r /mnt/test/app "$HOME/notes"
$S apps add "$HOME/notes" >/dev/null
section app_start $S apps start notes
section app_health python3 -c '
import json, subprocess, urllib.request
url = json.loads(subprocess.run(["/mnt/test/senclaw", "apps", "ls", "--json"], capture_output=True, text=True).stdout)[0]["url"]
print(urllib.request.urlopen(url + "health").status)'
$S stop
section serve_log cat serve.log
`

// consoleSections splits what the guest printed into its sections, by
// name: the output and the exit code.
func consoleSections(console string) map[string][2]string {
	out := map[string][2]string{}
	re := regexp.MustCompile(`(?s)SENCLAW-BEGIN (\w+)\n(.*?)SENCLAW-END (\w+) (\d+)`)
	for _, m := range re.FindAllStringSubmatch(console, -1) {
		if m[1] == m[3] {
			out[m[1]] = [2]string{m[2], m[4]}
		}
	}
	return out
}

// firstJSON decodes the JSON value output starts with (the CLI's notes
// on stderr follow it).
func firstJSON(output string, v any) error {
	return json.NewDecoder(strings.NewReader(output)).Decode(v)
}

// TestAnOrdinaryUserUnderSystemdGetsDelegatedCgroups: on a machine with
// cgroup v2 whose user has systemd's user manager running (a desktop
// login, or linger), an ordinary user's engine started outside the
// user's own cgroups (from a system unit, as sudo or cron would) asks
// the user manager for a scope with Delegate=yes, moves into it, and
// then limits runs with real cgroups: the card says "cgroups delegated
// by systemd", a run over its memory limit is killed by the kernel's
// OOM killer in its cgroup, and one within it runs. Before, such an
// engine had rlimits only. It boots a real systemd in a VM
// (testutil.SystemdVM: no container on a cgroup v1 host can have the
// v2 memory controller).
func TestAnOrdinaryUserUnderSystemdGetsDelegatedCgroups(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a virtual machine for minutes: the slow tier (make test-go) runs it")
	}
	testutil.RequireRoot(t)
	bin := testutil.Senclaw(t)
	dir := t.TempDir()
	for _, name := range []string{"senclaw", "senclaw-engine", "senclaw-netfwd"} {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(bin), name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("cp", "-r", filepath.Join("..", "..", "..", "examples", "space-apps"), filepath.Join(dir, "app")).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	for name, script := range map[string]string{"guest.sh": guestScript, "user.sh": userScript} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	console := testutil.SystemdVM(t, dir, 8*time.Minute)
	s := consoleSections(console)
	if !strings.Contains(s["controllers"][0], "memory") {
		t.Fatalf("the VM has no cgroup v2 memory controller: %q\nconsole:\n%s", s["controllers"][0], console)
	}
	var caps struct {
		Facilities []struct {
			Backend string            `json:"backend"`
			State   string            `json:"state"`
			Reason  string            `json:"reason"`
			Details map[string]string `json:"details"`
		} `json:"facilities"`
	}
	if err := firstJSON(s["caps"][0], &caps); err != nil {
		t.Fatalf("caps --json: %v\nconsole:\n%s", err, console)
	}
	unit := ""
	for _, f := range caps.Facilities {
		if f.Backend == "cgroups" {
			if f.Details["limits"] != "cgroups delegated by systemd" || f.State != "healthy" {
				t.Fatalf("the card says %+v\nconsole:\n%s", f, console)
			}
			unit = f.Details["unit"]
		}
	}
	if !regexp.MustCompile(`^senclaw-[0-9a-f]{12}\.scope$`).MatchString(unit) {
		t.Fatalf("the card names the scope %q\nconsole:\n%s", unit, console)
	}
	if want := "/user@1000.service/app.slice/" + unit + "/engine\n"; !strings.Contains(s["engine_cgroup"][0], want) {
		t.Errorf("the engine's cgroup is %q, want it in %s", s["engine_cgroup"][0], want)
	}
	if !strings.Contains(s["scopes"][0], unit) {
		t.Errorf("systemctl --user does not list %s: %q", unit, s["scopes"][0])
	}
	type runOut struct {
		Run struct {
			ExitCode int      `json:"exitCode"`
			Killed   string   `json:"killed"`
			Enforced []string `json:"enforced"`
			Stdout   string   `json:"stdout"`
		} `json:"run"`
	}
	var over, within runOut
	if err := firstJSON(s["over"][0], &over); err != nil {
		t.Fatalf("the run over its limit: %v\n%s\nconsole:\n%s", err, s["over"][0], console)
	}
	if over.Run.ExitCode != 137 || !strings.Contains(over.Run.Killed, "out of memory") {
		t.Errorf("a run over its 64 MiB was not killed for it: %+v", over.Run)
	}
	if joined := strings.Join(over.Run.Enforced, "\n"); !strings.Contains(joined, "memory 64 MiB: cgroup v2 in the engine's scope, delegated by systemd") {
		t.Errorf("the record does not say how memory was limited: %q", over.Run.Enforced)
	}
	if err := firstJSON(s["within"][0], &within); err != nil || within.Run.ExitCode != 0 || !strings.Contains(within.Run.Stdout, "fits") {
		t.Errorf("a run within its limit: %v %+v", err, within.Run)
	}
	// The features an ordinary user lost under rlimits, under systemd.
	for name, want := range map[string]string{"node": "42", "network": "from the host", "listen": "200", "trace": "traced; see",
		"events": "/etc/hostname", "app_start": "notes running", "app_health": "200"} {
		if got := s[name]; got[1] != "0" || !strings.Contains(got[0], want) {
			t.Errorf("%s: exit %s, want %q in:\n%s", name, got[1], want, got[0])
		}
	}
	t.Logf("the engine's scope: %s; the run over its limit: %s", unit, over.Run.Killed)
}

func TestMain(m *testing.M) { testutil.Main(m) }
