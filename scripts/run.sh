#!/usr/bin/env bash
# make run: a name server on 9876 and a broker on 10911 (data under $1, default ./data), in the
# foreground; Ctrl-C stops both cleanly. Metrics: the broker's /metrics on 5557, the name server's on 5556
# (each process on a host needs its own metricsPort). Extra settings: NAMESRV_PORT, BROKER_PORT,
# NAMESRV_METRICS_PORT, BROKER_METRICS_PORT, BROKER_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."
data="${1:-./data}"
ns_port="${NAMESRV_PORT:-9876}"
broker_port="${BROKER_PORT:-10911}"
ns_metrics="${NAMESRV_METRICS_PORT:-5556}"
broker_metrics="${BROKER_METRICS_PORT:-5557}"
mkdir -p "$data/namesrv" "$data/broker"

# setsid: Ctrl-C reaches only the broker; the name server is stopped after it (ordered shutdown).
setsid ./bin/mqnamesrv --listenPort="$ns_port" --metricsPort="$ns_metrics" --rocketmqHome="$data/namesrv" --kvConfigPath="$data/namesrv/kvConfig.json" &
ns_pid=$!
trap 'kill -TERM "$ns_pid" 2>/dev/null; wait "$ns_pid" 2>/dev/null || true' EXIT

# Wait until the name server accepts connections.
for _ in $(seq 1 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$ns_port") 2>/dev/null; then break; fi
  sleep 0.1
done

./bin/mqbroker -n "127.0.0.1:$ns_port" --brokerName=broker-a --brokerIP1=127.0.0.1 \
  --listenPort="$broker_port" --metricsPort="$broker_metrics" --storePathRootDir="$data/broker" ${BROKER_ARGS:-} &
broker_pid=$!
trap 'kill -TERM "$broker_pid" 2>/dev/null; wait "$broker_pid" 2>/dev/null || true; kill -TERM "$ns_pid" 2>/dev/null; wait "$ns_pid" 2>/dev/null || true' EXIT INT TERM
wait "$broker_pid"
