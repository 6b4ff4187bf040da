#!/usr/bin/env bash
# Browser tests of the dashboard: builds it, builds senclaw with it embedded,
# starts `senclaw serve` on a free loopback port with its own runtime, config
# and data dirs, and drives the page with playwright-core in Debian's
# Chromium (never a downloaded browser). Screenshots and the first-render
# benchmark land in test-artifacts/.
#
#   apt-get install -y chromium bubblewrap   # once
#   scripts/test-browser.sh
#   SENCLAW_BROWSER_TESTS=tests/everyday.test.mjs scripts/test-browser.sh   # some of them
#
# Without /usr/bin/chromium the tests are skipped, except under CI=true,
# where that is a failure: CI cannot go green by skipping.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
chromium=${CHROMIUM:-/usr/bin/chromium}
artifacts=$repo/test-artifacts

if [[ ! -x $chromium ]]; then
	if [[ ${CI:-} == true ]]; then
		echo "test-browser: no browser at $chromium (apt-get install -y chromium); under CI that is a failure" >&2
		exit 1
	fi
	echo "test-browser: SKIP: no browser at $chromium (apt-get install -y chromium)" >&2
	exit 0
fi

echo "== building the dashboard"
(cd "$repo/frontend" && npm ci --no-audit --no-fund && npm run build)
test -f "$repo/frontend/dist/.placeholder" || { echo "test-browser: the build deleted frontend/dist/.placeholder" >&2; exit 1; }
grep -q '<!--senclaw-token-->' "$repo/frontend/dist/index.html" || { echo "test-browser: dist/index.html lost the token marker" >&2; exit 1; }

# A root engine runs sandboxed code as unprivileged uids of its own, which must be able to
# traverse to the workspaces: the temp root is 0711, not mktemp's 0700.
tmp=$(mktemp -d /tmp/senclaw-browser.XXXXXX)
chmod 711 "$tmp"
mkdir -m 700 "$tmp/run" "$tmp/config"
mkdir -m 711 "$tmp/data"
bin=$tmp/senclaw

echo "== building senclaw and senclaw-engine (the dashboard embedded)"
(cd "$repo" && CGO_ENABLED=0 go build -buildvcs=false -o "$bin" . && CGO_ENABLED=0 go build -buildvcs=false -o "$tmp/senclaw-engine" ./app/daemon/cmd/senclaw-engine &&
	CGO_ENABLED=0 go build -buildvcs=false -o "$tmp/senclaw-netfwd" ./backends/netfwd/cmd/senclaw-netfwd)

export XDG_RUNTIME_DIR=$tmp/run XDG_CONFIG_HOME=$tmp/config
daemon_pid=
cleanup() {
	local rc=$?
	if [[ -n $daemon_pid ]]; then
		"$bin" --data-dir "$tmp/data" stop >/dev/null 2>&1 || true
		for _ in $(seq 100); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
		kill "$daemon_pid" 2>/dev/null || true
		wait "$daemon_pid" 2>/dev/null || true
	fi
	mkdir -p "$artifacts"
	cp "$tmp/serve.err" "$artifacts/serve.log" 2>/dev/null || true
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT

echo "== starting senclaw serve"
"$bin" --data-dir "$tmp/data" serve --listen 127.0.0.1:0 >"$tmp/serve.out" 2>"$tmp/serve.err" &
daemon_pid=$!
base=
for _ in $(seq 150); do
	base=$(sed -n 's/^listening on \(http:\/\/[^ ]*\).*/\1/p' "$tmp/serve.out")
	[[ -n $base ]] && break
	kill -0 "$daemon_pid" 2>/dev/null || { echo "test-browser: senclaw serve exited:" >&2; cat "$tmp/serve.err" >&2; exit 1; }
	sleep 0.1
done
[[ -n $base ]] || { echo "test-browser: senclaw serve did not say where it listens" >&2; cat "$tmp/serve.err" >&2; exit 1; }
login=$("$bin" --data-dir "$tmp/data" url)
echo "   daemon at $base"

echo "== browser tests"
mkdir -p "$artifacts"
rm -f "$artifacts"/*.png "$artifacts/bench-first-render.txt"
cd "$repo/frontend"
SENCLAW_BIN=$bin \
	SENCLAW_BASE_URL=$base \
	SENCLAW_LOGIN_URL=$login \
	SENCLAW_TOKEN_FILE=$XDG_CONFIG_HOME/senclaw/api-token \
	SENCLAW_ARTIFACTS=$artifacts \
	CHROMIUM=$chromium \
	node --test --test-concurrency=1 --test-reporter=spec \
	${SENCLAW_BROWSER_TESTS:-tests/dashboard.test.mjs tests/degraded.test.mjs tests/agentshell.test.mjs tests/schedules.test.mjs tests/paging.test.mjs tests/spaceapps.test.mjs tests/principals.test.mjs tests/everyday.test.mjs tests/layout.test.mjs tests/bench.test.mjs}

echo "== artifacts in $artifacts"
cat "$artifacts/bench-first-render.txt" 2>/dev/null || true
