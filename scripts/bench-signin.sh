#!/bin/sh
# The memory of a burst of dashboard sign-ins (docs/benchmarks.md):
#   scripts/bench-signin.sh [BINARY]      (default: builds ./cmd/catchbox)
# For each concurrency, a fresh server on SQLite, its idle RSS, then
# catchbox-bench signin with that many attempts in flight (ATTEMPTS = 3 x the
# concurrency, each from its own loopback address and for an account of its
# own, so that every attempt is checked against a hash), the server's RSS
# sampled every 50 ms, and its RSS again 3 s after the burst. With SEED=N,
# each server first receives N small messages and answers a substring search
# (which loads the namespace's search copy), so that the burst starts from the
# memory of a server in use; with DATA=DIR each server starts on a copy of that
# data directory instead (made once, e.g. by a SEED run's $OUT/data, so that
# two builds are compared on the same store). The server's CPU time over the
# burst is reported too. Run from the repository root.
#   CONCURRENCY="50 100"  REPS=3  SEED=0  DATA=
set -eu
GO=${GO:-go}
OUT=${BENCH_DIR:-/tmp/catchbox-bench-signin}
CONCURRENCY=${CONCURRENCY:-50 100}
REPS=${REPS:-3}
SEED=${SEED:-0}
DATA=${DATA:-}
SMTP=127.0.0.1:23725
HTTP=127.0.0.1:29226
mkdir -p "$OUT"
if [ $# -ge 1 ]; then cp "$1" "$OUT/catchbox"; else $GO build -o "$OUT/catchbox" ./cmd/catchbox; fi
$GO build -o "$OUT/catchbox-bench" ./cmd/catchbox-bench
PID=
trap '[ -z "$PID" ] || kill "$PID" 2>/dev/null || true' EXIT INT TERM

echo "# $(date -u +%FT%TZ) $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq 1 "$REPS"); do
	for c in $CONCURRENCY; do
		rm -rf "$OUT/data"
		if [ -n "$DATA" ]; then cp -a "$DATA" "$OUT/data"; else mkdir -p "$OUT/data"; fi
		CATCHBOX_DATA_DIR=$OUT/data CATCHBOX_API_KEY=benchkey12345 CATCHBOX_SMTP_ADDR=$SMTP CATCHBOX_HTTP_ADDR=$HTTP \
			CATCHBOX_IMAP_ADDR= CATCHBOX_POP3_ADDR= CATCHBOX_SECRET_KEY=bench-secret-key-0123456789 \
			"$OUT/catchbox" serve >>"$OUT/server.log" 2>&1 &
		PID=$!
		i=0
		until curl -fsS -o /dev/null "http://$HTTP/healthz" 2>/dev/null; do
			i=$((i + 1)); [ $i -lt 300 ] || { echo "catchbox did not start; see $OUT/server.log" >&2; exit 1; }
			sleep 0.1
		done
		if [ "$SEED" -gt 0 ]; then
			"$OUT/catchbox-bench" seed --smtp "$SMTP" --messages "$SEED" --conns 8 >"$OUT/seed.log" 2>&1
		fi
		if [ "$SEED" -gt 0 ] || [ -n "$DATA" ]; then
			curl -fsS -o /dev/null -H "X-Api-Key: benchkey12345" "http://$HTTP/api/emails/default/inbox?subject_includes=zz&limit=1"
		fi
		sleep 1
		echo "rep=$rep seed=$SEED data=${DATA:-fresh} concurrency=$c load=$(cut -d' ' -f1 /proc/loadavg) idle_rss=$(awk '/VmRSS/ {printf "%.1fMiB", $2 / 1024}' /proc/$PID/status)"
		"$OUT/catchbox-bench" signin --api "http://$HTTP" --attempts $((3 * c)) --concurrency "$c" --pid "$PID"
		kill $PID; wait $PID 2>/dev/null || true; PID=
	done
done
