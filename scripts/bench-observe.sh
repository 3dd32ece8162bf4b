#!/bin/sh
# What the access log and the metrics cost: SMTP ingest and HTTP search of one
# catchbox build with both on (the default) against both off
# (CATCHBOX_ACCESS_LOG=false CATCHBOX_METRICS=false), interleaved: each
# repetition runs one server of each variant, the order alternating, so that
# the load of a shared machine falls on both alike. Logs are JSON, written to a
# file, as a container's or journald's would be. Prints every run, then the
# medians and the median of the pairs' ratios (on / off). Run from the
# repository root:
#   scripts/bench-observe.sh [BINARY]       (default: builds bin/catchbox)
#   REPS=8 MESSAGES=3000 CONNS=8 SEED=20000 REQUESTS=300
set -eu
GO=${GO:-go}
OUT=${BENCH_DIR:-/tmp/catchbox-bench-observe}
REPS=${REPS:-8}
MESSAGES=${MESSAGES:-3000}
CONNS=${CONNS:-8}
SEED=${SEED:-20000}
REQUESTS=${REQUESTS:-300}
SMTP=127.0.0.1:23725
HTTP=127.0.0.1:29226
KEY=benchkey12345
mkdir -p "$OUT"
if [ $# -ge 1 ]; then cp "$1" "$OUT/catchbox"; else $GO build -o "$OUT/catchbox" ./cmd/catchbox; fi
$GO build -o "$OUT/catchbox-bench" ./cmd/catchbox-bench
PID=
trap '[ -z "$PID" ] || kill "$PID" 2>/dev/null || true' EXIT INT TERM

# start VARIANT DATADIR: a server with the access log and metrics on or off.
start() {
	if [ "$1" = on ]; then flags="CATCHBOX_ACCESS_LOG=true CATCHBOX_METRICS=true"; else flags="CATCHBOX_ACCESS_LOG=false CATCHBOX_METRICS=false"; fi
	env $flags CATCHBOX_LOG_FORMAT=json CATCHBOX_DATA_DIR=$2 CATCHBOX_API_KEY=$KEY CATCHBOX_SMTP_ADDR=$SMTP CATCHBOX_IMAP_ADDR= CATCHBOX_POP3_ADDR= CATCHBOX_HTTP_ADDR=$HTTP \
		CATCHBOX_SECRET_KEY=bench-secret-key-0123456789 "$OUT/catchbox" serve >>"$OUT/server-$1.log" 2>&1 &
	PID=$!
	i=0
	until curl -fsS -o /dev/null -H "X-Api-Key: $KEY" "http://$HTTP/api/test" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 600 ] || { echo "catchbox did not start; see $OUT/server-$1.log" >&2; exit 1; }
		sleep 0.1
	done
}
TICK_US=$((1000000 / $(getconf CLK_TCK)))
cpu() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
stop() { kill $PID; wait $PID 2>/dev/null || true; PID=; }
load() { cut -d' ' -f1 /proc/loadavg; }

ingest() {
	rm -rf "$OUT/ingest"; mkdir -p "$OUT/ingest"
	start "$1" "$OUT/ingest"
	c0=$(cpu)
	"$OUT/catchbox-bench" smtp --addr $SMTP --messages "$MESSAGES" --conns "$CONNS" --size small --json >"$OUT/ingest.json"
	c1=$(cpu)
	stop
	echo "ingest $1 load=$(load) rate=$(jq -r .messages_per_s "$OUT/ingest.json") p50=$(jq -r .latency.p50_ms "$OUT/ingest.json") cpu_us=$(( (c1 - c0) * TICK_US / MESSAGES ))"
}

search() {
	start "$1" "$OUT/seeded"
	c0=$(cpu)
	"$OUT/catchbox-bench" search --api "http://$HTTP" --key $KEY --requests "$REQUESTS" \
		--subject-includes "password reset" --to-addr-prefix "user0042@" --json >"$OUT/search.json"
	c1=$(cpu)
	stop
	# the server's CPU per request, over the three queries and their warm-up requests
	echo "search-all $1 load=$(load) cpu_us=$(( (c1 - c0) * TICK_US / (3 * (REQUESTS + 5)) ))"
	# requests per second of one client, sequential: 1000 / mean ms, each query.
	jq -r --arg v "$1" --arg l "$(load)" '.queries[] | "search-\(.name) \($v) load=\($l) rate=\(1000 / .latency.mean_ms) p50=\(.latency.p50_ms)"' "$OUT/search.json"
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg); ingest $MESSAGES small messages over $CONNS connections; search $REQUESTS requests per query over $SEED emails"
if [ ! -f "$OUT/seeded/catchbox.db" ]; then
	rm -rf "$OUT/seeded"; mkdir -p "$OUT/seeded"
	start off "$OUT/seeded"
	"$OUT/catchbox-bench" seed --smtp $SMTP --messages "$SEED" --conns 16 >/dev/null
	stop
fi
for rep in $(seq 1 "$REPS"); do
	if [ $((rep % 2)) = 1 ]; then a=on b=off; else a=off b=on; fi
	ingest $a; ingest $b
	search $a; search $b
done | tee "$OUT/runs.txt"

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "# medians over $REPS repetitions; pairs: on / off within each repetition"
f() { grep "^$what $1 " "$OUT/runs.txt" | sed -n "s/.* $2=\([0-9.]*\).*/\1/p"; }
pairs() { f on "$1" >"$OUT/on"; f off "$1" >"$OUT/off"; paste -d' ' "$OUT/on" "$OUT/off" | awk '{print $1 / $2}' | median; }
for what in $(cut -d' ' -f1 "$OUT/runs.txt" | sort -u); do
	for m in rate p50 cpu_us; do
		[ -n "$(f on $m)" ] || continue
		echo "$what $m: on $(f on $m | median) off $(f off $m | median), ratio on/off $(pairs $m)"
	done
done
