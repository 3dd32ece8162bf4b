#!/bin/sh
# Checks a Catchbox container image without running a container: its
# configuration (non-root user, data volume, both ports, entrypoint), that its
# binary is static, and that the binary started from the image's exported
# filesystem serves: /readyz answers, mail is taken over SMTP and found over HTTP,
# and its version is the image's.
#
#   scripts/test-image.sh catchbox:TAG      (make test-image builds and runs it)
set -eu
image=${1:?usage: test-image.sh IMAGE}
tool=${IMAGE_TOOL:-podman}
work=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null || true
	[ -n "${ctr:-}" ] && $tool rm "$ctr" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "test-image: $*" >&2; exit 1; }

cfg=$($tool image inspect --format '{{.Config.User}}|{{json .Config.ExposedPorts}}|{{json .Config.Volumes}}|{{json .Config.Entrypoint}}|{{json .Config.Env}}' "$image")
echo "image config: $cfg"
case $cfg in 65532:65532\|*) ;; *) fail "the image does not run as user 65532" ;; esac
for want in '"8025/tcp"' '"2525/tcp"' '"1143/tcp"' '"1110/tcp"' '"/data"' '["/catchbox"]' 'CATCHBOX_DATA_DIR=/data' 'CATCHBOX_HTTP_ADDR=0.0.0.0:8025' 'CATCHBOX_SMTP_ADDR=0.0.0.0:2525' 'CATCHBOX_IMAP_ADDR=0.0.0.0:1143' 'CATCHBOX_POP3_ADDR=0.0.0.0:1110'; do
	case $cfg in *"$want"*) ;; *) fail "the image config lacks $want" ;; esac
done

ctr=$($tool create "$image")
mkdir "$work/root"
$tool export "$ctr" | tar -x -C "$work/root"
ls -ln "$work/root" "$work/root/data"
[ "$(stat -c %u "$work/root/data")" = 65532 ] || fail "/data is not owned by 65532"
[ "$(stat -c %u "$work/root/tmp")" = 65532 ] || fail "/tmp is not writable by 65532"
# A static binary has no program interpreter (no dynamic loader, no libc).
if readelf -l "$work/root/catchbox" | grep -q 'Requesting program interpreter'; then fail "/catchbox is not static"; fi
[ -s "$work/root/etc/ssl/certs/ca-certificates.crt" ] || fail "no CA certificates"

# Start the image's binary as the image would (its env, its user, its root
# when chroot is allowed), on free loopback ports.
http=127.0.0.1:18925 smtp=127.0.0.1:12925
env="CATCHBOX_DATA_DIR=/data CATCHBOX_HTTP_ADDR=$http CATCHBOX_SMTP_ADDR=$smtp CATCHBOX_IMAP_ADDR=127.0.0.1:0 CATCHBOX_POP3_ADDR=127.0.0.1:0 CATCHBOX_API_KEY=cbx_image_test_key"
chroot=$(command -v chroot || echo /usr/sbin/chroot)
if "$chroot" --userspec=65532:65532 "$work/root" /catchbox version >/dev/null 2>&1; then
	echo "starting /catchbox serve in a chroot of the exported filesystem, as 65532"
	env -i $env "$chroot" --userspec=65532:65532 "$work/root" /catchbox serve >"$work/out" 2>"$work/log" &
else
	echo "chroot refused here: starting the exported /catchbox with its data dir in the export"
	env -i $env CATCHBOX_DATA_DIR="$work/root/data" "$work/root/catchbox" serve >"$work/out" 2>"$work/log" &
fi
pid=$!
i=0
until curl -fsS "http://$http/readyz" >/dev/null 2>&1; do
	i=$((i + 1)); [ $i -lt 300 ] || { cat "$work/log"; fail "not ready"; }
	kill -0 $pid 2>/dev/null || { cat "$work/log"; fail "the server exited"; }
	sleep 0.1
done
curl -fsS "http://$http/api/version"; echo
python3 -c 'import smtplib, sys
h, p = sys.argv[1].split(":")
with smtplib.SMTP(h, int(p), timeout=30) as c:
    c.sendmail("a@example.org", ["x@default.localhost"], "Subject: from the image\r\n\r\nhello\r\n")' "$smtp"
curl -fsS -H 'X-Api-Key: cbx_image_test_key' "http://$http/api/emails/default/inbox?subject_includes=from%20the%20image&wait=true" |
	grep -q '"subject":"from the image"' || { cat "$work/log"; fail "the message was not found"; }
kill -TERM $pid
wait $pid || fail "serve did not exit 0 on SIGTERM"
pid=
[ -s "$work/root/data/catchbox.db" ] || fail "no store in /data"
echo "test-image: ok ($image)"
