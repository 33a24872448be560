#!/usr/bin/env bash
# `make demo`: build xpromo-server and examples/desktop-app, start a fresh
# server (embedded SQLite in a temporary data directory, test mode, a random
# admin token, a free loopback port), play the desktop-app story against it,
# stop the server and exit with the story's status. Needs only Go.
set -euo pipefail

GO=${GO:-go}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

# shellcheck source=../../scripts/testserver.sh
. "$root/scripts/testserver.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/xpromo-demo.XXXXXX")
cleanup() {
	local status=$?
	stop_test_server
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
start_test_server "$work/bin/xpromo-server" "$work/server.log" --rate-read 600 --rate-write 60
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
