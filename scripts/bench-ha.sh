#!/usr/bin/env bash
# scripts/bench-ha.sh: the replication benchmark of issue 5. Builds bin/, starts a name server on loopback
# (free ports, data in a temp folder) and, one after the other on fresh data, (1) an ASYNC_MASTER alone (no
# replication), (2) an ASYNC_MASTER with a slave, (3) a SYNC_MASTER with a slave; against each, DURATION of
# SIZE-byte messages from THREADS producer goroutines (mqbench, native client, sync sends). Prints one table
# with messages/s and p99 send latency, and each as a ratio to the unreplicated run.
# Settings: DURATION (20s), THREADS (16), SIZE (1024), QUEUES (8), FLUSH (ASYNC_FLUSH), CLIENT (native),
# KEEP=1 (keep the temp folder and its logs).
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION="${DURATION:-20s}"
THREADS="${THREADS:-16}"
SIZE="${SIZE:-1024}"
QUEUES="${QUEUES:-8}"
FLUSH="${FLUSH:-ASYNC_FLUSH}"
CLIENT="${CLIENT:-native}"

. scripts/lib/common.sh
make build >/dev/null
work="$(mktemp -d "${TMPDIR:-/tmp}/bench-ha.XXXXXX")"

cleanup() {
  stop_all
  if [[ -z "${KEEP:-}" ]]; then rm -rf "$work"; else echo "kept $work" >&2; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_namesrv "$work"
ns="$NS"

machine_line
echo "workload: ${SIZE}-byte messages, $THREADS producer goroutines, $CLIENT client, sync sends, $DURATION per run, $QUEUES queues, $FLUSH"
rows=()
base_tps=""
base_p99=""
for run in "no-replication ASYNC_MASTER 0" "async-replication ASYNC_MASTER 1" "sync-replication SYNC_MASTER 1"; do
  read -r name role slaves <<<"$run"
  port="$(free_port)"
  start_broker "bench-$name" "$work/$name-master" "$port" --brokerRole="$role" --flushDiskType="$FLUSH"
  master_pid=$LAST_PID
  slave_pid=""
  if [[ "$slaves" == 1 ]]; then
    sport="$(free_port)"
    start_broker "bench-$name" "$work/$name-slave" "$sport" --brokerId=1 --brokerRole=SLAVE --flushDiskType="$FLUSH"
    slave_pid=$LAST_PID
    wait_log "$work/$name-master.log" "slave requests replication"
  fi
  echo "== $name: producer" >&2
  p="$(./bin/mqbench producer -n "$ns" -t "bench_$name" --client "$CLIENT" -w "$THREADS" -s "$SIZE" --mode sync \
    --duration "$DURATION" --queues "$QUEUES" --json)"
  tps="$(num "$p" msgs_per_sec)"
  p99="$(num "$p" p99)"
  if [[ -z "$base_tps" ]]; then base_tps="$tps"; base_p99="$p99"; fi
  rows+=("$(printf '%-18s %-13s %7s %12.0f %8s %12.2f %8s %10d %8d' "$name" "$role" "$slaves" "$tps" \
    "$(ratio "$tps" "$base_tps")" "$p99" "$(ratio "$p99" "$base_p99")" \
    "$(num "$p" messages)" "$(( $(num "$p" failed) + $(num "$p" rejected) ))")")
  stop "$slave_pid"
  stop "$master_pid"
done

echo
printf '%-18s %-13s %7s %12s %8s %12s %8s %10s %8s\n' run role slaves "produce/s" ratio "p99 send ms" ratio produced failures
printf '%s\n' "${rows[@]}"
