#!/usr/bin/env bash
# scripts/chaos.sh: the fault-injection suite (make chaos; README "Fault injection"). Builds bin/, then for
# each mode of MODES runs bin/mqchaos: a name server, a master and a slave as processes, every link between
# them through a fault-injecting proxy, a producer and consumers recording what they did, and a seeded
# schedule of faults filling about DURATION; then the checker's report, which ends with one summary line.
# Settings: MODES ("SYNC_MASTER:SYNC_FLUSH"; ROLE:FLUSH, several space-separated, ROLE one of SYNC_MASTER,
# ASYNC_MASTER, or raft for a Raft group of three; e.g. "SYNC_MASTER:SYNC_FLUSH ASYNC_MASTER:ASYNC_FLUSH raft:SYNC_FLUSH"),
# DURATION (5m), SEED (from the clock; printed), RATE (200 msg/s), FAULTS (every kind this machine can run:
# the disk kinds, disk-eio-*, disk-full-* and disk-slow-*, need root, loop devices and blkio throttling, and
# mqchaos says so when it leaves them out), OUT (the runs' folders go under it; default a temp folder, kept:
# each holds the history, report.txt and the logs), ARGS (more mqchaos run flags). Exits 1 when any run FAILs.
set -euo pipefail
cd "$(dirname "$0")/.."

MODES="${MODES:-SYNC_MASTER:SYNC_FLUSH}"
DURATION="${DURATION:-5m}"
SEED="${SEED:-0}"
RATE="${RATE:-200}"
FAULTS="${FAULTS:-}"
OUT="${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/chaos.XXXXXX")}"

make build >/dev/null
mkdir -p "$OUT"
status=0
summaries=()
for mode in $MODES; do
  role="${mode%%:*}"
  flush="${mode##*:}"
  dir="$OUT/$role-$flush"
  rm -rf "$dir"
  echo "=== mqchaos: $role / $flush, about $DURATION of faults, output in $dir"
  # shellcheck disable=SC2086
  topology=(-role "$role")
  if [[ "$role" == raft ]]; then topology=(-mode raft); fi
  faults=()
  if [[ -n "$FAULTS" ]]; then faults=(-faults "$FAULTS"); fi
  if ./bin/mqchaos run -bin bin -dir "$dir" "${topology[@]}" -flush "$flush" -duration "$DURATION" -seed "$SEED" \
    -rate "$RATE" "${faults[@]}" ${ARGS:-} | tee "$dir.out"; then
    :
  else
    status=1
  fi
  summaries+=("$(tail -n 1 "$dir.out")")
done
echo "=== summaries (histories and logs under $OUT; mqchaos check DIR re-checks one)"
printf '%s\n' "${summaries[@]}"
exit "$status"
