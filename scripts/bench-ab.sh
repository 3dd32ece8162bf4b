#!/bin/sh
# Interleaved SMTP ingest of two catchbox builds, to measure what a change costs:
#   scripts/bench-ab.sh BASE_BINARY NEW_BINARY
# Each repetition runs, for each size, one fresh server of each build (the order
# alternates between repetitions) and catchbox-bench smtp against it; every run
# prints the rate and the server's CPU time per message (utime + stime from
# /proc/PID/stat over the run), and the end prints the medians and the median of
# the pairs' ratios. Run from the repository root.
#   REPS=8  SIZES="small large html"  MESSAGES=3000  CONNS=8
# BENCH_SMTP and BENCH_HTTP move the servers' fixed addresses (two runs at once).
# SETUP, when set, is a shell command run once each server answers, before the
# load (with HTTP set to its address and the API key benchkey12345), to give
# both builds the same state: namespaces, fault rules, ...
#   BENCH_POSTGRES_URL=postgres://...: each server on a fresh schema of that
#   PostgreSQL database (one replica) instead of SQLite
set -eu
[ $# -eq 2 ] || { echo "usage: $0 BASE_BINARY NEW_BINARY" >&2; exit 2; }
GO=${GO:-go}
OUT=${BENCH_DIR:-/tmp/catchbox-bench-ab}
REPS=${REPS:-8}
SIZES=${SIZES:-small large html}
MESSAGES=${MESSAGES:-3000}
CONNS=${CONNS:-8}
SMTP=${BENCH_SMTP:-127.0.0.1:23625}
HTTP=${BENCH_HTTP:-127.0.0.1:29126}
mkdir -p "$OUT"
cp "$1" "$OUT/catchbox-base"
cp "$2" "$OUT/catchbox-new"
$GO build -o "$OUT/catchbox-bench" ./cmd/catchbox-bench
TICK_US=$((1000000 / $(getconf CLK_TCK)))
PID=
SCHEMA=
cleanup() {
	[ -z "$PID" ] || kill "$PID" 2>/dev/null || true
	[ -z "$SCHEMA" ] || psql -q "$BENCH_POSTGRES_URL" -c "DROP SCHEMA $SCHEMA CASCADE" >/dev/null 2>&1 || true
}
trap cleanup EXIT INT TERM

# dburl: sets DBURL to a fresh schema of BENCH_POSTGRES_URL's database (the
# previous one is dropped), or to nothing for SQLite.
DBURL=
dburl() {
	[ -n "${BENCH_POSTGRES_URL:-}" ] || return 0
	[ -z "$SCHEMA" ] || psql -q "$BENCH_POSTGRES_URL" -c "DROP SCHEMA $SCHEMA CASCADE" >/dev/null 2>&1
	SCHEMA=catchbox_ab_$$_$(date +%s%N)
	psql -q "$BENCH_POSTGRES_URL" -c "CREATE SCHEMA $SCHEMA" >/dev/null
	case $BENCH_POSTGRES_URL in *\?*) sep='&' ;; *) sep='?' ;; esac
	DBURL="$BENCH_POSTGRES_URL${sep}search_path=$SCHEMA,public"
}

cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run VARIANT SIZE: one fresh server, one ingest run; prints one result line.
run() {
	rm -rf "$OUT/data"; mkdir -p "$OUT/data"
	dburl
	CATCHBOX_DATABASE_URL=$DBURL CATCHBOX_DATA_DIR=$OUT/data CATCHBOX_API_KEY=benchkey12345 CATCHBOX_SMTP_ADDR=$SMTP CATCHBOX_IMAP_ADDR= CATCHBOX_POP3_ADDR= CATCHBOX_HTTP_ADDR=$HTTP \
		CATCHBOX_SECRET_KEY=bench-secret-key-0123456789 "$OUT/catchbox-$1" serve >>"$OUT/server.log" 2>&1 &
	PID=$!
	i=0
	until curl -fsS -o /dev/null -H "X-Api-Key: benchkey12345" "http://$HTTP/api/test" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 300 ] || { echo "catchbox-$1 did not start; see $OUT/server.log" >&2; exit 1; }
		sleep 0.1
	done
	[ -z "${SETUP:-}" ] || HTTP=$HTTP sh -c "$SETUP" >>"$OUT/server.log" 2>&1
	c0=$(cpu $PID)
	rate=$("$OUT/catchbox-bench" smtp --label "$1" --addr $SMTP --messages "$MESSAGES" --conns "$CONNS" --size "$2" |
		sed -n 's/.*rate=\([0-9.]*\)\/s.*/\1/p')
	c1=$(cpu $PID)
	echo "$1 $2 load=$(cut -d' ' -f1 /proc/loadavg) rate=$rate cpu_us_per_msg=$(( (c1 - c0) * TICK_US / MESSAGES ))"
	kill $PID; wait $PID 2>/dev/null || true; PID=
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg); $MESSAGES messages over $CONNS connections per run"
# The runs are a pipeline's subshell: the last schema is dropped there.
{
	for rep in $(seq 1 "$REPS"); do
		for size in $SIZES; do
			if [ $((rep % 2)) = 1 ]; then run base "$size"; run new "$size"; else run new "$size"; run base "$size"; fi
		done
	done
	cleanup
} | tee "$OUT/runs.txt"

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# pairs: "size rate_ratio cpu_ratio" for each repetition, new / base.
awk '{
	split($4, r, "="); split($5, c, "=")
	k = $2; n = ++count[$1, k]; rate[$1, k, n] = r[2]; cpu[$1, k, n] = c[2]
} END {
	for (key in count) {
		split(key, p, SUBSEP); if (p[1] != "new") continue
		for (i = 1; i <= count["new", p[2]]; i++)
			print p[2], rate["new", p[2], i] / rate["base", p[2], i], cpu["new", p[2], i] / cpu["base", p[2], i]
	}
}' "$OUT/runs.txt" >"$OUT/pairs.txt"
echo "# medians; pairs: new / base within each repetition"
for size in $SIZES; do
	f() { grep "^$1 $size " "$OUT/runs.txt" | sed -n "s/.* $2=\([0-9.]*\).*/\1/p" | median; }
	echo "$size: rate base $(f base rate)/s new $(f new rate)/s, pairs $(grep "^$size " "$OUT/pairs.txt" | cut -d' ' -f2 | median);" \
		"cpu per message base $(f base cpu_us_per_msg) us new $(f new cpu_us_per_msg) us, pairs $(grep "^$size " "$OUT/pairs.txt" | cut -d' ' -f3 | median)"
done
