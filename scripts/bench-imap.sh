#!/bin/sh
# The IMAP and POP3 runs of docs/benchmarks.md: SMTP 250 to IDLE EXISTS with
# one and with 1,000 idle clients, and reading 1,000 messages over IMAP and
# POP3, beside Mailpit's POP3 on the same generated messages.
# Run from the repository root.
#   IDLE_ROUNDS=200        messages for the one-client IDLE run
#   IDLE_CLIENTS=1000      clients of the fan-out run, which sends IDLE_FANOUT_ROUNDS (default 50)
#   FETCH_MESSAGES=1000    messages read over IMAP and POP3
#   MAILPIT_BIN            the peer's binary (scripts/bench-peer-mailpit.sh); without one its run is skipped
set -eu
GO=${GO:-go}
OUT=${BENCH_DIR:-/tmp/catchbox-bench-imap}
IDLE_ROUNDS=${IDLE_ROUNDS:-200}
IDLE_CLIENTS=${IDLE_CLIENTS:-1000}
IDLE_FANOUT_ROUNDS=${IDLE_FANOUT_ROUNDS:-50}
FETCH_MESSAGES=${FETCH_MESSAGES:-1000}
KEY=benchkey12345
SMTP=127.0.0.1:22625 HTTP=127.0.0.1:28126 IMAP=127.0.0.1:21243 POP3=127.0.0.1:21210
rm -rf "$OUT"
mkdir -p "$OUT"
$GO build -o "$OUT/catchbox" ./cmd/catchbox
$GO build -o "$OUT/catchbox-bench" ./cmd/catchbox-bench
B=$OUT/catchbox-bench
CB_PID=
cleanup() {
	[ -z "$CB_PID" ] || { kill "$CB_PID"; wait "$CB_PID" 2>/dev/null || true; }
	scripts/bench-peer-mailpit.sh stop >/dev/null 2>&1 || true
}
trap cleanup EXIT INT TERM

# The connection caps are raised for the 1,000 clients of one address.
CATCHBOX_DATA_DIR=$OUT/data CATCHBOX_API_KEY=$KEY CATCHBOX_SMTP_ADDR=$SMTP CATCHBOX_HTTP_ADDR=$HTTP \
	CATCHBOX_IMAP_ADDR=$IMAP CATCHBOX_POP3_ADDR=$POP3 CATCHBOX_SECRET_KEY=bench-secret-key-0123456789 \
	CATCHBOX_SMTP_MAX_CONNECTIONS_PER_IP=5000 CATCHBOX_IMAP_MAX_CONNECTIONS=5000 CATCHBOX_ACCESS_LOG=false \
	"$OUT/catchbox" serve >>"$OUT/catchbox.log" 2>&1 &
CB_PID=$!
i=0
until curl -fsS -o /dev/null -H "X-Api-Key: $KEY" "http://$HTTP/api/test" 2>/dev/null; do
	i=$((i + 1)); [ $i -lt 300 ] || { cat "$OUT/catchbox.log"; exit 1; }
	sleep 0.1
done
pass() { curl -fsS -H "X-Api-Key: $KEY" "http://$HTTP/api/smtp/$1" | sed 's/.*"password":"\([^"]*\)".*/\1/'; }
for ns in idle fetch; do
	curl -fsS -o /dev/null -X POST -H "X-Api-Key: $KEY" -H 'Content-Type: application/json' -d '{}' "http://$HTTP/api/namespace/$ns/settings"
done

echo "## IDLE: SMTP 250 to EXISTS, one client"
$B imap-idle --imap $IMAP --smtp $SMTP --user idle --pass "$(pass idle)" --clients 1 --rounds "$IDLE_ROUNDS"
echo "## IDLE: SMTP 250 to EXISTS, $IDLE_CLIENTS clients of one namespace"
$B imap-idle --imap $IMAP --smtp $SMTP --user idle --pass "$(pass idle)" --clients "$IDLE_CLIENTS" --rounds "$IDLE_FANOUT_ROUNDS"

echo "## $FETCH_MESSAGES small messages read back, three times each"
$B smtp --addr $SMTP --messages "$FETCH_MESSAGES" --conns 8 --to reader@fetch.localhost --label catchbox
for rep in 1 2 3; do
	$B imap-fetch --imap $IMAP --user fetch --pass "$(pass fetch)" --pid $CB_PID
	$B pop3-fetch --pop3 $POP3 --user fetch --pass "$(pass fetch)" --pid $CB_PID
done
# Mailpit's POP3 lists only its newest 100 messages: the like-for-like run
# reads 100 messages in each of ten sessions from both.
echo "## 100 messages a session, ten sessions"
for rep in 1 2 3; do
	$B pop3-fetch --pop3 $POP3 --user fetch --pass "$(pass fetch)" --max 100 --repeat 10 --pid $CB_PID
done

if [ -x "${MAILPIT_BIN:-/tmp/mailpit}" ]; then
	eval "$(MAILPIT_POP3=127.0.0.1:21310 scripts/bench-peer-mailpit.sh start)"
	$B smtp --addr "$MAILPIT_SMTP" --messages "$FETCH_MESSAGES" --conns 8 --to reader@fetch.localhost --label mailpit
	for rep in 1 2 3; do
		$B pop3-fetch --pop3 127.0.0.1:21310 --user bench --pass bench-pass --pid "$MAILPIT_PID"
		$B pop3-fetch --pop3 127.0.0.1:21310 --user bench --pass bench-pass --max 100 --repeat 10 --pid "$MAILPIT_PID"
	done
else
	echo "# no Mailpit binary: its POP3 run is skipped (see scripts/bench-peer-mailpit.sh)"
fi
