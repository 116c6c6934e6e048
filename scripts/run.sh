#!/usr/bin/env bash
# make run: a name server on 9876 and a broker on 10911 (data under $1, default ./data; logs in $1/logs), in
# the foreground; Ctrl-C stops both cleanly, and when the broker exits by itself (a bad BROKER_ARGS, a port
# taken) the name server is stopped too and the broker's exit status is the script's. Metrics
# (metricsExporterType=PROM): the broker's /metrics on 5557, the name server's on 5556. Extra settings:
# NAMESRV_PORT, BROKER_PORT, NAMESRV_METRICS_PORT, BROKER_METRICS_PORT, BROKER_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."
data="${1:-./data}"
ns_port="${NAMESRV_PORT:-9876}"
broker_port="${BROKER_PORT:-10911}"
ns_metrics="${NAMESRV_METRICS_PORT:-5556}"
broker_metrics="${BROKER_METRICS_PORT:-5557}"
mkdir -p "$data/namesrv" "$data/broker" "$data/logs"

. scripts/lib/common.sh # stop_all: SIGTERM to each pid of BG_PIDS, newest first, and wait (errors ignored)
trap stop_all EXIT
trap 'exit 130' INT TERM

# setsid: Ctrl-C reaches this script only; stop_all then stops the broker, then the name server.
setsid ./bin/mqnamesrv --listenPort="$ns_port" --metricsExporterType=PROM --metricsPromExporterPort="$ns_metrics" \
  --logDir="$data/logs" --rocketmqHome="$data/namesrv" --kvConfigPath="$data/namesrv/kvConfig.json" &
BG_PIDS+=($!)
wait_port "$ns_port" "${BG_PIDS[0]}" /dev/null

setsid ./bin/mqbroker -n "127.0.0.1:$ns_port" --brokerName=broker-a --brokerIP1=127.0.0.1 --listenPort="$broker_port" \
  --metricsExporterType=PROM --metricsPromExporterPort="$broker_metrics" --logDir="$data/logs" \
  --storePathRootDir="$data/broker" ${BROKER_ARGS:-} &
BG_PIDS+=($!)
# Until Ctrl-C (the trap) or the exit of either process: then stop_all stops the other.
status=0
wait -n "${BG_PIDS[@]}" || status=$?
for i in 1 0; do
  if ! kill -0 "${BG_PIDS[i]}" 2>/dev/null; then
    echo "run: the $([ "$i" = 1 ] && echo broker || echo "name server") exited (status $status); stopping the rest" >&2
    break
  fi
done
exit "$status"
