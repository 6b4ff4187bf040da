#!/usr/bin/env bash
# check-leftovers.sh [DIR...]: fails, naming each, when a process or a
# mount of the tests is left on this machine after them: a senclaw
# daemon, a sandbox (bwrap, the forwarder) or anything else whose command
# line or environment names a test dir, or a mount (a sandbox's tmpfs
# workspace, a disk image) below one. The dirs are the ones given (make
# test-go gives the TMPDIR its tests ran in), else every test dir of the
# tiers: /tmp/senclaw-*, /tmp/sc-*, /var/tmp/senclaw-*. What it names it
# then ends (SIGKILL) and unmounts, so that one failed run does not spoil
# the next.
set -euo pipefail

if [ "$#" -gt 0 ]; then
	prefixes=("$@")
else
	prefixes=(/tmp/senclaw- /tmp/sc- /var/tmp/senclaw-)
fi

names_a_dir() { # FILE: does the NUL-separated FILE name one of the dirs?
	local p
	for p in "${prefixes[@]}"; do
		{ tr '\0' '\n' <"$1"; } 2>/dev/null | grep -qF -- "$p" && return 0
	done
	return 1
}

left=0
for d in /proc/[0-9]*; do
	pid=${d#/proc/}
	[ "$pid" = "$$" ] || [ "$pid" = "$PPID" ] && continue
	state=$(awk '{print $3}' "$d/stat" 2>/dev/null || true)
	[ -z "$state" ] || [ "$state" = Z ] && continue
	if names_a_dir "$d/cmdline" || names_a_dir "$d/environ"; then
		echo "left running: pid $pid ($(cat "$d/comm" 2>/dev/null)): $(tr '\0' ' ' <"$d/cmdline" 2>/dev/null | cut -c1-300)" >&2
		left=1
		kill -KILL "$pid" 2>/dev/null || true
	fi
done
for p in "${prefixes[@]}"; do
	awk -v p="$p" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do
		echo "left mounted: $m" >&2
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
		echo 1 >"${TMPDIR:-/tmp}/.senclaw-leftover-mount.$$"
	done
done
if [ -e "${TMPDIR:-/tmp}/.senclaw-leftover-mount.$$" ]; then
	rm -f "${TMPDIR:-/tmp}/.senclaw-leftover-mount.$$"
	left=1
fi
if [ "$left" = 1 ]; then
	echo "FAIL: the tests left the processes or mounts above behind (now ended); a test must stop what it starts" >&2
	exit 1
fi
echo "ok: no process or mount of the tests is left"
