#!/usr/bin/env bash
# `make capi-test`: the C ABI's tests. Builds libxpromo.so (and the
# c-archive), checks that xpromo.h declares exactly what the library
# exports and compiles with -Wall -Werror as C and C++, builds the C test
# programs and the C# one, starts a fresh test-mode xpromo-server (SQLite
# in a temporary directory, a random admin token, a free loopback port),
# and runs driver/: the C error-path tests under LeakSanitizer, then the
# story of one paid install played by the C program and by the C# program.
# Exits non-zero on any failure.
#
# Needs gcc and g++ (with LeakSanitizer), mcs and mono; scripts/test-deps.sh
# installs what is missing (Debian, as root).
set -euo pipefail

GO=${GO:-go}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$root"

# shellcheck source=../../../scripts/testserver.sh
. "$root/scripts/testserver.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/xpromo-capi.XXXXXX")
cleanup() {
	local status=$?
	stop_test_server
	if ((status != 0)) && [[ -s $work/server.log ]]; then
		echo "--- the server's log (last 30 lines) ---" >&2
		tail -n 30 "$work/server.log" >&2
	fi
	rm -rf "$work"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

out=$work/build
mkdir -p "$out"
echo "capi: building libxpromo.so, libxpromo.a, xpromo-server and the driver..."
"$GO" build -buildmode=c-shared -o "$out/libxpromo.so" ./sdk/capi
"$GO" build -buildmode=c-archive -o "$out/libxpromo.a" ./sdk/capi
"$GO" build -o "$out/" ./server/cmd/xpromo-server ./sdk/capi/test/driver

echo "capi: xpromo.h declares what the library exports..."
bash sdk/capi/test/checkheader.sh sdk/capi/xpromo.h "$out/libxpromo.h"

echo "capi: xpromo.h compiles with -Wall -Werror as C and C++..."
cflags=(-Wall -Wextra -Werror -pedantic -I sdk/capi)
printf '#include "xpromo.h"\nint main(void) { return xpromo_version() == 0; }\n' >"$out/header.c"
gcc -std=c99 "${cflags[@]}" -c -o "$out/header_c.o" "$out/header.c"
cp "$out/header.c" "$out/header.cpp"
g++ -std=c++11 "${cflags[@]}" -c -o "$out/header_cpp.o" "$out/header.cpp"

echo "capi: building the C and C# programs..."
gcc -std=c11 "${cflags[@]}" -fsanitize=leak -o "$out/app" sdk/capi/test/app.c -L"$out" -lxpromo -Wl,-rpath,"$out"
gcc -std=c11 "${cflags[@]}" -fsanitize=leak -o "$out/capi_test" sdk/capi/test/capi_test.c -L"$out" -lxpromo -Wl,-rpath,"$out" -lpthread
# The same program linked with the static archive (what the macOS
# XCFramework holds): it must link on its own, with the system libraries.
gcc -std=c11 "${cflags[@]}" -o "$out/app_static" sdk/capi/test/app.c "$out/libxpromo.a" -lpthread
mcs -nologo -warnaserror -out:"$out/App.exe" sdk/capi/dotnet/XPromo.cs sdk/capi/test/App.cs

token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
# No canaries: the driver's story needs each fill to be the campaign's (the
# SDK would show a canary's slot as no fill; docs/apps.md "Canary check").
start_test_server "$out/xpromo-server" "$work/server.log" --rate-read 6000 --rate-write 600 --canary-rate 0
echo "capi: xpromo-server listening on http://$addr"

# The leak check: capi_test is built with LeakSanitizer (gcc
# -fsanitize=leak), which at exit reports every malloc'd block nothing
# points to any more: what the C ABI hands out (strings, errors) and is not
# freed by xpromo_string_free / xpromo_error_free, or what the library
# loses itself. The Go heap is not malloc'd, so the runtime adds no noise
# (valgrind's memcheck, by contrast, flags the Go runtime's own stack
# switching as invalid accesses). The control first: a leak made on purpose
# must be caught, or the check proves nothing.
if CAPI_TEST_LEAK=1 "$out/capi_test" >"$work/leak-control.log" 2>&1 || ! grep -q 'LeakSanitizer: detected memory leaks' "$work/leak-control.log"; then
	echo "capi: the leak check does not catch a leak made on purpose:" >&2
	cat "$work/leak-control.log" >&2
	exit 1
fi
echo "capi: the leak check catches a leak made on purpose"
XPROMO_ADMIN_TOKEN=$token LD_LIBRARY_PATH="$out" "$out/driver" --base-url "http://$addr" --dir "$work/e2e" \
	--check "$out/capi_test --loop 3" \
	--app "$out/app" \
	--app "mono $out/App.exe"
echo "capi: ok"
