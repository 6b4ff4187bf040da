#!/usr/bin/env bash
# The install story, end to end, as root on this (throwaway CI) machine:
#   1. build the Debian package (make deb: dpkg-deb offline, lintian clean
#      of errors) and install it with apt (which brings its dependencies),
#   2. check that every file the package lists is where it says,
#   3. as a user with fresh XDG dirs: the installed senclaw's caps (the
#      engine it starts is /usr/lib/senclaw/senclaw-engine, shown as
#      senclaw), a sandboxed run (bwrap) and a networked one (the forwarder
#      from /usr/lib/senclaw), the man page, the bash completion; that
#      senclaw is static and CGO-free, an ordinary user's engine from the
#      package (the second user: every feature without a cgroup, learn
#      mode), and its speed (TestBenchInstalledCLI),
#   4. start the installed desktop app under Xvfb in a private D-Bus
#      session and see its window (/usr/lib/senclaw/senclaw-window),
#   5. Start at login on and off through the CLI, checking the file,
#   6. systemd-analyze verify of the user unit,
#   7. remove the package: nothing of it remains, the user's data does.
# Under CI=true a missing tool fails the script; elsewhere it skips.
set -euo pipefail
# has PATTERN: grep that reads its whole input. grep -q stops at the first
# match, and under pipefail the writer's SIGPIPE then fails the pipeline.
has() { grep "$@" >/dev/null; }

cd "$(dirname "$0")/.."
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() {
	if [ "${CI:-}" = "true" ]; then fail "$* (CI=true: missing tools fail)"; fi
	echo "SKIP: $*"
	exit 0
}
[ "$(id -u)" = 0 ] || skip "installing a package needs root"
command -v dpkg-deb >/dev/null || skip "dpkg-deb is missing (not a Debian machine)"
for tool in lintian xvfb-run dbus-run-session xwininfo systemd-analyze; do
	command -v "$tool" >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends lintian xvfb xauth dbus x11-utils systemd >/dev/null 2>&1 || true
	command -v "$tool" >/dev/null || skip "$tool is missing"
done
if dpkg-query -W -f='${Status}' senclaw 2>/dev/null | has "install ok installed"; then
	fail "a senclaw package is already installed here; remove it first (apt-get remove senclaw)"
fi

echo "== make deb"
make deb >/tmp/senclaw-deb.log 2>&1 || { tail -30 /tmp/senclaw-deb.log >&2; fail "make deb failed"; }
deb=$(ls -t senclaw_*.deb | head -1)
grep -q "^E: " /tmp/senclaw-deb.log && fail "lintian reports errors: $(grep '^E: ' /tmp/senclaw-deb.log)"
echo "ok: built $deb, lintian clean of errors"
dpkg-deb -I "$deb" | has "Depends:.*bubblewrap" || fail "the package does not depend on bubblewrap"
[ -z "$(dpkg-deb --ctrl-tarfile "$deb" | tar -t | grep -E 'preinst|postinst|prerm|postrm')" ] || fail "the package has maintainer scripts; nothing should run at install"

