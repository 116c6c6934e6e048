#!/usr/bin/env bash
# scripts/bench-compare.sh (make bench-compare): the peer comparison of issue 8. On loopback, the same
# workload — SIZE-byte messages from THREADS producer goroutines, each waiting for its acknowledgement
# (sync sends), for DURATION — against our brokers and NATS JetStream, plus the disk's raw figures, in one
# run. Rows, each on fresh data, each matched with the peer row of the same durability:
#
#   ours  single ASYNC_FLUSH                 acked in the page cache       <-> NATS R1, fsync every 2 min (default)
#   ours  single SYNC_FLUSH                  acked after fsync             <-> NATS R1, sync_interval: always
#   ours  SYNC_MASTER+SYNC_FLUSH and a slave acked after fsync + slave copy <-> NATS R3, sync_interval: always
#   ours  Raft group of three, SYNC_FLUSH    acked on a quorum             <-> NATS R3, sync_interval: always
#                                            (only when this build has the Raft mode, issue 6)
#
# NATS (github.com/nats-io/nats-server/v2, embedded by bench/cmd/natsbench, a module of its own under bench/)
# runs one server, or three clustered on 127.0.0.1, with file storage; its publisher goes through the same
# driver and statistics as mqbench (internal/bench). Settings: DURATION (60s), THREADS (16), SIZE (1024),
# QUEUES (8), DISK_SIZE (bytes of the disk's write test, 1 GiB), ROWS (which rows, default
# "async sync ms raft nats-r1 nats-r1-always nats-r3-always"), KEEP=1 (keep the temp folder and logs).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/common.sh

DURATION="${DURATION:-60s}"
THREADS="${THREADS:-16}"
SIZE="${SIZE:-1024}"
QUEUES="${QUEUES:-8}"
DISK_SIZE="${DISK_SIZE:-1073741824}"
ROWS="${ROWS:-async sync ms raft nats-r1 nats-r1-always nats-r3-always}"

bench_init bench-compare natsbench diskbench

want() { [[ " $ROWS " == *" $1 "* ]]; }

# Results by row key: messages/s, p99 ms, failures.
declare -A TPS P99 FAIL

# record KEY JSON: keeps a summary's figures.
record() {
  if [[ -z "$2" ]]; then
    echo "$1: no summary (see the errors above)" >&2
    return 0
  fi
  TPS[$1]="$(num "$2" msgs_per_sec)"
  P99[$1]="$(num "$2" p99)"
  FAIL[$1]="$(($(num "$2" failed) + $(num "$2" rejected)))"
}

# ours KEY TOPIC: the producer workload against the brokers registered with $NS.
ours() {
  # Unmeasured 2 s runs of the same load first, until one has no failure (at most 10): they create the topic
  # and let a slave or followers settle (NATS's stream is likewise created before its measured run). With
  # SYNC_FLUSH every new 1 GiB CommitLog file is zero-filled and synced first (store/warm.go), and a slave
  # creates its first file on its first append: until then a SYNC_MASTER's puts time out.
  local w
  for w in $(seq 1 10); do
    echo "== $1: warm-up $w" >&2
    s="$(./bin/mqbench producer -n "$NS" -t "$2" -w "$THREADS" -s "$SIZE" --mode sync --duration 2s \
      --queues "$QUEUES" --json || true)"
    [[ -n "$s" && "$(num "$s" failed)" == 0 && "$(num "$s" rejected)" == 0 ]] && break
  done
  echo "== $1: mqbench producer" >&2
  record "$1" "$(./bin/mqbench producer -n "$NS" -t "$2" -w "$THREADS" -s "$SIZE" --mode sync --duration "$DURATION" \
    --queues "$QUEUES" --json || true)"
}

# nats KEY SERVERS REPLICAS SYNC: the same workload against fresh NATS servers.
nats() {
  local dir="$work/$1"
  mkdir -p "$dir"
  start_bg "$dir.log" ./bin/natsbench serve --dir "$dir" --servers "$2" --sync "$4" --port-file "$dir/urls"
  local pid=$LAST_PID
  for _ in $(seq 1 600); do
    [[ -s "$dir/urls" ]] && break
    if ! kill -0 "$pid" 2>/dev/null; then cat "$dir.log" >&2; return 1; fi
    sleep 0.05
  done
  echo "== $1: natsbench pub" >&2
  record "$1" "$(./bin/natsbench pub -n "$(cat "$dir/urls")" --replicas "$3" -w "$THREADS" -s "$SIZE" \
    --duration "$DURATION" --json || true)"
  stop "$pid"
  rm -rf "$dir"
}

