#!/usr/bin/env bash
# `make demo`: build xpromo-server and examples/desktop-app, start a fresh
# server (embedded SQLite in a temporary data directory, test mode, a random
# admin token, a free loopback port), play the desktop-app story against it,
# stop the server and exit with the story's status. Needs only Go.
set -euo pipefail

GO=${GO:-go}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

work=$(mktemp -d "${TMPDIR:-/tmp}/xpromo-demo.XXXXXX")
server_pid=
cleanup() {
	local status=$?
	if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "building xpromo-server and examples/desktop-app..."
"$GO" build -o "$work/bin/" ./server/cmd/xpromo-server ./examples/desktop-app

# The token stays in the environment of the two processes (never on a
# command line, where ps would show it).
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')

# Every setting the environment could change is given as a flag (flags win
# over the environment): a DATABASE_URL or XPROMO_LOG_LEVEL of the caller's
# shell must not point the demo at another database or hide the line that
# says where the server listens. Port 0: the system picks a free one.
# Created here, not by the background job's redirection: the loop below may
# read it before the job has opened it.
: >"$work/server.log"
XPROMO_ADMIN_TOKEN=$token "$work/bin/xpromo-server" serve \
	--addr 127.0.0.1:0 --mode test --data-dir "$work/data" --database-url= \
	--base-url= --redis-url= --categories-file= --rate-read 600 --rate-write 60 \
	--log-format text --log-level info >"$work/server.log" 2>&1 &
server_pid=$!

addr=
for _ in $(seq 1 300); do
	addr=$(sed -n 's/.* msg=listening addr=\([^ ]*\) .*/\1/p' "$work/server.log")
	if [[ -n $addr ]] || ! kill -0 "$server_pid" 2>/dev/null; then
		break
	fi
	sleep 0.1
done
if [[ -z $addr ]]; then
	echo "xpromo-server did not start:" >&2
	cat "$work/server.log" >&2
	exit 1
fi
echo "xpromo-server: test mode, SQLite in $work/data, listening on http://$addr"
echo

status=0
XPROMO_BASE_URL="http://$addr" XPROMO_ADMIN_TOKEN=$token "$work/bin/desktop-app" --wait 30s || status=$?
if ((status != 0)); then
	echo >&2
	echo "--- the server's log (last 40 lines) ---" >&2
	tail -n 40 "$work/server.log" >&2
fi
exit "$status"
