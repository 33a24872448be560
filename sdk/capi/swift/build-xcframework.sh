#!/usr/bin/env bash
# build-xcframework.sh [OUT]: on a Mac with Xcode's command line tools and
# Go, builds the C ABI (sdk/capi) as a static library for macOS on arm64
# and x86_64, joins them with lipo, and wraps the result with xpromo.h and
# its module map into OUT/XPromoC.xcframework (default: beside this
# script, where Package.swift expects it). It cannot run on Linux: cgo
# needs Apple's clang and SDK to build for darwin.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${1:-$here}
GO=${GO:-go}
MACOS_MIN=${MACOS_MIN:-11.0}

[[ $(uname -s) == Darwin ]] || { echo "build-xcframework.sh: run it on a Mac (cgo needs Apple's clang and SDK)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"

clang=$(xcrun --sdk macosx --find clang)
sdk=$(xcrun --sdk macosx --show-sdk-path)
for goarch in arm64 amd64; do
	arch=$goarch
	[[ $goarch == amd64 ]] && arch=x86_64
	flags="-arch $arch -isysroot $sdk -mmacosx-version-min=$MACOS_MIN"
	echo "building libxpromo.a for darwin/$goarch..."
	CGO_ENABLED=1 GOOS=darwin GOARCH=$goarch CC=$clang CGO_CFLAGS="$flags" CGO_LDFLAGS="$flags" \
		"$GO" build -trimpath -buildmode=c-archive -o "$work/$goarch/libxpromo.a" ./sdk/capi
	# cgo's own header must declare what xpromo.h declares.
	bash sdk/capi/test/checkheader.sh sdk/capi/xpromo.h "$work/$goarch/libxpromo.h"
done
lipo -create -output "$work/libxpromo.a" "$work/arm64/libxpromo.a" "$work/amd64/libxpromo.a"
mkdir "$work/headers"
cp sdk/capi/xpromo.h "$here/module.modulemap" "$work/headers/"
rm -rf "$out/XPromoC.xcframework"
xcodebuild -create-xcframework -library "$work/libxpromo.a" -headers "$work/headers" -output "$out/XPromoC.xcframework"
echo "$out/XPromoC.xcframework"
