#!/usr/bin/env bash
# scripts/bench-broker.sh: the broker benchmark of issue 3. Builds bin/, starts a name server and one broker
# on loopback (free ports, data in a temp folder), and for ASYNC_FLUSH, then SYNC_FLUSH (a fresh broker each):
# 20 s of 1 KiB messages from 16 producer goroutines with the native client, then with the official Go
# client, each into its own topic, each followed by a consumer of the same client draining that topic.
# Prints one table. Settings: DURATION (20s), THREADS (16), SIZE (1024), QUEUES (8), MODE (sync),
# PROFILE=DIR (write each broker's CPU profile to DIR/broker-<flush>.pprof), KEEP=1 (keep the temp folder).
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION="${DURATION:-20s}"
THREADS="${THREADS:-16}"
SIZE="${SIZE:-1024}"
QUEUES="${QUEUES:-8}"
MODE="${MODE:-sync}"
PROFILE="${PROFILE:-}"

. scripts/lib/common.sh
make build >/dev/null
work="$(mktemp -d "${TMPDIR:-/tmp}/bench-broker.XXXXXX")"

cleanup() {
  stop_all
  if [[ -z "${KEEP:-}" ]]; then rm -rf "$work"; else echo "kept $work" >&2; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_namesrv "$work"
ns="$NS"

machine_line
echo "workload: ${SIZE}-byte messages, $THREADS producer goroutines, --mode $MODE, $DURATION per run, $QUEUES queues"
rows=()
for flush in ASYNC_FLUSH SYNC_FLUSH; do
  port="$(free_port)"
  prof=()
  if [[ -n "$PROFILE" ]]; then mkdir -p "$PROFILE" && prof=(--cpuprofile="$PROFILE/broker-$flush.pprof"); fi
  start_broker "bench-$flush" "$work/$flush" "$port" --flushDiskType="$flush" "${prof[@]}"
  broker_pid=$LAST_PID
  for client in native official; do
    topic="bench_${client}_${flush}"
    echo "== $client client, $flush: producer" >&2
    p="$(./bin/mqbench producer -n "$ns" -t "$topic" --client "$client" -w "$THREADS" -s "$SIZE" --mode "$MODE" \
      --duration "$DURATION" --queues "$QUEUES" --json)"
    echo "== $client client, $flush: consumer draining $topic" >&2
    c="$(./bin/mqbench consumer -n "$ns" -t "$topic" --client "$client" -g "bench_$client" -w "$THREADS" \
      --idle 5s --json)"
    rows+=("$(printf '%-9s %-11s %12.0f %12.2f %12.0f %10d %10d %8d' "$client" "$flush" \
      "$(num "$p" msgs_per_sec)" "$(num "$p" p99)" "$(num "$c" msgs_per_sec)" \
      "$(num "$p" messages)" "$(num "$c" messages)" "$(( $(num "$p" failed) + $(num "$p" rejected) ))")")
  done
  stop "$broker_pid"
done

echo
printf '%-9s %-11s %12s %12s %12s %10s %10s %8s\n' client flush "produce/s" "p99 send ms" "consume/s" produced consumed failures
printf '%s\n' "${rows[@]}"
if [[ -n "$PROFILE" ]]; then echo "broker CPU profiles: $PROFILE/broker-ASYNC_FLUSH.pprof, $PROFILE/broker-SYNC_FLUSH.pprof"; fi
