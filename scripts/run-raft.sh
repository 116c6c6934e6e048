#!/usr/bin/env bash
# make run-raft: a name server on 9876 and a three-node Raft broker group broker-a (enableDLegerCommitLog=true)
# on 127.0.0.1: nodes n0, n1, n2 with client ports 10911, 10921, 10931, Raft ports 40911, 40912, 40913 and
# metrics 5557, 5558, 5559 (name server 5556); data under $1 (default ./data/raft): namesrv/, n0/, n1/, n2/,
# log files in logs/.
# In the foreground; a node that dies (kill -9 one to watch a failover) leaves the others running; Ctrl-C
# stops the nodes, then the name server (ordered shutdowns; a leader hands leadership over first).
# Extra settings: NAMESRV_PORT, BASE_PORT (client port of n0; n1 and n2 get +10, +20), RAFT_BASE_PORT,
# METRICS_BASE_PORT, BROKER_ARGS (any --key=value for every node, e.g. --flushDiskType=SYNC_FLUSH).
# MASTER_VIP=127.0.0.100: the master's virtual address (masterVipAddress): the nodes then run at 127.0.0.11,
# .12, .13, all on client port BASE_PORT and Raft port RAFT_BASE_PORT, and clients use MASTER_VIP:BASE_PORT.
set -euo pipefail
cd "$(dirname "$0")/.."
data="${1:-./data/raft}"
ns_port="${NAMESRV_PORT:-9876}"
base="${BASE_PORT:-10911}"
raft_base="${RAFT_BASE_PORT:-40911}"
metrics_base="${METRICS_BASE_PORT:-5557}"
vip="${MASTER_VIP:-}"
host() { if [[ -n $vip ]]; then echo "127.0.0.$((11 + $1))"; else echo 127.0.0.1; fi; } # node N's address
cport() { if [[ -n $vip ]]; then echo "$base"; else echo "$((base + 10 * $1))"; fi; }    # its client port
rport() { if [[ -n $vip ]]; then echo "$raft_base"; else echo "$((raft_base + $1))"; fi; } # its Raft port
peers="n0-$(host 0):$(rport 0);n1-$(host 1):$(rport 1);n2-$(host 2):$(rport 2)"
mkdir -p "$data/namesrv" "$data/n0" "$data/n1" "$data/n2"

. scripts/lib/common.sh # stop_all (the pids in BG_PIDS, newest first), wait_port
trap stop_all EXIT
trap 'exit 130' INT TERM

# A port another process holds would pass wait_port below: refuse to start instead.
for hp in "127.0.0.1:$ns_port" "127.0.0.1:$((metrics_base - 1))" ${vip:+"$vip:$base"} \
  $(for n in 0 1 2; do echo "$(host "$n"):$(cport "$n") $(host "$n"):$(rport "$n") 127.0.0.1:$((metrics_base + n))"; done); do
  if (exec 3<>"/dev/tcp/${hp%:*}/${hp##*:}") 2>/dev/null; then
    echo "port $hp is taken; pick others with NAMESRV_PORT, BASE_PORT, RAFT_BASE_PORT, METRICS_BASE_PORT" >&2
    exit 1
  fi
done

# setsid: Ctrl-C reaches this script only; it stops the servers in order.
setsid ./bin/mqnamesrv --listenPort="$ns_port" --metricsExporterType=PROM --metricsPromExporterPort="$((metrics_base - 1))" --logDir="$data/logs/namesrv" --rocketmqHome="$data/namesrv" \
  --kvConfigPath="$data/namesrv/kvConfig.json" &
BG_PIDS+=($!)
wait_port "$ns_port" "${BG_PIDS[-1]}" /dev/null
ns="127.0.0.1:$ns_port"

node_args() { # N: the mqbroker command line of node n$N
  echo -n "-n $ns --brokerName=broker-a --brokerIP1=$(host "$1") --listenPort=$(cport "$1")" \
    "--metricsExporterType=PROM --metricsPromExporterPort=$((metrics_base + $1)) --logDir=$data/logs/n$1 --storePathRootDir=$data/n$1 --enableDLegerCommitLog=true" \
    "--dLegerGroup=broker-a --dLegerPeers=$peers --dLegerSelfId=n$1 ${vip:+--masterVipAddress=$vip} ${BROKER_ARGS:-}"
}
for n in 0 1 2; do
  # shellcheck disable=SC2046 # node_args is a word list on purpose
  setsid ./bin/mqbroker $(node_args "$n") &
  BG_PIDS+=($!)
  # shellcheck disable=SC2046
  echo "n$n: pid $! client $(host "$n"):$(cport "$n") raft $(host "$n"):$(rport "$n"); restart it with: ./bin/mqbroker$(printf ' %q' $(node_args "$n"))"
done
for n in 0 1 2; do wait_port "$(cport "$n")" "${BG_PIDS[n + 1]}" /dev/null 60 "$(host "$n")"; done # SYNC_FLUSH warms 1 GiB files

cat <<MSG
name server $ns; Raft group broker-a (dLegerPeers=$peers); Ctrl-C stops everything.
Watch it: ./bin/mqadmin getRaftStatus -n $ns -c DefaultCluster   (roles, terms, commit and applied index)
          ./bin/mqadmin clusterList -n $ns                        (brokerId 0 is the leader)
Failover: kill -9 the pid of the node getRaftStatus shows as Leader; within about a second another node is
          Leader and brokerId 0; start the killed node again with the command above: it rejoins as a follower.
Handover: ./bin/mqadmin transferLeadership -n $ns -b $(host 0):$base [-t n1]
MSG
if [[ -n $vip ]]; then
  echo "Master's virtual address: $vip:$base (brokerId 0 at the name server); the master listens there, and a"
  echo "          failover moves it: clients that cached the route reach the new master without a refresh."
fi
while true; do # until Ctrl-C, the name server's exit, or the last node's
  kill -0 "${BG_PIDS[0]}" 2>/dev/null || { echo "the name server exited" >&2; exit 1; }
  live=()
  for p in "${BG_PIDS[@]:1}"; do kill -0 "$p" 2>/dev/null && live+=("$p"); done
  ((${#live[@]} > 0)) || { echo "every node exited" >&2; exit 1; }
  wait -n "${BG_PIDS[0]}" "${live[@]}" || true
done
