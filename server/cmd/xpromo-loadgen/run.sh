#!/usr/bin/env bash
# `make loadgen`: build xpromo-server and xpromo-loadgen, start a fresh
# test-mode server (a random admin token, a free loopback port, rate limits
# far above the load, X-Forwarded-For trusted from loopback so that each
# simulated device has its own address), run the load scenarios against it,
# stop the server and exit with the load generator's status.
#
# Store: embedded SQLite in a temporary data directory; with
# LOADGEN_DATABASE_URL (a PostgreSQL URL whose user may CREATE DATABASE), a
# fresh database created with psql on that server for the run, dropped after.
# LOADGEN_ARGS are passed to xpromo-loadgen (default: every scenario, 10 s
# each).
set -euo pipefail

GO=${GO:-go}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$root"
args=${LOADGEN_ARGS:--scenario all -duration 10s -concurrency 8}

# shellcheck source=../../../scripts/testserver.sh
. "$root/scripts/testserver.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/xpromo-loadgen.XXXXXX")
db_admin_url=
db_name=
cleanup() {
	local status=$?
	stop_test_server
	if [[ -n $db_name ]]; then
		psql -q "$db_admin_url" -c "DROP DATABASE IF EXISTS $db_name" >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "building xpromo-server and xpromo-loadgen..."
"$GO" build -o "$work/bin/" ./server/cmd/xpromo-server ./server/cmd/xpromo-loadgen

database_url=
store="SQLite in $work/data"
if [[ -n ${LOADGEN_DATABASE_URL:-} ]]; then
	db_admin_url=$LOADGEN_DATABASE_URL
	db_name=xpromo_loadgen_$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
	psql -q -v ON_ERROR_STOP=1 "$db_admin_url" -c "CREATE DATABASE $db_name" >/dev/null
	# The same URL with the new database as its path.
	database_url=$(sed -E "s#^(postgres(ql)?://[^/]*)(/[^?]*)?#\1/$db_name#" <<<"$db_admin_url")
	store="PostgreSQL, fresh database $db_name"
fi

# The token stays in the environment of the two processes (never on a
# command line, where ps would show it).
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')

# The server logs at info, as in production: the access log line of each
# request is part of its cost. Loopback is a trusted proxy so that each
# simulated device can send its own X-Forwarded-For address.
start_test_server "$work/bin/xpromo-server" "$work/server.log" --database-url="$database_url" \
	--rate-read 100000000 --rate-write 100000000 --trusted-proxies 127.0.0.1 \
	--canary-rate 0 # the claim scenario signs a click for every fill: no canaries (docs/apps.md "Canary check")
echo "xpromo-server: test mode, $store, listening on http://$addr"
echo "machine load: $(uptime)"

# LOADGEN_CEILINGS (make loadgen measures them first: xpromo-ceilings -o):
# each throughput is printed as a ratio to its ceiling of the same run.
ceilings=()
if [[ -n ${LOADGEN_CEILINGS:-} ]]; then
	ceilings=(-ceilings "$LOADGEN_CEILINGS")
fi

status=0
# shellcheck disable=SC2086 # LOADGEN_ARGS is a list of flags
XPROMO_ADMIN_TOKEN=$token "$work/bin/xpromo-loadgen" -url "http://$addr" "${ceilings[@]}" $args || status=$?
echo "machine load after the run: $(uptime)"
if ((status != 0)); then
	echo >&2
	echo "--- the server's log (last 40 lines but the access log) ---" >&2
	grep -v 'msg="http request"' "$work/server.log" | tail -n 40 >&2
fi
exit "$status"
