#!/bin/sh
# docker-test-image.sh: make this machine ready for the Docker backend's
# tests, offline and idempotently:
#   1. install Debian's docker.io (the 20.10 daemon) and busybox-static;
#   2. start dockerd in the background when nothing answers, and wait for
#      its socket;
#   3. build senclaw-test/busybox:latest from the host's static busybox with
#      `docker import` (there is no registry here).
# Fast when all is in place. Needs root. Set SKIP_APT=1 to skip step 1.
set -eu

IMAGE=${IMAGE:-senclaw-test/busybox:latest}
SOCK=${SOCK:-/var/run/docker.sock}
LOG=${DOCKERD_LOG:-/tmp/dockerd.log}

have() { command -v "$1" >/dev/null 2>&1; }

if [ "${SKIP_APT:-}" != 1 ] && { ! have dockerd || [ ! -x /bin/busybox ] || ! /bin/busybox --list >/dev/null 2>&1 || ! ldd /bin/busybox 2>&1 | grep -q 'not a dynamic'; }; then
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y docker.io busybox-static
fi

answering() { docker -H "unix://$SOCK" version >/dev/null 2>&1; }

if ! answering; then
	# Plain dockerd works on this VM (overlay2, iptables). Fall back to the
	# options slow or odd kernels need.
	for opts in "" "--storage-driver=vfs" "--storage-driver=vfs --iptables=false"; do
		# shellcheck disable=SC2086
		nohup dockerd $opts >"$LOG" 2>&1 &
		pid=$!
		i=0
		while [ $i -lt 60 ] && ! answering; do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.5
			i=$((i + 1))
		done
		answering && break
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		echo "dockerd $opts did not come up; see $LOG" >&2
	done
	answering || { echo "no docker daemon answers at $SOCK" >&2; exit 1; }
fi

if docker -H "unix://$SOCK" image inspect "$IMAGE" >/dev/null 2>&1; then
	echo "$IMAGE is ready"
	exit 0
fi

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/work" "$root/proc" "$root/sys" "$root/dev"
cp /bin/busybox "$root/bin/busybox"
for applet in $(/bin/busybox --list); do
	[ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/work:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
chmod 1777 "$root/tmp"
tar -C "$root" -c . | docker -H "unix://$SOCK" import -c 'ENV PATH=/bin' - "$IMAGE"
echo "$IMAGE is ready"
