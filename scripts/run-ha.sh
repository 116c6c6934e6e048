#!/usr/bin/env bash
# make run-ha: a name server on 9876, a SYNC_MASTER broker-a on 10911 (HA port 10912) and its slave
# (brokerId 1) on 10921 (HA port 10922), all on 127.0.0.1, data under $1 (default ./data/ha): namesrv/,
# master/, slave/. In the foreground; Ctrl-C stops the slave, the master, then the name server (ordered
# shutdowns). Extra settings: NAMESRV_PORT, MASTER_PORT, SLAVE_PORT, MASTER_ARGS, SLAVE_ARGS (any
# --key=value, e.g. MASTER_ARGS="--flushDiskType=SYNC_FLUSH"). Metrics (/metrics): name server 5556, master 5557,
# slave 5558 (NAMESRV_METRICS_PORT, MASTER_METRICS_PORT, SLAVE_METRICS_PORT; each process needs its own).
# Log files in $1/logs/{namesrv,master,slave}.
set -euo pipefail
cd "$(dirname "$0")/.."
data="${1:-./data/ha}"
ns_port="${NAMESRV_PORT:-9876}"
master_port="${MASTER_PORT:-10911}"
slave_port="${SLAVE_PORT:-10921}"
mkdir -p "$data/namesrv" "$data/master" "$data/slave"

pids=()
stop_all() { # newest first: slave, master, name server
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -TERM "${pids[i]}" 2>/dev/null || true
    wait "${pids[i]}" 2>/dev/null || true
  done
}
trap stop_all EXIT
trap 'exit 130' INT TERM

wait_port() { # PORT PID
  for _ in $(seq 1 200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return; fi
    if ! kill -0 "$2" 2>/dev/null; then echo "process $2 exited before listening on $1" >&2; return 1; fi
    sleep 0.05
  done
  echo "port $1 not listening after 10 s" >&2
  return 1
}

# setsid: Ctrl-C reaches this script only; it stops the servers in order.
setsid ./bin/mqnamesrv --listenPort="$ns_port" --metricsExporterType=PROM --metricsPromExporterPort="${NAMESRV_METRICS_PORT:-5556}" --logDir="$data/logs/namesrv" --rocketmqHome="$data/namesrv" --kvConfigPath="$data/namesrv/kvConfig.json" &
pids+=($!)
wait_port "$ns_port" "${pids[-1]}"
ns="127.0.0.1:$ns_port"

setsid ./bin/mqbroker -n "$ns" --brokerName=broker-a --brokerId=0 --brokerRole=SYNC_MASTER --brokerIP1=127.0.0.1 \
  --listenPort="$master_port" --metricsExporterType=PROM --metricsPromExporterPort="${MASTER_METRICS_PORT:-5557}" --logDir="$data/logs/master" --storePathRootDir="$data/master" ${MASTER_ARGS:-} &
pids+=($!)
wait_port "$master_port" "${pids[-1]}"

setsid ./bin/mqbroker -n "$ns" --brokerName=broker-a --brokerId=1 --brokerRole=SLAVE --brokerIP1=127.0.0.1 \
  --listenPort="$slave_port" --metricsExporterType=PROM --metricsPromExporterPort="${SLAVE_METRICS_PORT:-5558}" --logDir="$data/logs/slave" --storePathRootDir="$data/slave" ${SLAVE_ARGS:-} &
pids+=($!)
wait_port "$slave_port" "${pids[-1]}"

echo "name server $ns; SYNC_MASTER broker-a 127.0.0.1:$master_port (HA $((master_port + 1))); slave 127.0.0.1:$slave_port; Ctrl-C stops them"
wait -n "${pids[@]}"