work=$(mktemp -d /tmp/senclaw-install.XXXXXX)
chmod 711 "$work"
removed=0
cleanup() {
	local rc=$?
	# The daemon the CLI started, which holds its sandboxes' mounts in $work.
	if [ -n "${u:-}" ] && [ -x /usr/bin/senclaw ]; then as_user /usr/bin/senclaw stop >/dev/null 2>&1 || true; fi
	if [ "$removed" = 0 ]; then apt-get remove -y -qq senclaw >/dev/null 2>&1 || true; fi
	[ -n "${app_pid:-}" ] && kill "$app_pid" 2>/dev/null
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT

echo "== apt-get install ./$deb"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "./$deb" >/dev/null || fail "apt-get could not install $deb"
missing=0
while read -r f; do
	[ -e "$f" ] || { echo "missing: $f" >&2; missing=1; }
done < <(dpkg -L senclaw | grep -v '^/\.$')
[ "$missing" = 0 ] || fail "files the package lists are missing"
for f in /usr/bin/senclaw /usr/lib/senclaw/senclaw-engine /usr/lib/senclaw/senclaw-netfwd /usr/lib/senclaw/senclaw-landlock /usr/lib/senclaw/senclaw-window \
	/usr/share/applications/senclaw.desktop \
	/usr/share/icons/hicolor/48x48/apps/senclaw.png /usr/share/icons/hicolor/512x512/apps/senclaw.png \
	/usr/share/man/man1/senclaw.1.gz /usr/share/bash-completion/completions/senclaw \
	/usr/share/zsh/vendor-completions/_senclaw /usr/share/fish/vendor_completions.d/senclaw.fish \
	/usr/lib/systemd/user/senclaw.service; do
	dpkg -S "$f" >/dev/null 2>&1 || fail "$f is not in the package"
done
echo "ok: every file is where the package says ($(dpkg -L senclaw | wc -l) paths)"
# senclaw is the CLI alone: static, without cgo, linking no window (GTK,
# WebKit) and no engine; the engine is CGO-free too; the window links
# the desktop's libraries, and only it.
for f in /usr/bin/senclaw /usr/lib/senclaw/senclaw-engine /usr/lib/senclaw/senclaw-netfwd /usr/lib/senclaw/senclaw-landlock; do
	[ -z "$(readelf -dW "$f" | grep NEEDED || true)" ] || fail "$f links shared libraries: $(readelf -dW "$f" | grep NEEDED)"
	go version -m "$f" | has "CGO_ENABLED=0" || fail "$f was built with cgo"
done
readelf -lW /usr/bin/senclaw | has INTERP && fail "/usr/bin/senclaw is a dynamic executable (it starts the dynamic loader at every call)"
if go version -m /usr/bin/senclaw | has -E 'wailsapp|fyne.io/systray|godbus|senclaw/sandbox/app/(daemon|api|desktop)'; then
	fail "/usr/bin/senclaw links the engine or the desktop: $(go version -m /usr/bin/senclaw | grep -E 'wailsapp|systray|godbus')"
fi
readelf -dW /usr/lib/senclaw/senclaw-window | has 'NEEDED.*libwebkit2gtk' || fail "/usr/lib/senclaw/senclaw-window does not link WebKitGTK: is it the window?"
echo "ok: senclaw and senclaw-engine link no shared library (CGO off); senclaw-window links WebKitGTK"
/usr/bin/senclaw --version | grep -Eq '^senclaw .*\(commit [0-9a-f]{12}, built [0-9-]{10}\)$' || fail "senclaw --version: $(/usr/bin/senclaw --version)"

# A user's world: fresh XDG dirs and data dir, as the installed app sees it.
u="$work/user"
mkdir -p "$u/run" "$u/config" "$u/data"
chmod 700 "$u/run"
chmod 711 "$u" "$u/data"
as_user() { env XDG_RUNTIME_DIR="$u/run" XDG_CONFIG_HOME="$u/config" SENCLAW_DATA_DIR="$u/data" "$@"; }

echo "== the installed CLI"
as_user /usr/bin/senclaw caps | has "bwrap" || fail "senclaw caps does not show bwrap"
out=$(as_user /usr/bin/senclaw run -- sh -c 'echo sandboxed; id -u')
[ "$(echo "$out" | head -1)" = sandboxed ] || fail "a sandboxed run printed $out"
as_user /usr/bin/senclaw runs --json --limit 1 | has '"isolation": "bwrap' || fail "the run's record does not say bwrap"
as_user /usr/bin/senclaw run --network -- true || fail "a networked run (the forwarder in /usr/lib/senclaw) was refused"
echo "ok: caps, a sandboxed run (isolation bwrap) and a networked one"
# The daemon the CLI started is the engine's executable, shown as senclaw.
pid=$(sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' "$u/run/senclaw/info.json")
[ "$(readlink "/proc/$pid/exe")" = /usr/lib/senclaw/senclaw-engine ] || fail "the daemon (pid $pid) runs $(readlink "/proc/$pid/exe"), not /usr/lib/senclaw/senclaw-engine"
tr '\0' ' ' <"/proc/$pid/cmdline" | has "^/usr/bin/senclaw .*serve" || fail "the daemon's command line is $(tr '\0' ' ' <"/proc/$pid/cmdline")"
echo "ok: the daemon is /usr/lib/senclaw/senclaw-engine, shown as /usr/bin/senclaw serve"
man -w senclaw | has /usr/share/man/man1/senclaw.1.gz || fail "man does not find senclaw(1)"
MANWIDTH=100 man senclaw 2>/dev/null | has "senclaw run" || fail "man senclaw does not document run"
got=$(bash --norc -c 'source /usr/share/bash-completion/bash_completion; source /usr/share/bash-completion/completions/senclaw
	COMP_WORDS=(senclaw cap); COMP_CWORD=1; COMP_LINE="senclaw cap"; COMP_POINT=11; __start_senclaw 2>/dev/null; echo "${COMPREPLY[*]}"')
[ "$got" = caps ] || fail "bash completion of 'senclaw cap' gave '$got'"
echo "ok: man senclaw and the bash completion"

echo "== an ordinary user's engine, from the package"
# The second user (a real one), its engine without a writable cgroup:
# Node, the network plumbing, a listen port, a trace, a Space App, and
# the policy files (learn, check, run --here), all on /usr/bin/senclaw.
CI=${CI:-} SENCLAW_INSTALLED=/usr/bin/senclaw go test -count=1 -run '^(TestAnOrdinaryUserWithoutCgroupsGetsEveryFeature|TestAnOrdinaryUserLearnsAPolicy)$' -v ./app/daemon/ >"$work/user.txt" 2>&1 ||
	{ cat "$work/user.txt" >&2; fail "an ordinary user's engine from the package lost a feature"; }
grep -E '^(--- |ok|PASS)' "$work/user.txt"
echo "ok: an ordinary user's engine from the package runs Node, the network, a listen port, a trace, a Space App and learn mode"

echo "== the installed CLI's speed"
# Whole processes in turns: --version against the empty Go program, the
# Claude Code hook (a PreToolUse input) against --version, run -- true
# against raw bwrap. A ratio above twice its target fails.
SENCLAW_BENCH=1 SENCLAW_INSTALLED=/usr/bin/senclaw SENCLAW_BENCH_LIMIT=2 go test -count=1 -run '^TestBenchInstalledCLI$' -v ./app/cli/ >"$work/bench.txt" 2>&1 ||
	{ cat "$work/bench.txt" >&2; fail "the installed CLI is too slow, or its benchmark failed"; }
grep '^BENCH' "$work/bench.txt"
echo "ok: the installed CLI's timing is above"

echo "== Start at login"
as_user /usr/bin/senclaw autostart | has "does not start at login" || fail "a fresh user starts at login"
as_user /usr/bin/senclaw autostart on >/dev/null
grep -q '^Exec=/usr/bin/senclaw$' "$u/config/autostart/senclaw.desktop" || fail "autostart on did not write the entry for /usr/bin/senclaw"
as_user /usr/bin/senclaw autostart off >/dev/null
[ ! -e "$u/config/autostart/senclaw.desktop" ] || fail "autostart off left the entry"
echo "ok: autostart on writes ~/.config/autostart/senclaw.desktop, off removes it"
as_user /usr/bin/senclaw stop >/dev/null

echo "== the installed desktop app under Xvfb"
cat >"$work/app.sh" <<'INNER'
set -u
env XDG_RUNTIME_DIR="$U/run" XDG_CONFIG_HOME="$U/config" SENCLAW_DATA_DIR="$U/data" SENCLAW_LISTEN=127.0.0.1:0 /usr/bin/senclaw >"$W/app.out" 2>"$W/app.err" &
pid=$!
for _ in $(seq 300); do
	if xwininfo -root -tree 2>/dev/null | grep -q '"SenClaw Sandbox"'; then echo window-seen; break; fi
	sleep 0.1
done
for p in /proc/[0-9]*; do
	[ "$(readlink "$p/exe" 2>/dev/null)" = /usr/lib/senclaw/senclaw-window ] && echo window-exe && break
done
kill -TERM "$pid"
wait "$pid"
echo "app-exit=$?"
INNER
out=$(U="$u" W="$work" timeout 120 xvfb-run -a dbus-run-session -- bash "$work/app.sh" 2>&1) || true
echo "$out" | has window-seen || { cat "$work/app.err" >&2; fail "the installed desktop app showed no window: $out"; }
echo "$out" | has window-exe || { cat "$work/app.err" >&2; fail "the window is not /usr/lib/senclaw/senclaw-window: $out"; }
echo "$out" | has "app-exit=0" || { cat "$work/app.err" >&2; fail "the installed desktop app did not quit cleanly: $out"; }
echo "ok: the installed desktop app opened its window (SenClaw Sandbox) and quit cleanly"

echo "== systemd-analyze verify"
systemd-analyze verify /usr/lib/systemd/user/senclaw.service 2>&1 | tee "$work/verify.txt"
[ ! -s "$work/verify.txt" ] || fail "systemd-analyze verify complains about the unit"
grep -q '^Type=notify$' /usr/lib/systemd/user/senclaw.service || fail "the unit is not Type=notify"
echo "ok: the user unit verifies"

echo "== apt-get remove senclaw"
DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq senclaw >/dev/null
removed=1
left=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' | grep -v '/$' | while read -r f; do [ -e "$f" ] && echo "$f"; done || true)
[ -z "$left" ] || fail "files of the package remain after removal: $left"
[ -e "$u/data/senclaw.db" ] || fail "the user's data went with the package"
echo "ok: the package's files are gone; the user's data ($u/data) is still there"
