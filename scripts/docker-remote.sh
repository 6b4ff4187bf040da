#!/bin/sh
# docker-remote.sh: a second Docker daemon on this machine that stands in
# for a Docker engine on another machine, for the remote-engine tests:
#
#   start    make its TLS material (openssl), start it, import the test
#            image into it (idempotent: a running one is kept)
#   stop     stop it and everything it started (its containerd, shims)
#   stop-all stop it, and the private ones tests start (a test killed
#            before its clean-up leaves one): /var/tmp/senclaw-remote-*
#   kill     SIGKILL the daemon alone, as a machine that drops off would
#   restart  start it again after kill (same port, data and certificates)
#   env      print DOCKER_HOST, DOCKER_CERT_PATH and DOCKER_TLS_VERIFY
#   status   exit 0 when it answers
#
# It has its own data root, exec root and pid file, no bridge and no
# iptables, and listens only on 127.0.0.1 with TLS (the client is
# verified, and verifies it). It runs in a mount namespace of its own in
# which /tmp, /root, /home, /work, /var/lib/senclaw and /run/containerd
# are empty tmpfs: the engines' data, config and workspace directories
# (the tests' are under /tmp) do not exist there, so a bind mount of an
# engine path fails as it would on another machine, and it starts its own
# containerd there. Needs root. State: $SENCLAW_REMOTE_DOCKER
# (/var/tmp/senclaw-remote-docker).
set -eu

STATE=${SENCLAW_REMOTE_DOCKER:-/var/tmp/senclaw-remote-docker}
IMAGE=${IMAGE:-senclaw-test/busybox:latest}
HERE=$(cd "$(dirname "$0")" && pwd)
CERTS=$STATE/certs
PIDFILE=$STATE/dockerd.pid
LOG=$STATE/dockerd.log
ENVFILE=$STATE/env

die() { echo "docker-remote.sh: $*" >&2; exit 1; }

daemon_pid() {
	[ -f "$PIDFILE" ] || return 1
	pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q dockerd "/proc/$pid/comm" 2>/dev/null && echo "$pid"
}

port() { sed -n 's|^DOCKER_HOST=tcp://127.0.0.1:||p' "$ENVFILE" 2>/dev/null; }

remote() { docker -H "tcp://127.0.0.1:$(port)" --tlsverify --tlscacert "$CERTS/ca.pem" --tlscert "$CERTS/cert.pem" --tlskey "$CERTS/key.pem" "$@"; }

answering() { [ -f "$ENVFILE" ] && remote version >/dev/null 2>&1; }

# certs makes a CA, a server certificate for 127.0.0.1 and a client
# certificate, once.
certs() {
	[ -f "$CERTS/key.pem" ] && return 0
	command -v openssl >/dev/null || die "openssl is needed (apt-get install openssl)"
	rm -rf "$CERTS"
	mkdir -p "$CERTS"
	(
		cd "$CERTS"
		openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=senclaw remote test CA" \
			-keyout ca-key.pem -out ca.pem 2>/dev/null
		openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout server-key.pem -out server.csr 2>/dev/null
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >server.ext
		openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 30 \
			-extfile server.ext -out server-cert.pem 2>/dev/null
		openssl req -newkey rsa:2048 -nodes -subj "/CN=senclaw engine" -keyout key.pem -out client.csr 2>/dev/null
		printf 'extendedKeyUsage=clientAuth\n' >client.ext
		openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 30 \
			-extfile client.ext -out cert.pem 2>/dev/null
		rm -f server.csr client.csr server.ext client.ext ca.srl
		chmod 0600 ca-key.pem server-key.pem key.pem
	)
}

# freeport picks a TCP port nothing listens on, from 23760 up.
freeport() {
	command -v ss >/dev/null || die "ss is needed to find a free port (apt-get install iproute2)"
	p=23760
	while [ $p -lt 23860 ]; do
		if ! ss -Hltn "sport = :$p" 2>/dev/null | grep -q .; then
			echo $p
			return 0
		fi
		p=$((p + 1))
	done
	die "no free port in 23760-23859"
}

