#!/usr/bin/env bash
# A newcomer's first minutes, timed: git clone, make run (build and first
# start), one mail over SMTP to an address that names no namespace, and the
# mail seen through the API (with the key make run printed) and on the
# dashboard (the sign-in link make run printed, followed by curl, then the
# inbox page). Prints the seconds each step took, from the start of the clone.
#
#   scripts/bench-newcomer.sh REPO [warm|cold]
#
# REPO is what git clone is given (a local path is fine). cold gives the build
# an empty GOCACHE and GOMODCACHE, so every module comes from GOPROXY and
# every package is compiled; warm uses the machine's caches. make run listens
# on CATCHBOX_HTTP_ADDR, CATCHBOX_SMTP_ADDR, CATCHBOX_IMAP_ADDR and
# CATCHBOX_POP3_ADDR when set (default here 127.0.0.1:18925, :12925, :11143
# and :11110: others' servers may hold the defaults); all are on loopback, so it starts in local mode as make run does.
set -euo pipefail
repo=${1:?usage: bench-newcomer.sh REPO [warm|cold]}
cache=${2:-warm}
http=${CATCHBOX_HTTP_ADDR:-127.0.0.1:18925}
smtp=${CATCHBOX_SMTP_ADDR:-127.0.0.1:12925}
imap=${CATCHBOX_IMAP_ADDR:-127.0.0.1:11143}
pop3=${CATCHBOX_POP3_ADDR:-127.0.0.1:11110}
work=$(mktemp -d /tmp/catchbox-newcomer-XXXXXX)
if [ "$cache" = cold ]; then
  export GOCACHE=$work/gocache GOMODCACHE=$work/gomodcache
fi
now() { date +%s.%N; }
step() { printf '%-34s %7.2f s\n' "$1" "$(echo "$(now) - $t0" | bc)"; }
cleanup() { # make run and the server it started: their own process group
  if [ -n "${pid:-}" ]; then kill -- "-$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; fi
  chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"
}
trap cleanup EXIT

t0=$(now)
git clone -q "$repo" "$work/catchbox"
step "git clone"
cd "$work/catchbox"
CATCHBOX_HTTP_ADDR=$http CATCHBOX_SMTP_ADDR=$smtp CATCHBOX_IMAP_ADDR=$imap CATCHBOX_POP3_ADDR=$pop3 setsid make run >"$work/out" 2>"$work/log" &
pid=$!
until grep -q '^export CATCHBOX_API_KEY=' "$work/out" 2>/dev/null; do
  kill -0 "$pid" 2>/dev/null || { cat "$work/out" "$work/log"; exit 1; }
  sleep 0.05
done
step "make run: ready, key printed"
eval "$(grep '^export CATCHBOX_API_KEY=' "$work/out")"
link=$(grep -o 'http://[^ ]*/signin/link/[^ ]*' "$work/out")

printf 'From: app@example.org\r\nTo: someone@example.com\r\nSubject: First mail\r\n\r\nHello\r\n' |
  curl -fsS "smtp://$smtp" --mail-from app@example.org --mail-rcpt someone@example.com -T -
step "mail sent to someone@example.com"
subject=$(curl -fsS -H "X-Api-Key: $CATCHBOX_API_KEY" "http://$http/api/emails/default/latest" | jq -r .data.subject)
[ "$subject" = "First mail" ]
step "seen through the API"
curl -fsS -c "$work/cookies" -b "$work/cookies" -L "$link" | grep -q 'First mail'
step "seen on the dashboard (link)"
