#!/usr/bin/env bash
# `make loadgen-split`: do fills keep their latency while claims run when
# they are served by instances of their own? (docs/operations.md,
# "Instances that only answer"; BENCHMARKS.md, "Fills on instances of their
# own".) PostgreSQL only: LOADGEN_DATABASE_URL (a user that may CREATE
# DATABASE) is required.
#
# Two runs on one fresh database, each with the same two load generators at
# once: a closed-loop claim generator (`-scenario claim`, clicks then their
# install claims, as fast as the server lets them), and, once it runs, an
# open-loop fill generator (`-scenario open-fill` at LOADGEN_FILL_RATE fills
# a second, each timed from when it was due):
#
#   shared  one server (--background all) answers both generators; nothing
#           is pinned: fills and claims share the cores, as on one instance;
#   split   the server "work" (--background all) and the claim generator run
#           on the CPUs LOADGEN_WORK_CPUS, the server "fills"
#           (--background none) and the fill generator on LOADGEN_FILL_CPUS
#           (taskset lists, default 1 and 0).
#
# The script does not move PostgreSQL itself: to give the database the work
# CPUs too (the fills' instance then shares its CPUs with no claim work at
# all), pin the cluster's processes before the run, as root, and unpin them
# after:
#   for p in $(pgrep -x postgres); do taskset -p -c 1 "$p"; done    # then -c 0-1
set -euo pipefail

GO=${GO:-go}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$root"
rate=${LOADGEN_FILL_RATE:-500}
fill_secs=${LOADGEN_FILL_SECONDS:-20}
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
db_name=xpromo_split_$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
pids=()
cleanup() {
	local status=$?
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	psql -q "$LOADGEN_DATABASE_URL" -c "DROP DATABASE IF EXISTS $db_name WITH (FORCE)" >/dev/null 2>&1 || true
	rm -rf "$work"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "building xpromo-server and xpromo-loadgen..."
"$GO" build -o "$work/bin/" ./server/cmd/xpromo-server ./server/cmd/xpromo-loadgen
psql -q -v ON_ERROR_STOP=1 "$LOADGEN_DATABASE_URL" -c "CREATE DATABASE $db_name" >/dev/null
database_url=$(sed -E "s#^(postgres(ql)?://[^/]*)(/[^?]*)?#\1/$db_name#" <<<"$LOADGEN_DATABASE_URL")
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')

# serve NAME CPUS FLAG...: a test-mode server pinned to CPUS ("" for none);
# sets addr and appends its pid to pids.
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

# run MODE CLAIMS_URL FILLS_URL WORK_PIN FILL_PIN: the two generators,
# the fills started once the claims run; prints both reports.
run() {
	local mode=$1 claims_url=$2 fills_url=$3 work_pin=$4 fill_pin=$5
	local claims_log=$work/$mode-claims.log fills_log=$work/$mode-fills.log
	echo "== $mode: machine load $(cut -d' ' -f1-3 /proc/loadavg)"
	XPROMO_ADMIN_TOKEN=$token $work_pin "$work/bin/xpromo-loadgen" -url "$claims_url" -scenario claim \
		-duration "$((fill_secs * 3 + 30))s" -concurrency 8 >"$claims_log" 2>&1 &
	local claims=$!
	for _ in $(seq 1 600); do
		grep -q 'claim for' "$claims_log" && break
		kill -0 "$claims" 2>/dev/null || break
		sleep 0.2
	done
	XPROMO_ADMIN_TOKEN=$token $fill_pin "$work/bin/xpromo-loadgen" -url "$fills_url" -scenario open-fill \
		-fill-rate "$rate" -publishers "$(((${rate%.*} + 99) / 100 + 2))" -duration "${fill_secs}s" -concurrency 8 >"$fills_log" 2>&1 ||
		{ cat "$fills_log" >&2; return 1; }
	local fills_done
	fills_done=$(date +%s)
	wait "$claims" || { cat "$claims_log" >&2; return 1; }
	echo "-- fills ($fills_url), done at $fills_done:"
	cat "$fills_log"
	echo "-- claims ($claims_url), done at $(date +%s):"
	cat "$claims_log"
}

serve shared ""
shared=http://$addr
run shared "$shared" "$shared" "" ""
kill -TERM "${pids[0]}"
wait "${pids[0]}" 2>/dev/null || true
pids=()

serve work "$work_cpus"
work_url=http://$addr
serve fills "$fill_cpus" --background none
fills_url=http://$addr
run split "$work_url" "$fills_url" "taskset -c $work_cpus" "taskset -c $fill_cpus"
echo "machine load after the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
