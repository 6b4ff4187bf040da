#!/usr/bin/env bash
# Installs what SenClaw Sandbox needs on Debian 12 (as root, or with sudo):
# the sandbox tools it drives and the interpreters code runs use.
# With "desktop", also what the desktop build needs; with "test", what the
# whole test suite needs; with "peers", the tools make bench-peers measures.
set -euo pipefail
# has PATTERN: grep that reads its whole input. grep -q stops at the first
# match, and under pipefail the writer's SIGPIPE then fails the pipeline.
has() { grep "$@" >/dev/null; }

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

want=(bubblewrap python3 ca-certificates)
# Node may come from elsewhere (a NodeSource build); a working node is enough.
command -v node >/dev/null 2>&1 || want+=(nodejs)
case "${1:-}" in
desktop) want+=(gcc libc6-dev pkg-config libgtk-3-dev libwebkit2gtk-4.1-dev) ;;
peers) want+=(firejail socat ripgrep curl) ;;
test) want+=(strace socat busybox-static openssl iproute2 chromium dbus-daemon curl git gcc libc6-dev pkg-config libgtk-3-dev libwebkit2gtk-4.1-dev xvfb xauth dbus dbus-bin gnome-keyring gdb imagemagick bash-completion zsh fish groff-base lintian x11-utils systemd) ;;
esac

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | has "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	echo "installing: ${missing[*]}"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
