#!/bin/sh
# The load runs of docs/benchmarks.md, Catchbox and Mailpit side by side.
# Run from the repository root. Needs a Mailpit binary (scripts/bench-peer-mailpit.sh).
#   REPS=3           ingest repetitions (each on a fresh server)
#   SIZES            ingest message sizes (default "small large")
#   BENCH_ONLY=ingest  stop after the interleaved ingest pairs
#   SEARCH_EMAILS    emails seeded for the search run (default 100000)
#   MAILPIT_SEARCH_EMAILS  emails seeded into Mailpit for its search run (default 50000)
#   BENCH_1M=1       also seed 1,000,000 emails over 1,000 namespaces (about 15 minutes here)
#   BENCH_POSTGRES_URL  a PostgreSQL URL (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable):
#                    also ingest on PostgreSQL, with one replica and with two
#   MAILPIT_BIN      the peer's binary (see scripts/bench-peer-mailpit.sh); without one the
#                    Mailpit runs are skipped
set -eu
GO=${GO:-go}
OUT=${BENCH_DIR:-/tmp/catchbox-bench-run}
REPS=${REPS:-3}
SIZES=${SIZES:-small large}
SEARCH_EMAILS=${SEARCH_EMAILS:-100000}
MAILPIT_SEARCH_EMAILS=${MAILPIT_SEARCH_EMAILS:-50000}
KEY=benchkey12345
CB_SMTP=127.0.0.1:22525
CB_HTTP=127.0.0.1:28026
mkdir -p "$OUT"
$GO build -o "$OUT/catchbox" ./cmd/catchbox
$GO build -o "$OUT/catchbox-bench" ./cmd/catchbox-bench
B=$OUT/catchbox-bench
CB_PID=

# start_catchbox DIR [SMTP HTTP [DATABASE_URL]]: a server on DIR; sets CB_PID.
start_catchbox() {
	mkdir -p "$1"
	smtp=${2:-$CB_SMTP} http=${3:-$CB_HTTP}
	CATCHBOX_DATA_DIR=$1 CATCHBOX_API_KEY=$KEY CATCHBOX_SMTP_ADDR=$smtp CATCHBOX_IMAP_ADDR= CATCHBOX_POP3_ADDR= CATCHBOX_HTTP_ADDR=$http \
		CATCHBOX_DATABASE_URL=${4:-} CATCHBOX_SECRET_KEY=bench-secret-key-0123456789 \
		"$OUT/catchbox" serve >>"$OUT/catchbox.log" 2>&1 &
	CB_PID=$!
	i=0
	until curl -fsS -o /dev/null -H "X-Api-Key: $KEY" "http://$http/api/test" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 300 ] || { cat "$OUT/catchbox.log"; exit 1; }
		sleep 0.1
	done
}
stop_catchbox() { [ -z "$CB_PID" ] || { kill "$CB_PID"; wait "$CB_PID" 2>/dev/null || true; CB_PID=; }; }
HAVE_MAILPIT=1
[ -x "${MAILPIT_BIN:-/tmp/mailpit}" ] || { HAVE_MAILPIT=; echo "# no Mailpit binary: Mailpit runs skipped (see scripts/bench-peer-mailpit.sh)"; }
cleanup() {
	stop_catchbox
	[ -z "$HAVE_MAILPIT" ] || scripts/bench-peer-mailpit.sh stop >/dev/null 2>&1 || true
	if [ -n "${BENCH_POSTGRES_URL:-}" ]; then
		psql -qAt "$BENCH_POSTGRES_URL" -c "SELECT 'DROP SCHEMA ' || nspname || ' CASCADE;' FROM pg_namespace WHERE nspname LIKE 'catchbox_bench_$$%'" |
			psql -q "$BENCH_POSTGRES_URL" >/dev/null 2>&1 || true
	fi
}
trap cleanup EXIT INT TERM

# pg_url NAME: a fresh schema in BENCH_POSTGRES_URL's database, as a URL (dropped
# by cleanup).
pg_url() {
	schema=catchbox_bench_$$_$1
	psql -q "$BENCH_POSTGRES_URL" -c "CREATE SCHEMA $schema" >/dev/null
	case $BENCH_POSTGRES_URL in *\?*) sep='&' ;; *) sep='?' ;; esac
	echo "$BENCH_POSTGRES_URL${sep}search_path=$schema,public"
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, $($GO version), load: $(cut -d' ' -f1-3 /proc/loadavg)"

