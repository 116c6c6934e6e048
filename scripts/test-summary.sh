#!/usr/bin/env bash
# test-summary.sh NAME STATUS JSONFILE [NAME STATUS JSONFILE ...]: the closing lines of make test. For each
# suite: how it ended (its go test exit status) and the tests that failed in it, read from the go test -json
# stream gotestsum kept (--jsonfile). Exits 1 when any suite's status is non-zero, so make test fails when
# either suite did, after both have run.
set -uo pipefail
failed=0
echo
echo "== make test summary"
while (($# >= 3)); do
  name=$1 status=$2 json=$3
  shift 3
  if [[ $status == 0 ]]; then
    echo "$name: PASS"
    continue
  fi
  failed=1
  echo "$name: FAIL (exit $status)"
  if [[ -s $json ]]; then
    # One line per failed test (or package, when no test of it failed: a build failure or a panic at exit).
    grep '"Action":"fail"' "$json" |
      sed -E 's/.*"Package":"([^"]*)"(,"Test":"([^"]*)")?.*/  \1 \3/' | sort -u
  else
    echo "  (no test output kept: $json)"
  fi
done
exit $failed
