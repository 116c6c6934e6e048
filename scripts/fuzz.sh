#!/usr/bin/env bash
# make fuzz [FUZZTIME=30s]: every fuzz target of the tree (func FuzzXxx in a _test.go file), one after the
# other, FUZZTIME each (go test -fuzz takes one target per run). A failure stops the run with the target
# named; go test keeps the failing input under the package's testdata/fuzz/ for a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-30s}
targets=$(grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r f; do
	dir=$(dirname "$f")
	grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed "s|^func |$dir |"
done)
n=$(printf '%s\n' "$targets" | grep -c . || true)
echo "fuzz: $n targets, $FUZZTIME each"
i=0
while read -r dir name; do
	[ -n "$dir" ] || continue
	i=$((i + 1))
	echo "== [$i/$n] $dir $name"
	if ! "$GO" test "$dir" -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME"; then
		echo "fuzz: $dir $name FAILED" >&2
		exit 1
	fi
done <<<"$targets"
echo "fuzz: all $n targets passed"
