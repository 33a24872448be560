# shellcheck shell=bash
# Sourced by scripts that play against a fresh test-mode xpromo-server on
# this machine (`make demo`, `make loadgen`). It defines:
#
#   start_test_server BINARY LOG [FLAG...]
#       starts BINARY serve in test mode on a free loopback port (port 0),
#       with its data directory beside LOG, XPROMO_ADMIN_TOKEN from the
#       caller's $token, and every setting the caller's environment could
#       change given as a flag (flags win over the environment: a DATABASE_URL
#       or XPROMO_LOG_LEVEL of the caller's shell must not redirect or silence
#       the server). FLAGs come last, so they override the defaults. Sets
#       server_pid and addr (host:port, read from the "listening" log line);
#       on failure prints the log and returns 1.
#   stop_test_server
#       stops the server started above, if it still runs (for EXIT traps).

server_pid=
addr=

start_test_server() {
	local bin=$1 log=$2
	shift 2
	# Created here, not by the background job's redirection: the wait loop
	# below may read it before the job has opened it.
	: >"$log"
	XPROMO_ADMIN_TOKEN=$token "$bin" serve \
		--addr 127.0.0.1:0 --mode test --data-dir "$(dirname "$log")/data" --database-url= \
		--base-url= --redis-url= --categories-file= \
		--log-format text --log-level info "$@" >"$log" 2>&1 &
	server_pid=$!

	addr=
	local _
	for _ in $(seq 1 300); do
		addr=$(sed -n 's/.* msg=listening addr=\([^ ]*\) .*/\1/p' "$log")
		if [[ -n $addr ]] || ! kill -0 "$server_pid" 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	if [[ -z $addr ]]; then
		echo "xpromo-server did not start:" >&2
		cat "$log" >&2
		return 1
	fi
}

stop_test_server() {
	if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
}
