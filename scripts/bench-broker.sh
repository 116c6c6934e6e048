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

make build >/dev/null
work="$(mktemp -d "${TMPDIR:-/tmp}/bench-broker.XXXXXX")"
ns_pid=""
broker_pid=""

stop() { # stop PID: SIGTERM and wait (ordered shutdown)
  if [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; then
    kill -TERM "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
  fi
}
cleanup() {
  stop "$broker_pid"
  stop "$ns_pid"
  if [[ -z "${KEEP:-}" ]]; then rm -rf "$work"; else echo "kept $work" >&2; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# free_port prints a port free on 127.0.0.1 whose next port is free too (a broker's HA port is listenPort+1).
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
echo "workload: ${SIZE}-byte messages, $THREADS producer goroutines, --mode $MODE, $DURATION per run, $QUEUES queues"
rows=()
for flush in ASYNC_FLUSH SYNC_FLUSH; do
  port="$(free_port)"
  prof=()
  if [[ -n "$PROFILE" ]]; then mkdir -p "$PROFILE" && prof=(--cpuprofile="$PROFILE/broker-$flush.pprof"); fi
  ./bin/mqbroker -n "$ns" --brokerName="bench-$flush" --brokerIP1=127.0.0.1 --listenPort="$port" --metricsPort=0 \
    --storePathRootDir="$work/$flush" --flushDiskType="$flush" "${prof[@]}" >"$work/broker-$flush.log" 2>&1 &
  broker_pid=$!
  wait_port "$port" "$broker_pid" "$work/broker-$flush.log"
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
  broker_pid=""
done

echo
printf '%-9s %-11s %12s %12s %12s %10s %10s %8s\n' client flush "produce/s" "p99 send ms" "consume/s" produced consumed failures
printf '%s\n' "${rows[@]}"
if [[ -n "$PROFILE" ]]; then echo "broker CPU profiles: $PROFILE/broker-ASYNC_FLUSH.pprof, $PROFILE/broker-SYNC_FLUSH.pprof"; fi
