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

work=$(mktemp -d "${TMPDIR:-/tmp}/xpromo-loadgen.XXXXXX")
server_pid=
db_admin_url=
db_name=
cleanup() {
	local status=$?
	if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
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

# Created here, not by the background job's redirection: the wait loop
# below may read it before the job has opened it (as in demo.sh).
: >"$work/server.log"

# Every setting the environment could change is given as a flag (flags win
# over the environment). Port 0: the system picks a free one.
XPROMO_ADMIN_TOKEN=$token "$work/bin/xpromo-server" serve \
	--addr 127.0.0.1:0 --mode test --data-dir "$work/data" --database-url="$database_url" \
	--base-url= --redis-url= --categories-file= \
	--rate-read 100000000 --rate-write 100000000 --trusted-proxies 127.0.0.1 \
	--log-format text --log-level info >"$work/server.log" 2>&1 &
server_pid=$!

# The server logs at info, as in production: the access log line of each
# request is part of its cost. The "listening" line gives the port.
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
echo "xpromo-server: test mode, $store, listening on http://$addr"
echo "machine load: $(uptime)"

status=0
# shellcheck disable=SC2086 # LOADGEN_ARGS is a list of flags
XPROMO_ADMIN_TOKEN=$token "$work/bin/xpromo-loadgen" -url "http://$addr" $args || status=$?
if ((status != 0)); then
	echo >&2
	echo "--- the server's log (last 40 lines but the access log) ---" >&2
	grep -v 'msg="http request"' "$work/server.log" | tail -n 40 >&2
fi
exit "$status"
