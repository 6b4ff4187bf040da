#!/usr/bin/env bash
# Installs what SenClaw Sandbox needs on Debian 12 (as root, or with sudo):
# the sandbox tools it drives and the interpreters code runs use.
# With "test", also what the test suite needs.
set -euo pipefail

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

want=(bubblewrap python3 ca-certificates)
# Node may come from elsewhere (a NodeSource build); a working node is enough.
command -v node >/dev/null 2>&1 || want+=(nodejs)
if [ "${1:-}" = "test" ]; then want+=(strace busybox-static chromium); fi

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	echo "installing: ${missing[*]}"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
