#!/bin/sh
# Start or stop Mailpit as the benchmark peer of docs/benchmarks.md.
#
# This script only locates a Mailpit binary that you provide; it never builds
# or downloads one, and no Mailpit code lives in this repository. Build Mailpit
# yourself from its public source, outside the repository, following its own
# documentation, and point MAILPIT_BIN at the binary.
#
# Usage:
#   scripts/bench-peer-mailpit.sh start    # prints MAILPIT_PID, MAILPIT_SMTP, MAILPIT_HTTP
#   scripts/bench-peer-mailpit.sh stop
#   scripts/bench-peer-mailpit.sh status
#
# Environment:
#   MAILPIT_BIN   the binary (default /tmp/mailpit)
#   MAILPIT_SMTP  SMTP listen address (default 127.0.0.1:21025)
#   MAILPIT_HTTP  HTTP listen address (default 127.0.0.1:28025)
#   MAILPIT_DIR   state directory: database, log, pid file (default /tmp/catchbox-bench-mailpit)
#   MAILPIT_POP3  POP3 listen address (default: POP3 off); its one user is
#                 MAILPIT_POP3_USER (default bench) with MAILPIT_POP3_PASS
#                 (default bench-pass), written to a password file in MAILPIT_DIR
#
# Mailpit runs with: a fresh database in MAILPIT_DIR; --max 0 so it keeps
# every message (its default prunes to 500, which would empty a search
# benchmark); any SMTP credentials or none accepted, in plain text, so the
# same load with or without --auth works against it; no reverse DNS lookups
# and no version check, so no time is spent on the network.
set -eu

MAILPIT_BIN=${MAILPIT_BIN:-/tmp/mailpit}
MAILPIT_SMTP=${MAILPIT_SMTP:-127.0.0.1:21025}
MAILPIT_HTTP=${MAILPIT_HTTP:-127.0.0.1:28025}
MAILPIT_DIR=${MAILPIT_DIR:-/tmp/catchbox-bench-mailpit}
PIDFILE=$MAILPIT_DIR/mailpit.pid

loopback() {
	case $1 in
	127.*:* | localhost:* | \[::1\]:*) ;;
	*)
		echo "bench-peer-mailpit: $2=$1 is not a loopback address; the benchmark only listens on loopback" >&2
		exit 2
		;;
	esac
}

running_pid() {
	[ -f "$PIDFILE" ] || return 1
	pid=$(cat "$PIDFILE")
	kill -0 "$pid" 2>/dev/null || return 1
	echo "$pid"
}

start() {
	if [ ! -x "$MAILPIT_BIN" ]; then
		cat >&2 <<MSG
bench-peer-mailpit: no Mailpit binary at $MAILPIT_BIN.
Build one yourself from Mailpit's public source, outside this repository,
following its own documentation, then point MAILPIT_BIN at the binary.
MSG
		exit 1
	fi
	loopback "$MAILPIT_SMTP" MAILPIT_SMTP
	loopback "$MAILPIT_HTTP" MAILPIT_HTTP
	if pid=$(running_pid); then
		echo "bench-peer-mailpit: already running as pid $pid; run '$0 stop' first" >&2
		exit 1
	fi
	mkdir -p "$MAILPIT_DIR"
	rm -f "$MAILPIT_DIR"/mailpit.db "$MAILPIT_DIR"/mailpit.db-* "$MAILPIT_DIR"/mailpit.log
	set --
	if [ -n "${MAILPIT_POP3:-}" ]; then
		loopback "$MAILPIT_POP3" MAILPIT_POP3
		# htpasswd's {SHA} form, which Mailpit's password files accept.
		printf '%s:{SHA}%s\n' "${MAILPIT_POP3_USER:-bench}" \
			"$(printf '%s' "${MAILPIT_POP3_PASS:-bench-pass}" | openssl dgst -binary -sha1 | base64)" >"$MAILPIT_DIR/pop3.passwd"
		set -- --pop3 "$MAILPIT_POP3" --pop3-auth-file "$MAILPIT_DIR/pop3.passwd"
	fi
	"$MAILPIT_BIN" "$@" \
		--database "$MAILPIT_DIR/mailpit.db" \
		--smtp "$MAILPIT_SMTP" \
		--listen "$MAILPIT_HTTP" \
		--max 0 \
		--smtp-auth-accept-any \
		--smtp-auth-allow-insecure \
		--smtp-disable-rdns \
		--disable-version-check \
		--quiet \
		>"$MAILPIT_DIR/mailpit.log" 2>&1 &
	echo $! >"$PIDFILE"
	i=0
	until curl -fsS -o /dev/null "http://$MAILPIT_HTTP/readyz" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 100 ] || ! running_pid >/dev/null; then
			echo "bench-peer-mailpit: Mailpit did not become ready; its log:" >&2
			cat "$MAILPIT_DIR/mailpit.log" >&2
			stop
			exit 1
		fi
		sleep 0.1
	done
	echo "MAILPIT_PID=$(cat "$PIDFILE")"
	echo "MAILPIT_SMTP=$MAILPIT_SMTP"
	echo "MAILPIT_HTTP=http://$MAILPIT_HTTP"
}

stop() {
	if pid=$(running_pid); then
		kill "$pid"
		i=0
		while kill -0 "$pid" 2>/dev/null; do
			i=$((i + 1))
			if [ $i -gt 50 ]; then
				kill -9 "$pid" 2>/dev/null || true
				break
			fi
			sleep 0.1
		done
	fi
	rm -f "$PIDFILE"
}

case ${1:-} in
start) start ;;
stop) stop ;;
status)
	if pid=$(running_pid); then
		echo "running pid=$pid smtp=$MAILPIT_SMTP http=http://$MAILPIT_HTTP"
	else
		echo "not running"
		exit 1
	fi
	;;
*)
	echo "usage: $0 start|stop|status" >&2
	exit 2
	;;
esac