launch() {
	p=$(port)
	mkdir -p "$STATE/data" "$STATE/exec" "$STATE/tmp"
	# The namespace hides the engines' places before dockerd starts; its
	# containerd, shims and runc live in it too. A session of its own:
	# it outlives the shell that started it until stop. Its TMPDIR is its
	# own: the caller's (make test-go's, under /tmp) is hidden there, and
	# runc, which writes each exec's process file into it, would fail.
	TMPDIR=$STATE/tmp setsid unshare -m --propagation private sh -c '
		for d in /tmp /root /home /work /var/lib/senclaw /run/containerd; do
			[ -d "$d" ] && mount -t tmpfs -o mode=0755 senclaw-remote-hidden "$d"
		done
		chmod 1777 /tmp
		exec dockerd "$@"' sh \
		--data-root "$STATE/data" --exec-root "$STATE/exec" --pidfile "$PIDFILE" \
		--host "tcp://127.0.0.1:$p" --tlsverify --tlscacert "$CERTS/ca.pem" \
		--tlscert "$CERTS/server-cert.pem" --tlskey "$CERTS/server-key.pem" \
		--bridge=none --iptables=false --ip-forward=false --ip-masq=false --userland-proxy=false \
		--cgroup-parent=/senclaw-remote --storage-driver=overlay2 --log-level=warn \
		</dev/null >"$LOG" 2>&1 &
	i=0
	while [ $i -lt 120 ] && ! answering; do
		sleep 0.25
		i=$((i + 1))
	done
	answering || { tail -n 20 "$LOG" >&2; die "the remote test daemon did not come up; see $LOG"; }
}

# ours lists the pids of processes the daemon left (its containerd,
# shims): every process whose command line names the state directory.
ours() {
	for d in /proc/[0-9]*; do
		tr '\0' ' ' 2>/dev/null <"$d/cmdline" | grep -q -- "$STATE/" && echo "${d#/proc/}"
	done
	return 0
}

stop() {
	if pid=$(daemon_pid); then
		kill -TERM "$pid" 2>/dev/null || true
		i=0
		while [ $i -lt 80 ] && kill -0 "$pid" 2>/dev/null; do
			sleep 0.25
			i=$((i + 1))
		done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	# What a killed daemon left running (its containerd, the shims of
	# containers that outlived it) goes too.
	for p in $(ours); do kill -KILL "$p" 2>/dev/null || true; done
	i=0
	while [ $i -lt 40 ] && [ -n "$(ours)" ]; do
		sleep 0.25
		i=$((i + 1))
	done
	rm -f "$PIDFILE"
}

case "${1:-}" in
start)
	[ "$(id -u)" = 0 ] || die "needs root"
	if answering; then
		echo "the remote test daemon is up"
	else
		stop
		certs
		printf 'DOCKER_HOST=tcp://127.0.0.1:%s\nDOCKER_CERT_PATH=%s\nDOCKER_TLS_VERIFY=1\n' "$(freeport)" "$CERTS" >"$ENVFILE"
		launch
	fi
	if ! remote image inspect "$IMAGE" >/dev/null 2>&1; then
		docker image inspect "$IMAGE" >/dev/null 2>&1 || SKIP_APT=${SKIP_APT:-} "$HERE/docker-test-image.sh"
		docker save "$IMAGE" | remote load >/dev/null
	fi
	echo "the remote test daemon answers at $(sed -n 's/^DOCKER_HOST=//p' "$ENVFILE") (TLS, certificates in $CERTS)"
	;;
stop)
	stop
	;;
stop-all)
	stop
	for d in /var/tmp/senclaw-remote-*/; do
		[ -f "$d/env" ] || continue
		SENCLAW_REMOTE_DOCKER=${d%/} "$0" stop
		case $d in /var/tmp/senclaw-remote-docker/) ;; *) rm -rf "$d" ;; esac
	done
	;;
kill)
	pid=$(daemon_pid) || die "the remote test daemon is not running"
	kill -KILL "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	;;
restart)
	[ -f "$ENVFILE" ] || die "never started: run $0 start"
	daemon_pid >/dev/null && stop
	launch
	;;
env)
	[ -f "$ENVFILE" ] || die "not started: run $0 start"
	cat "$ENVFILE"
	;;
status)
	answering
	;;
*)
	echo "usage: $0 start|stop|stop-all|kill|restart|env|status" >&2
	exit 2
	;;
esac