echo "## ingest: 2,000 messages over 8 connections, fresh servers, interleaved"
for rep in $(seq 1 "$REPS"); do
	for size in $SIZES; do
		if [ -n "$HAVE_MAILPIT" ]; then
			eval "$(scripts/bench-peer-mailpit.sh start)"
			$B smtp --label mailpit --addr "$MAILPIT_SMTP" --messages 2000 --conns 8 --size $size --pid "$MAILPIT_PID"
			scripts/bench-peer-mailpit.sh stop
		fi
		rm -rf "$OUT/ingest"; start_catchbox "$OUT/ingest"
		$B smtp --label catchbox --addr $CB_SMTP --messages 2000 --conns 8 --size $size --pid "$CB_PID"
		stop_catchbox
	done
done

[ "${BENCH_ONLY:-}" != ingest ] || exit 0

if [ -n "${BENCH_POSTGRES_URL:-}" ]; then
	echo "## ingest on PostgreSQL: one replica, then two (each sender's 4 connections to one replica)"
	for size in small large; do
		rm -rf "$OUT/pg1"; start_catchbox "$OUT/pg1" "$CB_SMTP" "$CB_HTTP" "$(pg_url one_$size)"
		$B smtp --label catchbox-postgres-1-replica --addr $CB_SMTP --messages 2000 --conns 8 --size $size --pid "$CB_PID"
		stop_catchbox
		url=$(pg_url two_$size)
		rm -rf "$OUT/pgA" "$OUT/pgB"
		start_catchbox "$OUT/pgA" "$CB_SMTP" "$CB_HTTP" "$url"; A=$CB_PID
		start_catchbox "$OUT/pgB" 127.0.0.1:22526 127.0.0.1:28027 "$url"; Bp=$CB_PID
		$B smtp --label catchbox-postgres-2-replicas-A --addr $CB_SMTP --messages 1000 --conns 4 --size $size &
		SA=$!
		$B smtp --label catchbox-postgres-2-replicas-B --addr 127.0.0.1:22526 --messages 1000 --conns 4 --size $size
		wait "$SA" || true
		kill "$A" "$Bp"; wait "$A" "$Bp" 2>/dev/null || true; CB_PID=
	done
fi

echo "## wait wake-up, empty namespace"
rm -rf "$OUT/wait"; start_catchbox "$OUT/wait"
$B wait --api "http://$CB_HTTP" --smtp $CB_SMTP --key $KEY --rounds 200
stop_catchbox

echo "## search, $SEARCH_EMAILS emails in one namespace"
rm -rf "$OUT/search"; start_catchbox "$OUT/search"
$B seed --smtp $CB_SMTP --messages "$SEARCH_EMAILS" --conns 16
$B search --label catchbox --api "http://$CB_HTTP" --key $KEY --requests 500 --subject-includes "password reset" --to-addr-prefix "user0042@"
$B search --label catchbox --api "http://$CB_HTTP" --key $KEY --requests 500 --subject-includes "Order 0042317" --to-addr-prefix "user0042@"
echo "catchbox after the searches: $(grep -E 'VmHWM|VmRSS|RssAnon|RssFile' /proc/$CB_PID/status | tr -s ' \t\n' ' ')"
echo "## wait wake-up, $SEARCH_EMAILS emails in the namespace"
$B wait --api "http://$CB_HTTP" --smtp $CB_SMTP --key $KEY --rounds 200
stop_catchbox

if [ -n "$HAVE_MAILPIT" ]; then
	echo "## Mailpit search, $MAILPIT_SEARCH_EMAILS messages"
	eval "$(scripts/bench-peer-mailpit.sh start)"
	$B seed --smtp "$MAILPIT_SMTP" --messages "$MAILPIT_SEARCH_EMAILS" --conns 16
	$B search --mailpit --label mailpit --api "$MAILPIT_HTTP" --requests 50 --subject-includes "password reset" --to-addr-prefix "user0042@"
	$B search --mailpit --label mailpit --api "$MAILPIT_HTTP" --requests 50 --subject-includes "Order 0042317" --to-addr-prefix "user0042@"
	scripts/bench-peer-mailpit.sh stop
fi

if [ "${BENCH_1M:-}" = 1 ]; then
	echo "## search, 1,000,000 emails over 1,000 namespaces"
	rm -rf "$OUT/multi"; start_catchbox "$OUT/multi"
	$B seed --smtp $CB_SMTP --api "http://$CB_HTTP" --key $KEY --namespaces 1000 --rcpts 100 --messages 1000000 --conns 8 --per-conn 50
	$B search --label catchbox --api "http://$CB_HTTP" --key $KEY --namespace seed0500 --requests 500 --subject-includes "password reset" --to-addr-prefix "user0042@"
	stop_catchbox
fi
