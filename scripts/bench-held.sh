#!/bin/sh
# Held wait=true searches (docs/benchmarks.md, "Held waits"):
#   scripts/bench-held.sh [BINARY]       (default: builds ./cmd/catchbox)
# For each count of WAITERS, a fresh server on SQLite, then catchbox-bench held:
# that many searches held at once, each on a recipient prefix of its own, and
# MAILS mails over CONNS SMTP connections, each to one held search (an answered
# search is replaced, so the count stays); the time from each mail's 250 to its
# search's answer, the server's CPU time per mail, its re-checks of held
# searches per mail, and its resident memory per held search. With
# BENCH_POSTGRES_URL set, the same on PostgreSQL with two replicas: the
# searches are held on both in turn, the mails sent to the first, so half the
# answers cross replicas. Run from the repository root; the load is bounded
# (at most 20,000 searches, MAILS mails, 60 s per answer) and the servers are
# stopped at the end. Request limits are off for the run (CATCHBOX_RATE_LIMIT_KEY,
# _IP and CATCHBOX_AUTH_FAILURE_LIMIT = 0): 10,000 searches opened in a few
# seconds with one key from one address would otherwise be paced by the key's
# rate and wait for the key checks in flight. The hold is 10 minutes so that
# none ends during a run.
#   WAITERS="1 100 1000 10000"  MAILS=100  CONNS=4  REPS=1  BENCH_POSTGRES_URL=
set -eu
GO=${GO:-go}
OUT=${BENCH_DIR:-/tmp/catchbox-bench-held}
WAITERS=${WAITERS:-1 100 1000 10000}
MAILS=${MAILS:-100}
CONNS=${CONNS:-4}
REPS=${REPS:-1}
KEY=benchkey12345
SMTP1=127.0.0.1:23825 HTTP1=127.0.0.1:29326
SMTP2=127.0.0.1:23826 HTTP2=127.0.0.1:29327
mkdir -p "$OUT"
if [ $# -ge 1 ]; then cp "$1" "$OUT/catchbox"; else $GO build -o "$OUT/catchbox" ./cmd/catchbox; fi
$GO build -o "$OUT/catchbox-bench" ./cmd/catchbox-bench
PIDS=
SCHEMA=
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	for p in $PIDS; do wait "$p" 2>/dev/null || true; done
	PIDS=
	if [ -n "$SCHEMA" ]; then psql -q "$BENCH_POSTGRES_URL" -c "DROP SCHEMA $SCHEMA CASCADE" >/dev/null 2>&1 || true; SCHEMA=; fi
}
trap cleanup EXIT INT TERM

# start DIR SMTP HTTP [DATABASE_URL]: a server; its pid is added to PIDS.
start() {
	mkdir -p "$1"
	CATCHBOX_DATA_DIR=$1 CATCHBOX_API_KEY=$KEY CATCHBOX_SMTP_ADDR=$2 CATCHBOX_HTTP_ADDR=$3 \
		CATCHBOX_IMAP_ADDR= CATCHBOX_POP3_ADDR= CATCHBOX_SECRET_KEY=bench-secret-key-0123456789 \
		CATCHBOX_DATABASE_URL=${4:-} CATCHBOX_WAIT_HOLD=10m CATCHBOX_RATE_LIMIT_KEY=0 CATCHBOX_RATE_LIMIT_IP=0 CATCHBOX_AUTH_FAILURE_LIMIT=0 \
		"$OUT/catchbox" serve >>"$OUT/server.log" 2>&1 &
	PIDS="$PIDS $!"
	i=0
	until curl -fsS -o /dev/null "http://$3/readyz" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 300 ] || { echo "catchbox did not start; see $OUT/server.log" >&2; exit 1; }
		sleep 0.1
	done
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg); $MAILS mails over $CONNS connections per run"
for rep in $(seq 1 "$REPS"); do
	for n in $WAITERS; do
		rm -rf "$OUT/data"
		start "$OUT/data" $SMTP1 $HTTP1
		echo "rep=$rep store=sqlite replicas=1 waiters=$n load=$(cut -d' ' -f1 /proc/loadavg)"
		"$OUT/catchbox-bench" held --api "http://$HTTP1" --smtp $SMTP1 --key $KEY --waiters "$n" --mails "$MAILS" \
			--conns "$CONNS" --pid "$(echo $PIDS | tr ' ' ',')"
		cleanup
		if [ -n "${BENCH_POSTGRES_URL:-}" ]; then
			SCHEMA=catchbox_held_$$
			psql -q "$BENCH_POSTGRES_URL" -c "CREATE SCHEMA $SCHEMA" >/dev/null
			case $BENCH_POSTGRES_URL in *\?*) sep='&' ;; *) sep='?' ;; esac
			url="$BENCH_POSTGRES_URL${sep}search_path=$SCHEMA,public"
			rm -rf "$OUT/data1" "$OUT/data2"
			start "$OUT/data1" $SMTP1 $HTTP1 "$url"
			start "$OUT/data2" $SMTP2 $HTTP2 "$url"
			echo "rep=$rep store=postgres replicas=2 waiters=$n load=$(cut -d' ' -f1 /proc/loadavg)"
			"$OUT/catchbox-bench" held --api "http://$HTTP1,http://$HTTP2" --smtp $SMTP1 --key $KEY --waiters "$n" \
				--mails "$MAILS" --conns "$CONNS" --pid "$(echo $PIDS | tr ' ' ',')"
			cleanup
		fi
	done
done
