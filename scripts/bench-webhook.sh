#!/bin/sh
# SMTP ingest with one webhook endpoint (email.received, to a local receiver
# answering 204) against none, interleaved, on fresh servers of one build:
#   scripts/bench-webhook.sh BINARY
# Each repetition runs both variants (the order alternates) and prints the
# rate and the server's CPU time per message over the run (utime + stime from
# /proc/PID/stat: with an endpoint it includes the deliveries made during the
# run); the end prints the medians and the median of the pairs' ratios. The
# receiver (Python's http.server) runs on the same cores.
#   REPS=6  MESSAGES=3000  CONNS=8  SIZE=small
#   BENCH_POSTGRES_URL=postgres://...  runs each server on a fresh schema of that
#   database instead of SQLite (psql creates and drops it).
set -eu
[ $# -eq 1 ] || { echo "usage: $0 BINARY" >&2; exit 2; }
GO=${GO:-go}
OUT=${BENCH_DIR:-/tmp/catchbox-bench-webhook}
REPS=${REPS:-6}
MESSAGES=${MESSAGES:-3000}
CONNS=${CONNS:-8}
SIZE=${SIZE:-small}
SMTP=127.0.0.1:23825
HTTP=127.0.0.1:29326
HOOK=127.0.0.1:29327
KEY=benchkey12345
mkdir -p "$OUT"
cp "$1" "$OUT/catchbox"
$GO build -o "$OUT/catchbox-bench" ./cmd/catchbox-bench
TICK_US=$((1000000 / $(getconf CLK_TCK)))
PID= RPID=
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
trap '[ -z "$PID" ] || kill "$PID" 2>/dev/null; [ -z "$RPID" ] || kill "$RPID" 2>/dev/null; true' EXIT INT TERM

python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(204); self.end_headers()
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
' "${HOOK#*:}" &
RPID=$!

# run VARIANT: one fresh server (with an endpoint when VARIANT is hook), one ingest run.
run() {
	rm -rf "$OUT/data"; mkdir -p "$OUT/data"
	DBURL=
	if [ -n "${BENCH_POSTGRES_URL:-}" ]; then
		SCHEMA=bench_webhook_$$
		psql -q "$BENCH_POSTGRES_URL" -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE; CREATE SCHEMA $SCHEMA" >/dev/null 2>&1
		DBURL="$BENCH_POSTGRES_URL&search_path=$SCHEMA,public"
	fi
	CATCHBOX_DATABASE_URL=$DBURL CATCHBOX_DATA_DIR=$OUT/data CATCHBOX_API_KEY=$KEY CATCHBOX_SMTP_ADDR=$SMTP CATCHBOX_IMAP_ADDR= CATCHBOX_POP3_ADDR= CATCHBOX_HTTP_ADDR=$HTTP \
		CATCHBOX_SECRET_KEY=bench-secret-key-0123456789 "$OUT/catchbox" serve >>"$OUT/server.log" 2>&1 &
	PID=$!
	i=0
	until curl -fsS -o /dev/null -H "X-Api-Key: $KEY" "http://$HTTP/api/test" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 300 ] || { echo "catchbox did not start; see $OUT/server.log" >&2; exit 1; }
		sleep 0.1
	done
	if [ "$1" = hook ]; then
		curl -fsS -o /dev/null -H "X-Api-Key: $KEY" -d "{\"url\": \"http://$HOOK/hook\", \"event_types\": [\"email.received\"]}" "http://$HTTP/api/webhooks"
	fi
	c0=$(cpu $PID)
	rate=$("$OUT/catchbox-bench" smtp --label "$1" --addr $SMTP --messages "$MESSAGES" --conns "$CONNS" --size "$SIZE" |
		sed -n 's/.*rate=\([0-9.]*\)\/s.*/\1/p')
	c1=$(cpu $PID)
	echo "$1 load=$(cut -d' ' -f1 /proc/loadavg) rate=$rate cpu_us_per_msg=$(( (c1 - c0) * TICK_US / MESSAGES ))"
	kill $PID; wait $PID 2>/dev/null || true; PID=
	[ -z "${BENCH_POSTGRES_URL:-}" ] || psql -q "$BENCH_POSTGRES_URL" -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg); $MESSAGES $SIZE messages over $CONNS connections per run"
for rep in $(seq 1 "$REPS"); do
	if [ $((rep % 2)) = 1 ]; then run none; run hook; else run hook; run none; fi
done | tee "$OUT/runs.txt"

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
f() { grep "^$1 " "$OUT/runs.txt" | sed -n 's/.* rate=\([0-9.]*\).*/\1/p'; }
g() { grep "^$1 " "$OUT/runs.txt" | sed -n 's/.* cpu_us_per_msg=\([0-9]*\).*/\1/p' | median; }
paste -d' ' "$(f none >"$OUT/none.txt"; echo "$OUT/none.txt")" "$(f hook >"$OUT/hook.txt"; echo "$OUT/hook.txt")" |
	awk '{print $2 / $1}' >"$OUT/pairs.txt"
echo "# medians: none $(median <"$OUT/none.txt")/s, one endpoint $(median <"$OUT/hook.txt")/s; pairs (endpoint / none) $(median <"$OUT/pairs.txt"); cpu per message none $(g none) us, one endpoint $(g hook) us"
