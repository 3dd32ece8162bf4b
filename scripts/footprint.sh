#!/bin/sh
# Disk and memory footprint of one server after a load (docs/benchmarks.md,
# "Footprint"): a fresh data directory, N emails of one kind over SMTP, searches
# through HTTP, then the process's memory (/proc/PID/status), the data directory,
# and, once the server has stopped and the WAL is folded into the database file,
# the database's size and where its bytes are (SQLite's dbstat, needs the sqlite3
# command-line shell).
#
# Usage: scripts/footprint.sh catchbox|mailpit small|large [CATCHBOX_BINARY]
#   small: catchbox-bench seed (1.1 KB messages, searchable subjects), EMAILS (default 100000)
#   large: catchbox-bench smtp --size large (51 KB with a 30 KiB attachment), EMAILS (default 10000)
#   BENCH     catchbox-bench binary (default: built into $OUT)
#   OUT       work directory (default /tmp/catchbox-footprint)
#   EXTRA_ENV settings passed to Catchbox, e.g. "CATCHBOX_MEMORY_LIMIT=64MiB"
#   MAILPIT_BIN the peer (see scripts/bench-peer-mailpit.sh)
set -eu
SERVER=$1 KIND=$2
OUT=${OUT:-/tmp/catchbox-footprint}
mkdir -p "$OUT"
if [ -z "${BENCH:-}" ]; then
	go build -o "$OUT/catchbox-bench" ./cmd/catchbox-bench
	BENCH=$OUT/catchbox-bench
fi
CB=${3:-}
if [ "$SERVER" = catchbox ] && [ -z "$CB" ]; then
	go build -o "$OUT/catchbox" ./cmd/catchbox
	CB=$OUT/catchbox
fi
case $KIND in
small) EMAILS=${EMAILS:-100000} ;;
large) EMAILS=${EMAILS:-10000} ;;
*) echo "kind must be small or large" >&2; exit 2 ;;
esac
KEY=benchkey12345
SMTP=127.0.0.1:22725 HTTP=127.0.0.1:28226
DIR=$OUT/data-$SERVER
rm -rf "$DIR"; mkdir -p "$DIR"
echo "# $(date -u +%FT%TZ) $SERVER $KIND emails=$EMAILS load: $(cut -d' ' -f1-3 /proc/loadavg)"

case $SERVER in
catchbox)
	env CATCHBOX_DATA_DIR="$DIR" CATCHBOX_API_KEY=$KEY CATCHBOX_SMTP_ADDR=$SMTP CATCHBOX_IMAP_ADDR= CATCHBOX_POP3_ADDR= CATCHBOX_HTTP_ADDR=$HTTP \
		CATCHBOX_SECRET_KEY=bench-secret-key-0123456789 ${EXTRA_ENV:-} "$CB" serve >"$OUT/server.log" 2>&1 &
	PID=$!
	i=0
	until curl -fsS -o /dev/null -H "X-Api-Key: $KEY" "http://$HTTP/api/test" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 300 ] || { cat "$OUT/server.log"; exit 1; }
		sleep 0.1
	done
	DB=$DIR/catchbox.db
	SEARCH="--api http://$HTTP --key $KEY"
	;;
mailpit)
	export MAILPIT_DIR=$DIR MAILPIT_SMTP=$SMTP MAILPIT_HTTP=$HTTP
	eval "$(scripts/bench-peer-mailpit.sh start)"
	PID=$MAILPIT_PID SMTP=$MAILPIT_SMTP
	DB=$DIR/mailpit.db
	SEARCH="--mailpit --api $MAILPIT_HTTP"
	;;
*) echo "server must be catchbox or mailpit" >&2; exit 2 ;;
esac

stop() {
	if [ "$SERVER" = catchbox ]; then kill "$PID"; wait "$PID" 2>/dev/null || true; else scripts/bench-peer-mailpit.sh stop; fi
}
trap 'stop 2>/dev/null || true' EXIT INT TERM

case $KIND in
small) "$BENCH" seed --smtp "$SMTP" --messages "$EMAILS" --conns 16 2>/dev/null ;;
large) "$BENCH" smtp --label "$SERVER" --addr "$SMTP" --messages "$EMAILS" --conns 8 --size large --pid "$PID" ;;
esac
REQ=200
[ "$SERVER" = catchbox ] || REQ=20
# shellcheck disable=SC2086
"$BENCH" search --label "$SERVER" $SEARCH --requests $REQ --subject-includes "password reset" --to-addr-prefix "user0042@"
echo "memory after the load and searches: $(grep -E '^(VmHWM|VmRSS|RssAnon|RssFile)' /proc/$PID/status | tr -s ' \t' ' ' | tr '\n' ' ')"
echo "data directory while running: $(du -sk "$DIR" | cut -f1) KiB on disk; $(ls -l "$DIR" | awk 'NR>1 && /\.db/ {printf "%s=%d ", $9, $5}')"
trap - EXIT INT TERM
stop
sqlite3 "$DB" 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null
echo "database after stop and checkpoint: $(stat -c %s "$DB") bytes, $(sqlite3 "$DB" 'PRAGMA freelist_count') free pages; per email $(($(stat -c %s "$DB") / EMAILS)) bytes"
echo "where the bytes are (dbstat, MB of pages / MB of payload):"
sqlite3 -separator ' ' "$DB" "SELECT printf('  %-28s %8.2f %8.2f', name, sum(pgsize)/1e6, sum(payload)/1e6) FROM dbstat GROUP BY name HAVING sum(pgsize) > 100000 ORDER BY sum(pgsize) DESC"
