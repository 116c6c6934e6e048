#!/usr/bin/env bash
# scripts/soak.sh: the long run (make soak; README "Long runs", docs/soak.md). Builds bin/, then runs
# bin/mqchaos soak: the fault suite's group, recorded load and checker, a fault every few minutes, a mixed
# workload of the official Go client (every send kind, push and pull consumers, mqadmin calls), and every
# server process's memory, goroutines, open files and mappings sampled every 30 s; it fails on growth beyond
# the stated bounds or on anything the checker finds. The output ends with the per-process resource table and
# one summary line.
# Settings: SOAK_DURATION (1h), SOAK_MODE (SYNC_MASTER:SYNC_FLUSH; ROLE:FLUSH as make chaos's MODES, one mode),
# SEED (from the clock; printed), FAULTS (every kind), OUT (the run's folder; default a temp folder, kept:
# history, samples.jsonl, soak.txt and the logs), ARGS (more mqchaos soak flags: bin/mqchaos soak -h).
# Exits 1 on FAIL.
set -euo pipefail
cd "$(dirname "$0")/.."

SOAK_DURATION="${SOAK_DURATION:-1h}"
SOAK_MODE="${SOAK_MODE:-SYNC_MASTER:SYNC_FLUSH}"
SEED="${SEED:-0}"
FAULTS="${FAULTS:-kill-writer,kill-follower,pause-writer,pause-follower,partition-repl,delay-repl,cut-repl,oneway-repl,lossy-repl,cut-client-writer,power-loss-writer,power-loss-follower,power-loss-all}"
OUT="${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/soak.XXXXXX")}"

make build >/dev/null
role="${SOAK_MODE%%:*}"
flush="${SOAK_MODE##*:}"
topology=(-role "$role")
if [[ "$role" == raft ]]; then topology=(-mode raft); fi
echo "=== mqchaos soak: $role / $flush for $SOAK_DURATION, output in $OUT"
# shellcheck disable=SC2086
./bin/mqchaos soak -bin bin -dir "$OUT" "${topology[@]}" -flush "$flush" -duration "$SOAK_DURATION" -seed "$SEED" \
  -faults "$FAULTS" ${ARGS:-}
