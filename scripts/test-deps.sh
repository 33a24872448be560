#!/usr/bin/env bash
# test-deps.sh: installs, when missing, the Debian tools `make test` drives
# beyond Go, PostgreSQL and Redis (it runs first in `make test`, in the C ABI
# targets, and in .ci/run):
#   - the C ABI (make capi-test, make capi-windows): gcc and g++ with
#     LeakSanitizer, mingw-w64 (x86_64) for the Windows DLL, Mono's C#
#     compiler and runtime for the C# test;
#   - the vetting gate's check libraries: osslsigncode signs the Authenticode
#     fixtures (server/gate/codesign); wixl builds a real MSI and msiinfo reads
#     one (server/gate/pkgread); clamd is the scanner server/gate/clamav's
#     tests start with a local EICAR signature database (no freshclam);
#   - Node.js and the official x402 TypeScript client (npm ci in tools/x402ts,
#     versions pinned by its package-lock.json), which pays the server's x402
#     challenge in server/httpapi's TestX402OfficialTypeScriptClient, and
#     solcjs (npm ci in tools/devchain/token), with which server/x402's tests
#     check that the devchain's committed DevUSDC bytecode is its source's.
# On Debian as root it runs apt-get (quietly, and only when something is
# missing); elsewhere it says what to install and fails.
set -euo pipefail
export PATH="$PATH:/usr/sbin"

# stripe-mock, Stripe's API simulator the Stripe provider's tests start on a
# loopback port (server/payments/stripe/stripetest): a Go program, installed
# with go install (through the module proxy) when missing.
if ! command -v stripe-mock >/dev/null && [[ ! -x "$(go env GOPATH)/bin/stripe-mock" ]]; then
	go install github.com/stripe/stripe-mock@v0.203.0
fi

declare -A need=(
	[gcc]=gcc
	[g++]=g++
	[x86_64-w64-mingw32-gcc]="gcc-mingw-w64-x86-64-posix binutils-mingw-w64-x86-64"
	[mcs]=mono-mcs
	[mono]=mono-runtime
	[osslsigncode]=osslsigncode
	[wixl]=wixl
	[msiinfo]=msitools
	[clamd]=clamav-daemon
	[node]=nodejs
	[npm]=npm
	# .dmg (server/gate/udif, hfsplus, pkgread, codesign): xorrisofs writes an
	# HFS+ volume; 7zz, dmg2img and sleuthkit's fls read the fixtures back.
	[xorrisofs]=xorriso
	[7zz]=7zip
	[dmg2img]=dmg2img
	[fls]=sleuthkit
	[chromium]=chromium # the dashboard's browser tests (server/internal/browsertest)
)
# The failover test (make failovertest, server/failovertest): a 3-node
# Patroni cluster with etcd and haproxy on loopback; ip for the partition.
need[patroni]=patroni
need[etcd]=etcd-server
need[haproxy]=haproxy
need[ip]=iproute2
missing=()
for cmd in "${!need[@]}"; do
	command -v "$cmd" >/dev/null || missing+=(${need[$cmd]})
done
# LeakSanitizer's runtime, which gcc links for -fsanitize=leak.
if command -v gcc >/dev/null && ! gcc -print-file-name=liblsan.so | grep -q /; then
	missing+=(liblsan0)
fi
if ((${#missing[@]})); then
	if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
		echo "test-deps: missing ${missing[*]} (Debian packages); install them, e.g." >&2
		echo "  sudo apt-get install --no-install-recommends ${missing[*]}" >&2
		exit 1
	fi
	echo "test-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
fi

root="$(cd "$(dirname "$0")/.." && pwd)"
if [[ ! -d $root/tools/x402ts/node_modules/x402-fetch ]]; then
	echo "test-deps: installing the x402 TypeScript client (npm ci in tools/x402ts)"
	npm ci --prefix "$root/tools/x402ts" --no-audit --no-fund --loglevel=error >/dev/null
fi
if [[ ! -d $root/tools/devchain/token/node_modules/solc ]]; then
	echo "test-deps: installing solcjs (npm ci in tools/devchain/token)"
	npm ci --prefix "$root/tools/devchain/token" --no-audit --no-fund --loglevel=error >/dev/null
fi
