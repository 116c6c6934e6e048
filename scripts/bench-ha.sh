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

make build >/dev/null
work="$(mktemp -d "${TMPDIR:-/tmp}/bench-ha.XXXXXX")"
ns_pid=""
master_pid=""
slave_pid=""

stop() { # stop PID: SIGTERM and wait (ordered shutdown)
  if [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; then
    kill -TERM "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
  fi
}
cleanup() {
  stop "$slave_pid"
  stop "$master_pid"
  stop "$ns_pid"
  if [[ -z "${KEEP:-}" ]]; then rm -rf "$work"; else echo "kept $work" >&2; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# free_port prints a port free on 127.0.0.1 whose next port is free too (the HA port is listenPort+1).
free_port() {
  local p
  for _ in $(seq 1 100); do
    p=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && ! (exec 3<>"/dev/tcp/127.0.0.1/$((p + 1))") 2>/dev/null; then
      echo "$p"
      return
    fi
  done
  echo "no free port found" >&2
  return 1
}

# wait_port PORT PID LOG: wait until PORT accepts connections, failing if PID exits first.
wait_port() {
  for _ in $(seq 1 200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return; fi
    if ! kill -0 "$2" 2>/dev/null; then
      echo "process $2 exited before listening on $1; its log:" >&2
      cat "$3" >&2
      return 1
    fi
    sleep 0.05
  done
  echo "port $1 not listening after 10 s" >&2
  return 1
}

# wait_log FILE TEXT: wait until FILE holds TEXT (at most 20 s).
wait_log() {
  for _ in $(seq 1 400); do
    if grep -q "$2" "$1" 2>/dev/null; then return; fi
    sleep 0.05
  done
  echo "no \"$2\" in $1 after 20 s; its log:" >&2
  cat "$1" >&2
  return 1
}

# num JSON KEY: the first numeric value of "KEY" in a one-line JSON summary.
num() { sed -n "s/.*\"$2\":\([-0-9.e+]*\).*/\1/p" <<<"$1" | head -n1; }

ns_port="$(free_port)"
mkdir -p "$work/namesrv"
./bin/mqnamesrv --listenPort="$ns_port" --metricsPort=0 --rocketmqHome="$work/namesrv" --kvConfigPath="$work/namesrv/kvConfig.json" \
  >"$work/namesrv.log" 2>&1 &
ns_pid=$!
wait_port "$ns_port" "$ns_pid" "$work/namesrv.log"
ns="127.0.0.1:$ns_port"

echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $(go version | cut -d' ' -f3)"
echo "workload: ${SIZE}-byte messages, $THREADS producer goroutines, $CLIENT client, sync sends, $DURATION per run, $QUEUES queues, $FLUSH"
rows=()
base_tps=""
base_p99=""
for run in "no-replication ASYNC_MASTER 0" "async-replication ASYNC_MASTER 1" "sync-replication SYNC_MASTER 1"; do
  read -r name role slaves <<<"$run"
  port="$(free_port)"
  ./bin/mqbroker -n "$ns" --brokerName="bench-$name" --brokerIP1=127.0.0.1 --listenPort="$port" --metricsPort=0 --brokerRole="$role" \
    --storePathRootDir="$work/$name-master" --flushDiskType="$FLUSH" >"$work/$name-master.log" 2>&1 &
  master_pid=$!
  wait_port "$port" "$master_pid" "$work/$name-master.log"
  if [[ "$slaves" == 1 ]]; then
    sport="$(free_port)"
    ./bin/mqbroker -n "$ns" --brokerName="bench-$name" --brokerId=1 --brokerRole=SLAVE --brokerIP1=127.0.0.1 \
      --listenPort="$sport" --metricsPort=0 --storePathRootDir="$work/$name-slave" --flushDiskType="$FLUSH" >"$work/$name-slave.log" 2>&1 &
    slave_pid=$!
    wait_port "$sport" "$slave_pid" "$work/$name-slave.log"
    wait_log "$work/$name-master.log" "slave requests replication"
  fi
  echo "== $name: producer" >&2
  p="$(./bin/mqbench producer -n "$ns" -t "bench_$name" --client "$CLIENT" -w "$THREADS" -s "$SIZE" --mode sync \
    --duration "$DURATION" --queues "$QUEUES" --json)"
  tps="$(num "$p" msgs_per_sec)"
  p99="$(num "$p" p99)"
  if [[ -z "$base_tps" ]]; then base_tps="$tps"; base_p99="$p99"; fi
  rows+=("$(printf '%-18s %-13s %7s %12.0f %8.2f %12.2f %8.2f %10d %8d' "$name" "$role" "$slaves" "$tps" \
    "$(awk -v a="$tps" -v b="$base_tps" 'BEGIN{print (b>0)?a/b:0}')" "$p99" \
    "$(awk -v a="$p99" -v b="$base_p99" 'BEGIN{print (b>0)?a/b:0}')" \
    "$(num "$p" messages)" "$(( $(num "$p" failed) + $(num "$p" rejected) ))")")
  stop "$slave_pid"
  slave_pid=""
  stop "$master_pid"
  master_pid=""
done

echo
printf '%-18s %-13s %7s %12s %8s %12s %8s %10s %8s\n' run role slaves "produce/s" ratio "p99 send ms" ratio produced failures
printf '%s\n' "${rows[@]}"
