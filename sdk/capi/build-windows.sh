#!/usr/bin/env bash
# build-windows.sh OUT: cross-builds the C ABI for windows/amd64 with
# Debian's mingw-w64 (`make capi-windows`): OUT/xpromo.dll, its import
# library OUT/xpromo.lib (GNU ld's --out-implib, which MSVC's link.exe and
# mingw both take) and OUT/xpromo.h. Then it checks the header against the
# DLL's exports and links app.c through the import library, as a Windows
# C or C++ app would.
set -euo pipefail

out=${1:?usage: build-windows.sh OUT}
GO=${GO:-go}
CC=${CC_WINDOWS:-x86_64-w64-mingw32-gcc}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
mkdir -p "$out"
out=$(cd "$out" && pwd)

CC=$CC GOOS=windows GOARCH=amd64 CGO_ENABLED=1 "$GO" build -buildmode=c-shared \
	-ldflags "-extldflags=-Wl,--out-implib,$out/xpromo.lib" -o "$out/xpromo.dll" ./sdk/capi
# cgo wrote its own header beside the DLL: check it, then ship ours.
bash sdk/capi/test/checkheader.sh sdk/capi/xpromo.h "$out/xpromo.h"
cp sdk/capi/xpromo.h "$out/xpromo.h"
# The DLL exports the header's functions and nothing else.
exported=$(x86_64-w64-mingw32-objdump -p "$out/xpromo.dll" | sed -n '/Ordinal\/Name Pointer/,/^$/p' | grep -oE '^\s*\[ *[0-9]+\] [A-Za-z_0-9]+' | awk '{print $NF}' | sort)
declared=$(grep -oE '^XPROMO_API [^(]*\b(xpromo_[a-z_]+)\(' sdk/capi/xpromo.h | grep -oE 'xpromo_[a-z_]+\($' | tr -d '(' | sort)
if [[ $exported != "$declared" ]]; then
	echo "capi-windows: xpromo.dll exports differ from xpromo.h's functions:" >&2
	diff <(echo "$declared") <(echo "$exported") >&2 || true
	exit 1
fi
"$CC" -std=c11 -Wall -Wextra -Werror -I "$out" -o "$out/app-link-check.exe" sdk/capi/test/app.c "$out/xpromo.lib"
rm "$out/app-link-check.exe"
echo "capi-windows: $out/xpromo.dll, xpromo.lib and xpromo.h (windows/amd64)"
