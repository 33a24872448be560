#!/usr/bin/env bash
# checkheader.sh HAND GENERATED: fails unless the hand-kept header HAND
# (xpromo.h) declares exactly the functions cgo exported in GENERATED (the
# header `go build -buildmode=c-shared` writes), with the same types. The
# generated declarations cannot say const, so const is ignored, as are
# parameter names and spacing.
set -euo pipefail

# normalize: one "ret name(type,type)" per function, sorted.
normalize() {
	sed -E -e 's/^(extern|XPROMO_API) //' -e 's/\bconst //g' \
		-e 's/[A-Za-z_][A-Za-z0-9_]*([,)])/\1/g' -e 's/ //g' -e 's/;$//' | sort
}
hand=$(grep -E '^XPROMO_API .*xpromo_[a-z_]+\(' "$1" | normalize)
generated=$(grep -E '^extern .* xpromo_[a-z_]+\(' "$2" | normalize)
if [[ $hand != "$generated" ]]; then
	echo "checkheader: $1 and the library's exports differ (< $1, > exported):" >&2
	diff <(echo "$hand") <(echo "$generated") >&2 || true
	exit 1
fi
echo "checkheader: $(echo "$hand" | wc -l) functions match"
