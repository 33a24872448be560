#!/usr/bin/env bash
# `make demo`: build xpromo-server, examples/desktop-app and
# examples/webhook-receiver, start a fresh server (embedded SQLite in a
# temporary data directory, test mode, a random admin token, a free loopback
# port, webhook endpoints on loopback allowed) and the receiver beside it,
# play the desktop-app story against them (both apps register a webhook
# endpoint at the receiver; each step waits for its webhooks), print what
# the receiver verified, stop both and exit with the story's status. Needs
# only Go.
set -euo pipefail

GO=${GO:-go}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

# shellcheck source=../../scripts/testserver.sh
. "$root/scripts/testserver.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/xpromo-demo.XXXXXX")
receiver_pid=
cleanup() {
	local status=$?
	stop_test_server
	if [[ -n $receiver_pid ]] && kill -0 "$receiver_pid" 2>/dev/null; then
		kill -TERM "$receiver_pid" 2>/dev/null || true
		wait "$receiver_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "building xpromo-server, examples/desktop-app and examples/webhook-receiver..."
"$GO" build -o "$work/bin/" ./server/cmd/xpromo-server ./examples/desktop-app ./examples/webhook-receiver

# The receiver first, on a free loopback port: it verifies each delivery
# with the secrets the story appends to its secrets file (one per endpoint)
# and prints the verified events to receiver.out.
: >"$work/receiver.out"
(umask 077 && : >"$work/secrets")
"$work/bin/webhook-receiver" -addr 127.0.0.1:0 -secrets-file "$work/secrets" >"$work/receiver.out" 2>"$work/receiver.log" &
receiver_pid=$!
receiver=
for _ in $(seq 1 100); do
	receiver=$(sed -n 's|.*listening on \(http://[^ ]*\).*|\1|p' "$work/receiver.log")
	if [[ -n $receiver ]] || ! kill -0 "$receiver_pid" 2>/dev/null; then
		break
	fi
	sleep 0.1
done
if [[ -z $receiver ]]; then
	echo "webhook-receiver did not start:" >&2
	cat "$work/receiver.log" >&2
	exit 1
fi

# The token stays in the environment of the two processes (never on a
# command line, where ps would show it).
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
# No canaries: the story's one fill must be the campaign's (the SDK shows a
# canary's slot as no fill; docs/apps.md "Canary check").
start_test_server "$work/bin/xpromo-server" "$work/server.log" --rate-read 600 --rate-write 60 --webhooks-allow-loopback true --canary-rate 0
echo "xpromo-server: test mode, SQLite in $work/data, listening on http://$addr"
echo "webhook-receiver: listening on $receiver"
echo

status=0
XPROMO_BASE_URL="http://$addr" XPROMO_ADMIN_TOKEN=$token "$work/bin/desktop-app" --wait 30s \
	--webhook-url "$receiver/webhooks" --webhook-secrets-file "$work/secrets" --webhook-log "$work/receiver.out" || status=$?
echo
echo "(webhook-receiver printed $(wc -l <"$work/receiver.out") verified events, one line each: the webhook-id, then the event as sent)"
if ((status != 0)); then
	echo >&2
	echo "--- the server's log (last 40 lines) ---" >&2
	tail -n 40 "$work/server.log" >&2
	echo "--- the receiver's log ---" >&2
	cat "$work/receiver.log" >&2
fi
exit "$status"
