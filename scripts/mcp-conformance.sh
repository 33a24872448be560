#!/usr/bin/env bash
# Runs the official MCP conformance suite (npm @modelcontextprotocol/conformance)
# and the MCP Inspector CLI (npm @modelcontextprotocol/inspector) against a
# freshly built xpromo-server (/mcp over Streamable HTTP) and xpromo-mcp (stdio).
# Needs Node.js 22 or newer (NODE=/path/to/node) and npm; not part of `make test`
# (the Go tests cover the same behaviours without Node). See docs/mcp.md.
set -euo pipefail

NODE=${NODE:-node}
PREFIX=${MCP_CONFORMANCE_PREFIX:-${TMPDIR:-/tmp}/xpromo-mcp-conformance}
PORT=${PORT:-18181}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'kill "${server_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT

if [[ ! -d $PREFIX/node_modules/@modelcontextprotocol/conformance ]]; then
	npm install --prefix "$PREFIX" @modelcontextprotocol/conformance @modelcontextprotocol/inspector >/dev/null
fi
conformance=$PREFIX/node_modules/@modelcontextprotocol/conformance/dist/index.js
inspector=$PREFIX/node_modules/@modelcontextprotocol/inspector-cli/build/index.js

go build -C "$root" -o "$work/xpromo-server" ./server/cmd/xpromo-server
go build -C "$root" -o "$work/xpromo-mcp" ./mcpserver/cmd/xpromo-mcp
"$work/xpromo-server" --addr "127.0.0.1:$PORT" --data-dir "$work/data" --rate-read 100000 --rate-write 100000 >"$work/server.log" 2>&1 &
server_pid=$!
base=http://127.0.0.1:$PORT
for _ in $(seq 50); do curl -fs "$base/v1/rate-card" >/dev/null && break; sleep 0.2; done

echo "== conformance server --url $base/mcp"
"$NODE" "$conformance" server --url "$base/mcp" -o "$work/results" >"$work/conformance.txt" 2>&1 || true
sed -n '/SUMMARY/,$p' "$work/conformance.txt"
# The scenarios that apply to a server like this one (docs/mcp.md lists why
# the others need the suite's own test tools, resources and prompts).
failed=0
for s in server-initialize ping tools-list logging-set-level completion-complete resources-list \
	resources-subscribe resources-unsubscribe prompts-list dns-rebinding-protection server-sse-multiple-streams; do
	grep -q "✓ $s:" "$work/conformance.txt" || { echo "FAIL: applicable scenario $s"; failed=1; }
done

# An app and its key, for the private tools over stdio.
reg=$(curl -fs -X POST "$base/v1/apps" -H 'Content-Type: application/json' \
	-d '{"name":"Inspector","platform":"mac","bundle_id":"com.example.inspector","domain":"example.com","download_url":"https://example.com/i.dmg","contact_email":"i@example.com"}')
app=$(sed -E 's/.*"app_id":"([^"]+)".*/\1/' <<<"$reg")
key=$(sed -E 's/.*"api_key":"([^"]+)".*/\1/' <<<"$reg")
printf '#!/bin/sh\nexport XPROMO_BASE_URL=%s XPROMO_API_KEY=%s\nexec %s\n' "$base" "$key" "$work/xpromo-mcp" >"$work/stdio.sh"
chmod +x "$work/stdio.sh"

# One line per call: transport, tool, and the answer (ok, or the error code).
call() {
	local target=$1 tool=$2
	shift 2
	local out
	out=$("$NODE" "$inspector" "$target" --method tools/call --tool-name "$tool" ${1:+--tool-arg "$@"} 2>&1) || true
	if grep -q '"isError": true' <<<"$out"; then
		echo "  $tool $*: error $(grep -o 'code\\":\\"[a-z_]*' <<<"$out" | head -1 | sed 's/.*"//')"
	elif grep -q '"structuredContent"' <<<"$out"; then
		echo "  $tool $*: ok"
	else
		echo "  $tool $*: FAILED: $(head -c 300 <<<"$out")"
		failed=1
	fi
}
for target in "$base/mcp" "$work/stdio.sh"; do
	echo "== inspector --cli $target"
	n=$("$NODE" "$inspector" "$target" --method tools/list |
		"$NODE" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).tools.map(t=>t.name).join(" ")))')
	echo "  tools/list: $n"
	call "$target" get_rate_card
	call "$target" get_network_stats
	call "$target" get_integration_guide
	call "$target" register_app name=Demo platform=linux bundle_id=com.example.demo domain=example.com download_url=https://example.com/d.dmg contact_email=d@example.com
	call "$target" get_score app_id="$app"
	call "$target" top_up app_id="$app" amount_cents=4999
	call "$target" top_up app_id="$app" amount_cents=5000
	call "$target" create_campaign app_id="$app" 'categories=["productivity"]' daily_budget_cents=10
	call "$target" create_campaign app_id="$app" 'categories=["knitting"]' daily_budget_cents=2000
	call "$target" create_campaign app_id="$app" 'categories=["productivity"]' daily_budget_cents=2000
	call "$target" pause_campaign campaign_id=cmp_missing
	call "$target" resume_campaign campaign_id=cmp_missing
	call "$target" get_ledger app_id="$app" limit=0
	call "$target" get_ledger app_id="$app"
	call "$target" get_stats app_id="$app" period=forever
	call "$target" get_stats app_id="$app"
	call "$target" request_payout app_id="$app"
done
exit $failed
