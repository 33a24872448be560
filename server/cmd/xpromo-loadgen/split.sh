#!/usr/bin/env bash
# `make loadgen-split`: do fills keep their latency while claims run when
# they are served by instances of their own? (docs/operations.md,
# "Instances that only answer"; BENCHMARKS.md, "Fills on instances of their
# own".) PostgreSQL only: LOADGEN_DATABASE_URL (a user that may CREATE
# DATABASE) is required.
#
# Two runs of `xpromo-loadgen -scenario open-fill,open-mixed` (fills at
# LOADGEN_FILL_RATE a second, each timed from when it was due; in
# open-mixed, rounds of claims and sweeps beside them as fast as the server
# lets them; with LOADGEN_READ_RATE, a dashboard's reads at that rate
# beside them, to the instance that answers the claims), each on a fresh
# database:
#
#   shared  one server (--background all) answers everything; nothing is
#           pinned: fills and claims share the cores, as on one instance;
#   split   the server "work" (--background all) answers the setup, clicks,
#           claims and sweeps, pinned to the CPUs LOADGEN_WORK_CPUS; the
#           server "fills" (--background none) answers the fills
#           (-fill-url), pinned with the load generator to LOADGEN_FILL_CPUS
#           (taskset lists; default 1 and 0).
#
# The script does not move PostgreSQL: to give the database the work CPUs
# too (the fills' CPUs then run no claim work at all), pin the cluster's
# processes before the run, as root, and unpin them after:
#   for p in $(pgrep -x postgres); do taskset -p -c 1 "$p"; done    # after: -c 0-1
set -euo pipefail

GO=${GO:-go}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$root"
rate=${LOADGEN_FILL_RATE:-500}
read_rate=${LOADGEN_READ_RATE:-0}
secs=${LOADGEN_SECONDS:-15}
work_cpus=${LOADGEN_WORK_CPUS:-1}
fill_cpus=${LOADGEN_FILL_CPUS:-0}
if [[ -z ${LOADGEN_DATABASE_URL:-} ]]; then
	echo "loadgen-split: set LOADGEN_DATABASE_URL: a --background=none instance needs a database other instances share" >&2
	exit 2
fi
command -v taskset >/dev/null || {
	echo "loadgen-split: taskset (util-linux) is needed to pin the processes" >&2
	exit 2
}

# shellcheck source=../../../scripts/testserver.sh
. "$root/scripts/testserver.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/xpromo-loadgen-split.XXXXXX")
dbs=()
pids=()
cleanup() {
	local status=$?
	stop_all
	for db in "${dbs[@]}"; do
		psql -q "$LOADGEN_DATABASE_URL" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
	done
	rm -rf "$work"
	exit "$status"
}
stop_all() {
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	pids=()
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "building xpromo-server and xpromo-loadgen..."
"$GO" build -o "$work/bin/" ./server/cmd/xpromo-server ./server/cmd/xpromo-loadgen
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')

# fresh_database: creates one, sets database_url. With
# LOADGEN_KEPT_DATABASE (the name of a database on LOADGEN_DATABASE_URL's
# server, such as a year of history kept by `make history`), each run gets
# a copy of it (CREATE DATABASE … TEMPLATE: minutes for a large one), so
# both start from the same store and the kept one is never written: the
# load generator's advertisers must be the only ones of its category.
fresh_database() {
	local name template=""
	name=xpromo_split_$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
	if [[ -n ${LOADGEN_KEPT_DATABASE:-} ]]; then
		template=" TEMPLATE $LOADGEN_KEPT_DATABASE"
	fi
	psql -q -v ON_ERROR_STOP=1 "$LOADGEN_DATABASE_URL" -c "CREATE DATABASE $name$template" >/dev/null
	dbs+=("$name")
	database_url=$(sed -E "s#^(postgres(ql)?://[^/]*)(/[^?]*)?#\1/$name#" <<<"$LOADGEN_DATABASE_URL")
}

# serve NAME CPUS FLAG...: a test-mode server on database_url, pinned to
# CPUS ("" for none); sets addr and appends its pid to pids.
serve() {
	local name=$1 cpus=$2
	shift 2
	mkdir -p "$work/$name"
	local bin=$work/bin/xpromo-server
	if [[ -n $cpus ]]; then
		printf '#!/bin/sh\nexec taskset -c %s %q "$@"\n' "$cpus" "$bin" >"$work/bin/$name.sh"
		chmod +x "$work/bin/$name.sh"
		bin=$work/bin/$name.sh
	fi
	start_test_server "$bin" "$work/$name/server.log" --database-url="$database_url" \
		--rate-read 100000000 --rate-write 100000000 --trusted-proxies 127.0.0.1 --canary-rate 0 "$@"
	pids+=("$server_pid")
}

# loadgen PIN FLAG...: the load generator, under PIN (a taskset prefix or
# nothing).
loadgen() {
	local pin=$1
	shift
	# shellcheck disable=SC2086 # PIN is a command prefix, split on purpose
	XPROMO_ADMIN_TOKEN=$token $pin "$work/bin/xpromo-loadgen" -scenario open-fill,open-mixed -duration "${secs}s" \
		-fill-rate "$rate" -read-rate "$read_rate" -concurrency 8 "$@"
}

echo "== shared: one instance, nothing pinned; load $(cut -d' ' -f1-3 /proc/loadavg)"
fresh_database
serve shared ""
loadgen "" -url "http://$addr"
stop_all

echo "== split: fills on their own instance (CPUs $fill_cpus), the rest on CPUs $work_cpus; load $(cut -d' ' -f1-3 /proc/loadavg)"
fresh_database
serve work "$work_cpus"
work_url=http://$addr
serve fills "$fill_cpus" --background none
loadgen "taskset -c $fill_cpus" -url "$work_url" -fill-url "http://$addr"
stop_all
echo "load after the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