echo "$(machine_line) at start"
echo "workload: ${SIZE}-byte messages, $THREADS producer goroutines, sync sends (each waits for its ack), $DURATION per row"
echo "== disk" >&2
disk="$(./bin/diskbench --dir "$work" --size "$DISK_SIZE" --json)"

start_namesrv "$work"
if want async || want sync; then
  for flush in ASYNC_FLUSH SYNC_FLUSH; do
    key=async
    [[ "$flush" == SYNC_FLUSH ]] && key=sync
    want "$key" || continue
    start_broker "bench-$key" "$work/$key" "$(free_port)" --flushDiskType="$flush"
    pid=$LAST_PID
    ours "$key" "bench_$key"
    stop "$pid"
    rm -rf "$work/$key"
  done
fi
if want ms; then
  start_broker bench-ms "$work/ms-master" "$(free_port)" --brokerRole=SYNC_MASTER --flushDiskType=SYNC_FLUSH
  mpid=$LAST_PID
  start_broker bench-ms "$work/ms-slave" "$(free_port)" --brokerId=1 --brokerRole=SLAVE --flushDiskType=SYNC_FLUSH
  spid=$LAST_PID
  wait_log "$work/ms-master.log" "slave requests replication"
  ours ms bench_ms
  stop "$spid"
  stop "$mpid"
  rm -rf "$work/ms-master" "$work/ms-slave"
fi
raft_note=""
if want raft; then
  if raft_available; then
    # Three brokers of one Raft group (RocketMQ's DLedger keys, DESIGN.md): the leader registers as master.
    peers=""
    for i in 0 1 2; do
      rport[i]="$(free_port)"
      bport[i]="$(free_port)"
      peers+="${peers:+;}n$i-127.0.0.1:${rport[i]}"
    done
    rpids=()
    for i in 0 1 2; do
      start_broker bench-raft "$work/raft-n$i" "${bport[i]}" --flushDiskType=SYNC_FLUSH --enableDLegerCommitLog=true \
        --dLegerGroup=bench-raft --dLegerPeers="$peers" --dLegerSelfId="n$i"
      rpids+=("$LAST_PID")
    done
    wait_master bench-raft 60
    ours raft bench_raft
    for p in "${rpids[@]}"; do stop "$p"; done
    rm -rf "$work"/raft-n*
  else
    raft_note="raft: not run — this mqbroker has no Raft mode yet (no enableDLegerCommitLog key; issue 6)"
  fi
fi
want nats-r1 && nats nats-r1 1 1 default
want nats-r1-always && nats nats-r1-always 1 1 always
want nats-r3-always && nats nats-r3-always 3 3 always

echo
echo "$(machine_line) at end"
printf 'disk (%s): sequential write %.0f MB/s; 4 KiB write+fdatasync %.0f/s (p50 %.2f ms, p99 %.2f ms); cold sequential read %.0f MB/s\n' \
  "$work" "$(num "$disk" write_mb_per_sec)" "$(num "$disk" fsync_per_sec)" "$(num "$disk" fsync_p50_ms)" \
  "$(num "$disk" fsync_p99_ms)" "$(num "$disk" cold_read_mb_per_sec)"
echo
printf '%-16s %-44s %10s %9s %6s  %-15s %9s %9s\n' row "system (acknowledged when)" "msgs/s" "p99 ms" fails "vs peer" "x msgs/s" "x p99"
line() { # KEY DESCRIPTION PEER
  [[ -n "${TPS[$1]:-}" ]] || return 0
  local rt="" rp="" peer="${3:-}"
  if [[ -n "$peer" && -n "${TPS[$peer]:-}" ]]; then
    rt="$(ratio "${TPS[$1]}" "${TPS[$peer]}")"
    rp="$(ratio "${P99[$1]}" "${P99[$peer]}")"
  else
    peer=""
  fi
  printf '%-16s %-44s %10.0f %9.2f %6d  %-15s %9s %9s\n' "$1" "$2" "${TPS[$1]}" "${P99[$1]}" "${FAIL[$1]}" "$peer" "$rt" "$rp"
}
line async "ours single, ASYNC_FLUSH (page cache)" nats-r1
line sync "ours single, SYNC_FLUSH (fsync)" nats-r1-always
line ms "ours SYNC_MASTER+slave, SYNC_FLUSH (2 copies)" nats-r3-always
line raft "ours Raft x3, SYNC_FLUSH (quorum)" nats-r3-always
line nats-r1 "NATS R1 file, fsync every 2 min (default)"
line nats-r1-always "NATS R1 file, sync_interval: always"
line nats-r3-always "NATS R3 file x3 servers, sync_interval: always"
if [[ -n "$raft_note" ]]; then echo "$raft_note"; fi
echo "x msgs/s, x p99: ours divided by the matching NATS row (above 1: more messages/s; above 1: a longer p99)"
