#!/usr/bin/env bash
# scripts/bench-compare.sh (make bench-compare): the peer comparison of issue 8. On loopback, the same
# workload — SIZE-byte messages from THREADS producer goroutines, each waiting for its acknowledgement
# (sync sends), for DURATION — against our brokers and NATS JetStream, plus the disk's raw figures, in one
# run. Rows, each on fresh data, each matched with the peer row of the same durability:
#
#   ours  single ASYNC_FLUSH                 acked in the page cache       <-> NATS R1, fsync every 2 min (default)
#   ours  single SYNC_FLUSH                  acked after fsync             <-> NATS R1, sync_interval: always
#   ours  SYNC_MASTER+SYNC_FLUSH and a slave acked after fsync + slave copy <-> NATS R3, sync_interval: always
#   ours  Raft group of three, SYNC_FLUSH    acked on a quorum (synced)    <-> NATS R3, sync_interval: always
#   ours  Raft group of three, ASYNC_FLUSH   acked on a quorum (in memory) <-> NATS R3, default (fsync every 2 min)
#                                            (only when this build has the Raft mode, issue 6)
#
# and RocketMQ 5's gRPC path against the 4.x path (issue 38), one ASYNC_FLUSH broker each:
#
#   grpc-send          the same producer workload through the broker's own gRPC endpoint (enableProxy: local
#                      mode, in process) with RocketMQ 5's protocol (mqbench --client grpc)     <-> async
#   grpc-send-cluster  the same through mqproxy in front of the broker (cluster mode; its CPU counts with the
#                      broker's)                                                               <-> async
#   pull               CONSUME_MESSAGES stored messages consumed with PULL_MESSAGE (32 a pull, the offset
#                      committed with the next), CONSUMERS goroutines (the native consumer)
#   pop                the same consumed through the broker's gRPC endpoint by CONSUMERS SimpleConsumers of one
#                      group (ReceiveMessage of 32, one AckMessage of them: the broker's pop)   <-> pull
#
# The Raft rows are also set against our single broker of the same flush mode (the issue 12 goals), and the
# nodes' rocketmq_raft_* series are scraped before and after the measured run: messages per Raft entry,
# fsyncs per message (all three nodes), entries per follower append, and the mean of each stage of a send
# on the leader (queue, dispatch, leader store, replicate, apply, answer), the mean follower StoreLogs
# (write and sync) and log sync of the nodes (ms), the share of them over 4 and over 8 ms, and the MiB of
# zeros written to keep the CommitLogs warm ahead of the writes with the flushes that had to warm first
# (store/warm.go).
#
# NATS (github.com/nats-io/nats-server/v2, embedded by bench/cmd/natsbench, a module of its own under bench/)
# runs one server, or three clustered on 127.0.0.1, with file storage; its publisher goes through the same
# driver and statistics as mqbench (tools/bench). Settings: DURATION (60s), THREADS (16), SIZE (1024),
# QUEUES (8), DISK_SIZE (bytes of the disk's write test, 1 GiB), ROWS (which rows, default
# "async grpc-send grpc-send-cluster sync ms raft raft-async pull pop nats-r1 nats-r1-always nats-r3
# nats-r3-always"; they run in that order), CONSUME_MESSAGES (1000000: the backlog of the pull and pop rows,
# sent before their measured run; with 100000 pull drained it in about 0.17 s and its figure was its start-up),
# CONSUMERS (4),
# KEEP=1 (keep the temp folder and logs), PROFILE=1 (a CPU profile of every broker of our rows, its top
# printed at the end; kept in the temp folder with KEEP=1), RAFT_ARGS (more --key=value for the Raft nodes),
# BROKER_ARGS (more --key=value for the brokers of the async and sync rows), NODE_PROCS (GOMAXPROCS of each
# broker of a row that runs several on this machine, see node_procs; 0 leaves the Go runtime's default),
# PIN (SERVER_CPUS/CLIENT_CPUS, e.g. 0/1: servers and benchmark clients each on their own cores, below),
# HOP (an interval, e.g. 500us: time a bare round trip between two processes, mqbench hop, that often beside
# each of our rows' measured run, the cost of one hop at the row's load; it adds that load to the row).
#
# Sharing the cores: a row of one broker gets the machine; the brokers of the ms row (two) and of the Raft rows
# (three) run with GOMAXPROCS set to their share of the cores (node_procs), as a container with that CPU limit
# would give them (Go sizes GOMAXPROCS to the cgroup's CPU limit). NATS's three servers run in one process
# (natsbench serve), so they share one Go runtime of GOMAXPROCS = the cores. With each of three brokers
# sized for the whole machine, their idle processors spin and wake each other across the processes: on 2
# cores the raft-async row then used 42 % more CPU per message (NODE_PROCS=0 shows it; raftlog/doc.go).
# Clients and servers share the cores too, unless PIN gives each side its own: unpinned on 2 cores, a
# local-mode gRPC send cost the broker 54 us of CPU and mqbench 50, pinned 27 and 25 (remoting: 19 and 18
# unpinned, 14 and 12 pinned; docs/bench/compare-2026-12-07-pinned.txt): the processes' schedulers wake and
# spin across the shared cores, and gRPC's hand-offs between goroutines (reader, call, writer) pay it most.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/common.sh

DURATION="${DURATION:-60s}"
THREADS="${THREADS:-16}"
SIZE="${SIZE:-1024}"
QUEUES="${QUEUES:-8}"
DISK_SIZE="${DISK_SIZE:-1073741824}"
ROWS="${ROWS:-async grpc-send grpc-send-cluster sync ms raft raft-async pull pop nats-r1 nats-r1-always nats-r3 nats-r3-always}"
CONSUME_MESSAGES="${CONSUME_MESSAGES:-1000000}"
CONSUMERS="${CONSUMERS:-4}"
PROFILE="${PROFILE:-}"
HOP="${HOP:-}"
read -r -a RAFT_EXTRA <<<"${RAFT_ARGS:-}"
read -r -a BROKER_EXTRA <<<"${BROKER_ARGS:-}"
# PIN=SERVERS/CLIENTS (CPU lists, e.g. 0/1): the servers (name server, brokers, mqproxy, NATS) run on the
# first, the benchmark clients (mqbench, natsbench pub) on the second, as when clients run on other machines.
CLIENT_PIN=()
if [[ -n "${PIN:-}" ]]; then
  if [[ ! "$PIN" =~ ^([0-9,-]+)/([0-9,-]+)$ ]]; then
    echo "PIN=$PIN: want SERVER_CPUS/CLIENT_CPUS, CPU lists as taskset takes them (e.g. 0/1)" >&2
    exit 2
  fi
  SERVER_PIN=(taskset -c "${BASH_REMATCH[1]}")
  CLIENT_PIN=(taskset -c "${BASH_REMATCH[2]}")
fi
if [[ -n "${NODE_PROCS:-}" && ! "$NODE_PROCS" =~ ^[0-9]+$ ]]; then
  echo "NODE_PROCS=$NODE_PROCS: want a whole number of processors per broker (0: Go's default, all cores)" >&2
  exit 2
fi

bench_init bench-compare natsbench diskbench

want() { [[ " $ROWS " == *" $1 "* ]]; }

# node_procs NODES: the GOMAXPROCS for each of NODES brokers of one row: NODE_PROCS when set (0 prints nothing:
# the runtime's default), else the cores divided among the nodes, at least 1.
node_procs() {
  local n="${NODE_PROCS:-$(( $(nproc) / $1 ))}"
  if [[ "$n" == 0 && -n "${NODE_PROCS:-}" ]]; then return; fi
  echo $(( n < 1 ? 1 : n ))
}

# Results by row key: messages/s, p99 ms, failures; Raft rows: what their metrics say (RAFT_LINE).
declare -A TPS P99 FAIL RAFT_LINE WROTE DEV CPU HOP_LINE CLIENT_CPU BUSY CONSUMED
# profile_args NAME: the --cpuprofile flag of broker NAME ($work/prof-NAME.pprof) when PROFILE is set.
profile_args() {
  if [[ -n "$PROFILE" ]]; then echo "--cpuprofile=$work/prof-$1.pprof"; fi
}

# raft_scrape PORT...: the rocketmq_raft_* and rocketmq_storage_warm_* samples (no buckets) of the nodes'
# metrics endpoints, summed over the nodes, one "series value" a line. The labels every broker series carries (cluster, node_id, node_type:
# broker/metrics.go) are dropped, so a series reads as its name and its own labels, e.g.
# rocketmq_raft_store_entries_count{role="follower"}.
raft_scrape() {
  local p
  for p in "$@"; do curl -fsS "http://127.0.0.1:$p/metrics" || true; done |
    awk '/^rocketmq_(raft|storage_warm|storage_queue_offsets_written)_/ && ($1 !~ /_bucket/ || $1 ~ /^rocketmq_raft_(send_stage|store|fsync)_seconds_bucket/) {
      k = $1; gsub(/(cluster|node_id|node_type)="[^"]*",?/, "", k); sub(/,}$/, "}", k); sub(/\{\}$/, "", k)
      sum[k] += $2 } END { for (k in sum) printf "%s %.9g\n", k, sum[k] }'
}

# raft_delta BEFORE AFTER SERIES: AFTER's value of SERIES minus BEFORE's (0 when absent).
raft_delta() {
  awk -v k="$3" 'NR == FNR { if ($1 == k) b = $2; next } $1 == k { a = $2 } END { printf "%.9g", a - b }' \
    <(echo "$1") <(echo "$2")
}

# machine_busy BEFORE AFTER: the share (%) of the machine's CPU time that was busy between two "cpu" lines of
# /proc/stat (user nice system idle iowait irq softirq steal).
machine_busy() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    n = split(a, x, " "); split(b, y, " ")
    for (i = 2; i <= 9 && i <= n; i++) { d = y[i] - x[i]; all += d; if (i != 5 && i != 6) busy += d }
    if (all > 0) printf "%.0f", 100 * busy / all; else printf "-" }'
}

# raft_mean BEFORE AFTER NAME LABELS: the mean (ms) of the samples between the scrapes of histogram NAME{LABELS}
# ("-" without samples).
raft_mean() {
  local n t
  n="$(raft_delta "$1" "$2" "$3_count$4")"
  t="$(raft_delta "$1" "$2" "$3_sum$4")"
  awk -v n="$n" -v t="$t" 'BEGIN { if (n > 0) printf "%.3f", 1000*t/n; else printf "-" }'
}

# raft_p99 BEFORE AFTER PREFIX: the upper bound (ms) of the histogram bucket that holds the 99th percentile of
# the samples between the scrapes, of the series whose name starts with PREFIX (name{labels, up to le=).
raft_p99() {
  awk -v k="$3" 'index($1, k) == 1 && match($1, /[{,]le="[^"]*"/) {
      le = substr($1, RSTART + 5, RLENGTH - 6); if (NR == FNR) b[le] = $2; else a[le] = $2 }
    END {
      n = 0; for (le in a) { les[++n] = le }
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (bound(les[j]) < bound(les[i])) { t = les[i]; les[i] = les[j]; les[j] = t }
      total = a["+Inf"] - b["+Inf"]; if (total <= 0) { printf "-"; exit }
      for (i = 1; i <= n; i++) if (a[les[i]] - b[les[i]] >= 0.99 * total) {
        if (les[i] == "+Inf") printf ">1000"; else printf "%g", 1000 * les[i]; exit }
    }
    function bound(x) { return x == "+Inf" ? 1e99 : x + 0 }' <(echo "$1") <(echo "$2")
}

# raft_over BEFORE AFTER PREFIX BOUND: the percentage of the samples between the scrapes, of the histogram whose
# series start with PREFIX, above BOUND seconds (one of the histogram's bucket bounds; "?" when it is not one).
raft_over() {
  awk -v k="$3" -v bound="$4" 'index($1, k) == 1 && match($1, /[{,]le="[^"]*"/) {
      le = substr($1, RSTART + 5, RLENGTH - 6); if (NR == FNR) b[le] = $2; else a[le] = $2 }
    END {
      total = a["+Inf"] - b["+Inf"]; if (total <= 0) { printf "-"; exit }
      for (le in a) if (le != "+Inf" && le + 0 == bound + 0) { printf "%.2f", 100 * (total - (a[le] - b[le])) / total; exit }
      printf "?" }' <(echo "$1") <(echo "$2")
}

# raft_summary KEY BEFORE AFTER: the Raft row's figures from the scrapes around its measured run.
raft_summary() {
  local b="$2" a="$3" msgs entries fsyncs fcalls fentries
  msgs="$(raft_delta "$b" "$a" rocketmq_raft_entry_messages_sum)"
  entries="$(raft_delta "$b" "$a" rocketmq_raft_entry_messages_count)"
  fsyncs="$(raft_delta "$b" "$a" rocketmq_raft_fsyncs_total)"
  fcalls="$(raft_delta "$b" "$a" 'rocketmq_raft_store_entries_count{role="follower"}')"
  fentries="$(raft_delta "$b" "$a" 'rocketmq_raft_store_entries_sum{role="follower"}')"
  local wbytes wstalls
  wbytes="$(raft_delta "$b" "$a" rocketmq_storage_warm_bytes_total)"
  wstalls="$(raft_delta "$b" "$a" rocketmq_storage_warm_stalls_total)"
  local stages="" st n sum
  for st in queue dispatch store replicate apply answer; do
    n="$(raft_delta "$b" "$a" "rocketmq_raft_send_stage_seconds_count{stage=\"$st\"}")"
    sum="$(raft_delta "$b" "$a" "rocketmq_raft_send_stage_seconds_sum{stage=\"$st\"}")"
    stages+="$(awk -v s="$st" -v n="$n" -v t="$sum" 'BEGIN{ if (n > 0) printf " %s %.2f", s, 1000*t/n; else printf " %s -", s }')"
  done
  # The replicate stage split on the leader (send, quorum, commit) and the appends' times on each side
  # (raftlog/stats.go; present when the entries travel as append frames).
  local split=""
  for st in send quorum commit; do
    split+=" $st $(raft_mean "$b" "$a" "rocketmq_raft_replicate_stage_seconds" "{stage=\"$st\"}")"
  done
  for st in leader follower; do
    split+=" append-$st $(raft_mean "$b" "$a" "rocketmq_raft_append_seconds" "{side=\"$st\"}")"
  done
  RAFT_LINE[$1]="$(awk -v m="$msgs" -v e="$entries" -v f="$fsyncs" -v c="$fcalls" -v fe="$fentries" 'BEGIN {
    printf "msgs/entry %s  fsyncs/msg %s  fsyncs %d  entries/follower append %s", (e > 0 ? sprintf("%.1f", m/e) : "-"),
      (m > 0 ? sprintf("%.3f", f/m) : "-"), f, (c > 0 ? sprintf("%.2f", fe/c) : "-") }')  stage means ms:$stages  replicate split ms:$split"
  local fsn fss fstn fsts
  fsn="$(raft_delta "$b" "$a" 'rocketmq_raft_store_seconds_count{role="follower"}')"
  fss="$(raft_delta "$b" "$a" 'rocketmq_raft_store_seconds_sum{role="follower"}')"
  fstn="$(raft_delta "$b" "$a" rocketmq_raft_fsync_seconds_count)"
  fsts="$(raft_delta "$b" "$a" rocketmq_raft_fsync_seconds_sum)"
  RAFT_LINE[$1]+="$(awk -v n="$fsn" -v t="$fss" -v sn="$fstn" -v st="$fsts" 'BEGIN {
    printf "  follower store %s fsync %s", (n > 0 ? sprintf("%.2f", 1000*t/n) : "-"), (sn > 0 ? sprintf("%.2f", 1000*st/sn) : "-") }')"
  local p99s="" le
  for st in queue store replicate apply; do
    p99s+=" $st $(raft_p99 "$b" "$a" "rocketmq_raft_send_stage_seconds_bucket{stage=\"$st\",")"
  done
  p99s+=" follower-store $(raft_p99 "$b" "$a" 'rocketmq_raft_store_seconds_bucket{role="follower",')"
  p99s+=" fsync $(raft_p99 "$b" "$a" 'rocketmq_raft_fsync_seconds_bucket{')"
  RAFT_LINE[$1]+="  p99 at most ms:$p99s"
  # The tail: the share of the puts whose queue or replicate stage, of the follower appends and of the syncs
  # that took over 4 and over 8 ms (where the p99 of a send comes from; raftlog/doc.go).
  local over="" pre
  for st in queue replicate; do
    pre="rocketmq_raft_send_stage_seconds_bucket{stage=\"$st\","
    over+=" $st $(raft_over "$b" "$a" "$pre" 0.004)/$(raft_over "$b" "$a" "$pre" 0.008)"
  done
  pre='rocketmq_raft_store_seconds_bucket{role="follower",'
  over+=" follower-store $(raft_over "$b" "$a" "$pre" 0.004)/$(raft_over "$b" "$a" "$pre" 0.008)"
  pre='rocketmq_raft_fsync_seconds_bucket{'
  over+=" fsync $(raft_over "$b" "$a" "$pre" 0.004)/$(raft_over "$b" "$a" "$pre" 0.008)"
  RAFT_LINE[$1]+="  % over 4/8 ms:$over"
  RAFT_LINE[$1]+="  queue offsets written at apply $(raft_delta "$b" "$a" rocketmq_storage_queue_offsets_written_total)"
  RAFT_LINE[$1]+="  warmed MiB $(awk -v w="$wbytes" 'BEGIN { printf "%.0f", w / 1048576 }') (flushes that warmed first: ${wstalls%.*})"
}

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

# written_bytes PID...: the bytes the processes have sent to the storage layer so far (/proc/PID/io).
written_bytes() {
  local p w t=0
  for p in "$@"; do
    w="$(awk '/^write_bytes:/ { print $2 }' "/proc/$p/io" 2>/dev/null || true)"
    t=$((t + ${w:-0}))
  done
  echo "$t"
}

# device_written: the bytes written so far to the block device holding $work (/sys/class/block/DEV/stat,
# sectors written, 512 bytes each; 0 when the device is not found). Unlike written_bytes it counts what
# reached the device, from every process: the other rows' servers are stopped while a row runs.
device_written() {
  local dev
  dev="$(basename "$(df --output=source "$work" 2>/dev/null | tail -1)")"
  awk '{ printf "%.0f\n", $7 * 512 }' "/sys/class/block/$dev/stat" 2>/dev/null || echo 0
}

# disk_quiet PID...: waits (at most 180 s) until the brokers PID... write less than 4 MB in a second. A
# SYNC_FLUSH broker zero-fills and syncs its current and its next 1 GiB CommitLog file when it starts
# (store/warm.go), a Raft group three of each: measured while that runs, the row would share the disk with
# gigabytes of zeros (a one-broker row with a third as many), which no steady state has.
disk_quiet() {
  local prev cur i
  prev="$(written_bytes "$@")"
  for i in $(seq 1 180); do
    sleep 1
    cur="$(written_bytes "$@")"
    if ((cur - prev < 4000000)); then
      echo "== disk quiet after ${i} s" >&2
      return 0
    fi
    prev="$cur"
  done
  echo "== the brokers still write more than 4 MB/s after 180 s; measuring anyway" >&2
}

# ours KEY TOPIC: the producer workload against the brokers registered with $NS (their pids in BROKER_PIDS,
# for disk_quiet).
ours() {
  # Unmeasured 2 s runs of the same load first, until one has no failure (at most 10): they create the topic
  # and let a slave or followers settle (NATS's stream is likewise created before its measured run). With
  # SYNC_FLUSH every new 1 GiB CommitLog file is zero-filled and synced first (store/warm.go), and a slave
  # creates its first file on its first append: until then a SYNC_MASTER's puts time out.
  local w
  for w in $(seq 1 10); do
    echo "== $1: warm-up $w" >&2
    # shellcheck disable=SC2086
    s="$("${CLIENT_PIN[@]}" ./bin/mqbench producer -n "$NS" -t "$2" -w "$THREADS" -s "$SIZE" --mode sync --duration 2s \
      --queues "$QUEUES" ${CLIENT_ARGS:-} --json || true)"
    [[ -n "$s" && "$(num "$s" failed)" == 0 && "$(num "$s" rejected)" == 0 ]] && break
  done
  # shellcheck disable=SC2086
  if [[ -n "${BROKER_PIDS:-}" ]]; then disk_quiet $BROKER_PIDS; fi
  local before="" wrote=0 ticks=0 dev
  dev="$(device_written)"
  if [[ -n "${METRICS_PORTS:-}" ]]; then before="$(raft_scrape $METRICS_PORTS)"; fi
  # shellcheck disable=SC2086
  if [[ -n "${BROKER_PIDS:-}" ]]; then wrote="$(written_bytes $BROKER_PIDS)"; ticks="$(cpu_ticks $BROKER_PIDS)"; fi
  echo "== $1: mqbench producer" >&2
  local hop_pid=""
  if [[ -n "$HOP" ]]; then
    "${CLIENT_PIN[@]}" ./bin/mqbench hop --every "$HOP" --duration "$DURATION" --json >"$work/hop-$1.json" 2>/dev/null &
    hop_pid=$!
  fi
  local stat0
  stat0="$(head -n1 /proc/stat)"
  # The producer's own CPU time: bash's times, in the command substitution's shell, after it ended.
  # shellcheck disable=SC2086
  record "$1" "$("${CLIENT_PIN[@]}" ./bin/mqbench producer -n "$NS" -t "$2" -w "$THREADS" -s "$SIZE" --mode sync --duration "$DURATION" \
    --queues "$QUEUES" ${CLIENT_ARGS:-} --json || true; times >"$work/times-$1")"
  BUSY[$1]="$(machine_busy "$stat0" "$(head -n1 /proc/stat)")"
  if [[ -n "${TPS[$1]:-}" ]]; then
    CLIENT_CPU[$1]="$(awk -v t="${TPS[$1]}" -v d="${DURATION%s}" 'NR == 2 {
        split($1, u, /[ms]/); split($2, s, /[ms]/); c = u[1] * 60 + u[2] + s[1] * 60 + s[2]
        if (t * d > 0) printf "%.0f", c * 1e6 / (t * d); else printf "-" }' "$work/times-$1")"
  fi
  if [[ -n "$hop_pid" ]]; then
    wait "$hop_pid" || true
    local h
    h="$(cat "$work/hop-$1.json" 2>/dev/null || true)"
    if [[ -n "$h" ]]; then
      HOP_LINE[$1]="$(awk -v m="$(num "$h" mean)" -v p50="$(num "$h" p50)" -v p99="$(num "$h" p99)" -v n="$(num "$h" messages)" \
        'BEGIN { printf "mean %.3f p50 %.3f p99 %.3f ms (%d rounds)", m, p50, p99, n }')"
    fi
  fi
  # shellcheck disable=SC2086
  if [[ -n "${BROKER_PIDS:-}" && -n "${TPS[$1]:-}" ]]; then
    WROTE[$1]="$(awk -v w="$(($(written_bytes $BROKER_PIDS) - wrote))" -v t="${TPS[$1]}" -v d="${DURATION%s}" -v s="$SIZE" \
      'BEGIN { if (t * d * s > 0) printf "%.2f", w / (t * d * s); else printf "-" }')"
    DEV[$1]="$(awk -v w="$(($(device_written) - dev))" -v t="${TPS[$1]}" -v d="${DURATION%s}" -v s="$SIZE" \
      'BEGIN { if (t * d * s > 0 && w > 0) printf "%.2f", w / (t * d * s); else printf "-" }')"
    CPU[$1]="$(awk -v c="$(($(cpu_ticks $BROKER_PIDS) - ticks))" -v hz="$(getconf CLK_TCK)" -v t="${TPS[$1]}" -v d="${DURATION%s}" \
      'BEGIN { if (t * d > 0) printf "%.0f", c / hz * 1e6 / (t * d); else printf "-" }')"
  fi
  if [[ -n "${METRICS_PORTS:-}" ]]; then raft_summary "$1" "$before" "$(raft_scrape $METRICS_PORTS)"; fi
}

# grpc_broker KEY ENABLE: a fresh ASYNC_FLUSH broker for KEY, its gRPC endpoint on (ENABLE true) or off; sets
# LAST_PID and GRPC_PORT (listening when on). A gRPC port another process took between free_port and the bind
# stops the broker at start: it is started again on a new one (three tries).
grpc_broker() {
  local try
  for try in 1 2 3; do
    GRPC_PORT="$(free_port)"
    rm -rf "$work/$1"
    # shellcheck disable=SC2046
    if start_broker "bench-$1" "$work/$1" "$(free_port)" --flushDiskType=ASYNC_FLUSH --enableProxy="$2" \
      --grpcServerPort="$GRPC_PORT" $(profile_args "$1") "${BROKER_EXTRA[@]}"; then
      if [[ "$2" != true ]] || wait_port "$GRPC_PORT" "$LAST_PID" "$work/$1.log" 30; then return 0; fi
    fi
    echo "$1: the broker did not start (try $try of 3; a port taken meanwhile?)" >&2
    stop "$LAST_PID" 2>/dev/null || true
  done
  return 1
}

# grpc_send KEY MODE: the producer workload through RocketMQ 5's gRPC protocol (mqbench --client grpc) against
# one ASYNC_FLUSH broker: MODE local (the broker's own endpoint, enableProxy) or cluster (mqproxy in front of
# it; the proxy's CPU counts with the broker's).
grpc_send() {
  local key="$1" endpoint pids
  if [[ "$2" == local ]]; then
    grpc_broker "$key" true
    pids="$LAST_PID"
    endpoint="127.0.0.1:$GRPC_PORT"
  else
    grpc_broker "$key" false
    pids="$LAST_PID"
    start_listening "$work/$key-proxy.log" 30 "$(free_port)" ./bin/mqproxy -n "$NS" --grpcServerPort=@PORT@ \
      --logDir="$work/$key-proxy.logs"
    pids+=" $LAST_PID"
    endpoint="127.0.0.1:$BOUND_PORT"
  fi
  CLIENT_ARGS="--client grpc --endpoint $endpoint" BROKER_PIDS="$pids" ours "$key" "bench_${key//-/_}"
  local p
  for p in $pids; do stop "$p"; done
  rm -rf "$work/$key"
}

# consume KEY: CONSUME_MESSAGES SIZE-byte messages stored in a fresh ASYNC_FLUSH broker (gRPC endpoint on), then
# consumed by CONSUMERS goroutines, 32 messages a request: PULL_MESSAGE (pull) or the gRPC endpoint's
# ReceiveMessage and AckMessage (pop). The consumer's msgs/s (first message to last), the broker's CPU per
# message over the consuming run, the client's CPU per message and the machine's busy share.
consume() {
  local key="$1" args=(--client native) pid s ticks stat0
  grpc_broker "$key" true
  pid="$LAST_PID"
  [[ "$key" == pop ]] && args=(--client grpc --endpoint "127.0.0.1:$GRPC_PORT")
  echo "== $key: mqbench producer, $CONSUME_MESSAGES messages to consume" >&2
  s="$("${CLIENT_PIN[@]}" ./bin/mqbench producer -n "$NS" -t "bench_$key" -w "$THREADS" -s "$SIZE" --mode async -q "$CONSUME_MESSAGES" \
    --queues "$QUEUES" --json || true)"
  if [[ -z "$s" || "$(num "$s" messages)" != "$CONSUME_MESSAGES" ]]; then
    echo "$key: the backlog was not sent: $s" >&2
    stop "$pid"
    return 0
  fi
  disk_quiet "$pid"
  ticks="$(cpu_ticks "$pid")"
  stat0="$(head -n1 /proc/stat)"
  echo "== $key: mqbench consumer" >&2
  s="$("${CLIENT_PIN[@]}" ./bin/mqbench consumer -n "$NS" -t "bench_$key" -g "bench_${key}_group" -w "$CONSUMERS" --pull-batch 32 \
    -q "$CONSUME_MESSAGES" --duration 10m "${args[@]}" --json || true; times >"$work/times-$key")"
  BUSY[$key]="$(machine_busy "$stat0" "$(head -n1 /proc/stat)")"
  if [[ -n "$s" ]]; then
    TPS[$key]="$(num "$s" msgs_per_sec)"
    FAIL[$key]="$(($(num "$s" failed) + $(num "$s" rejected)))"
    CONSUMED[$key]="$(num "$s" messages)"
    local secs
    secs="$(num "$s" seconds)"
    CPU[$key]="$(awk -v c="$(($(cpu_ticks "$pid") - ticks))" -v hz="$(getconf CLK_TCK)" -v n="${CONSUMED[$key]}" \
      'BEGIN { if (n > 0) printf "%.1f", c / hz * 1e6 / n; else printf "-" }')"
    CLIENT_CPU[$key]="$(awk -v n="${CONSUMED[$key]}" 'NR == 2 {
        split($1, u, /[ms]/); split($2, s, /[ms]/); c = u[1] * 60 + u[2] + s[1] * 60 + s[2]
        if (n > 0) printf "%.1f", c * 1e6 / n; else printf "-" }' "$work/times-$key")"
    echo "== $key: consumed ${CONSUMED[$key]} in $secs s" >&2
  else
    echo "$key: no consumer summary (see the errors above)" >&2
  fi
  stop "$pid"
  rm -rf "$work/$key"
}

# raft KEY FLUSH: the workload against a fresh Raft group of three brokers (RocketMQ's DLedger keys,
# ARCHITECTURE.md; the leader registers as master), each with a metrics endpoint scraped around the run.
raft() {
  local key="$1" flush="$2" i peers="" rpids=()
  local -a rport bport mport
  for i in 0 1 2; do
    rport[i]="$(free_port)"
    bport[i]="$(free_port)"
    mport[i]="$(free_port)"
    peers+="${peers:+;}n$i-127.0.0.1:${rport[i]}"
  done
  for i in 0 1 2; do
    # shellcheck disable=SC2046
    GOMAXPROCS="${raft_procs:-${GOMAXPROCS:-}}" start_broker "bench-$key" "$work/$key-n$i" "${bport[i]}" \
      --flushDiskType="$flush" --enableDLegerCommitLog=true \
      --dLegerGroup="bench-$key" --dLegerPeers="$peers" --dLegerSelfId="n$i" --metricsPort="${mport[i]}" \
      $(profile_args "$key-n$i") "${RAFT_EXTRA[@]}"
    rpids+=("$LAST_PID")
  done
  wait_master "bench-$key" 60
  METRICS_PORTS="${mport[*]}" BROKER_PIDS="${rpids[*]}" ours "$key" "bench_${key//-/_}"
  for i in "${rpids[@]}"; do stop "$i"; done
  rm -rf "$work/$key-n0" "$work/$key-n1" "$work/$key-n2" # the data; the logs stay for KEEP=1
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
  record "$1" "$("${CLIENT_PIN[@]}" ./bin/natsbench pub -n "$(cat "$dir/urls")" --replicas "$3" -w "$THREADS" -s "$SIZE" \
    --duration "$DURATION" --json || true)"
  stop "$pid"
  rm -rf "$dir"
}

echo "$(machine_line) at start"
echo "workload: ${SIZE}-byte messages, $THREADS producer goroutines, sync sends (each waits for its ack), $DURATION per row"
if [[ -n "${PIN:-}" ]]; then
  echo "pinned (PIN=$PIN): servers on CPU ${SERVER_PIN[2]}, clients on CPU ${CLIENT_PIN[2]}"
fi
# GOMAXPROCS of each broker of the ms row and of the Raft rows (empty: the runtime's default).
ms_procs="$(node_procs 2)"
raft_procs="$(node_procs 3)"
echo "GOMAXPROCS of each broker (NODE_PROCS): one-broker rows ${GOMAXPROCS:-all cores}," \
  "ms ${ms_procs:-${GOMAXPROCS:-all cores}}, raft ${raft_procs:-${GOMAXPROCS:-all cores}}"
echo "== disk" >&2
disk="$(./bin/diskbench --dir "$work" --size "$DISK_SIZE" --json)"

start_namesrv "$work"
if want async || want sync; then
  for flush in ASYNC_FLUSH SYNC_FLUSH; do
    key=async
    [[ "$flush" == SYNC_FLUSH ]] && key=sync
    want "$key" || continue
    # shellcheck disable=SC2046
    start_broker "bench-$key" "$work/$key" "$(free_port)" --flushDiskType="$flush" $(profile_args "$key") \
      "${BROKER_EXTRA[@]}"
    pid=$LAST_PID
    BROKER_PIDS="$pid" ours "$key" "bench_$key"
    stop "$pid"
    rm -rf "$work/$key"
  done
fi
want grpc-send && grpc_send grpc-send local
want grpc-send-cluster && grpc_send grpc-send-cluster cluster
if want ms; then
  GOMAXPROCS="${ms_procs:-${GOMAXPROCS:-}}" start_broker bench-ms "$work/ms-master" "$(free_port)" \
    --brokerRole=SYNC_MASTER --flushDiskType=SYNC_FLUSH
  mpid=$LAST_PID
  GOMAXPROCS="${ms_procs:-${GOMAXPROCS:-}}" start_broker bench-ms "$work/ms-slave" "$(free_port)" \
    --brokerId=1 --brokerRole=SLAVE --flushDiskType=SYNC_FLUSH
  spid=$LAST_PID
  wait_log "$work/ms-master.log" "slave requests replication"
  BROKER_PIDS="$mpid $spid" ours ms bench_ms
  stop "$spid"
  stop "$mpid"
  rm -rf "$work/ms-master" "$work/ms-slave"
fi
raft_note=""
if want raft || want raft-async; then
  if raft_available; then
    want raft && raft raft SYNC_FLUSH
    want raft-async && raft raft-async ASYNC_FLUSH
  else
    raft_note="raft: not run — this mqbroker has no Raft mode yet (no enableDLegerCommitLog key; issue 6)"
  fi
fi
want pull && consume pull
want pop && consume pop
want nats-r1 && nats nats-r1 1 1 default
want nats-r1-always && nats nats-r1-always 1 1 always
want nats-r3 && nats nats-r3 3 3 default
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
line grpc-send "ours single, ASYNC_FLUSH, gRPC local mode" async
line grpc-send-cluster "ours single, ASYNC_FLUSH, gRPC via mqproxy" async
line sync "ours single, SYNC_FLUSH (fsync)" nats-r1-always
line ms "ours SYNC_MASTER+slave, SYNC_FLUSH (2 copies)" nats-r3-always
line raft "ours Raft x3, SYNC_FLUSH (quorum, synced)" nats-r3-always
line raft-async "ours Raft x3, ASYNC_FLUSH (quorum, memory)" nats-r3
line nats-r1 "NATS R1 file, fsync every 2 min (default)"
line nats-r1-always "NATS R1 file, sync_interval: always"
line nats-r3 "NATS R3 file x3 servers, default sync"
line nats-r3-always "NATS R3 file x3 servers, sync_interval: always"
if [[ -n "$raft_note" ]]; then echo "$raft_note"; fi
echo "x msgs/s, x p99: ours divided by the matching NATS row (above 1: more messages/s; above 1: a longer p99)"
# /proc/PID/io write_bytes of our brokers during the measured run (all nodes of a row) per byte of message
# body acknowledged. The kernel counts it when a page is dirtied, 4 KiB each time, so a page dirtied again
# after every sync (the CommitLog's last page, ConsumeQueue and index pages, queue offsets written in place)
# counts each time: a measure of page re-dirtying rather than of bytes reaching the disk.
for k in async grpc-send grpc-send-cluster sync ms raft raft-async; do
  if [[ -n "${WROTE[$k]:-}" ]]; then printf '%-16s bytes of pages dirtied per body byte acknowledged: %s\n' "$k" "${WROTE[$k]}"; fi
done
# Bytes the block device holding the data wrote during the measured run (/sys/class/block, every process)
# per byte of message body acknowledged: records with their headers, each node's copy, the ConsumeQueues and
# index, the zeros written ahead (store/warm.go) and whatever a sync writes again.
for k in async grpc-send grpc-send-cluster sync ms raft raft-async; do
  if [[ -n "${DEV[$k]:-}" ]]; then printf '%-16s device bytes written per body byte acknowledged: %s\n' "$k" "${DEV[$k]}"; fi
done
# /proc/PID/stat user + system time of our brokers during the measured run (all nodes of a row) per message
# acknowledged: what a message costs the servers in CPU, whatever else the machine runs (its load changes
# the msgs/s a row reaches far more than this).
for k in async grpc-send grpc-send-cluster sync ms raft raft-async; do
  if [[ -n "${CPU[$k]:-}" ]]; then printf '%-16s broker CPU microseconds per message acknowledged: %s\n' "$k" "${CPU[$k]}"; fi
done
# The producer's own CPU time (user + system, bash's times) per message acknowledged, and the share of the
# machine's CPU that was busy during the measured run (/proc/stat): with the brokers' line above, where the
# cores went (raftlog/doc.go, "Where the replicate stage goes").
for k in async grpc-send grpc-send-cluster sync ms raft raft-async; do
  if [[ -n "${CLIENT_CPU[$k]:-}" ]]; then
    printf '%-16s client CPU microseconds per message acknowledged: %s; machine CPU busy during the run: %s %%\n' \
      "$k" "${CLIENT_CPU[$k]}" "${BUSY[$k]:--}"
  fi
done
# The gRPC rows against the 4.x path of the same run (issue 38's goals: local-mode send at least 0.7x the
# remoting send, cluster-mode send at least 0.45x, receive + ack at least 0.3x pull).
for k in grpc-send grpc-send-cluster; do
  if [[ -n "${TPS[$k]:-}" && -n "${TPS[async]:-}" ]]; then
    printf '%-16s x async: msgs/s %s, broker CPU per message %s\n' "$k" "$(ratio "${TPS[$k]}" "${TPS[async]}")" \
      "$(ratio "${CPU[$k]:-}" "${CPU[async]:-}")"
  fi
done
if [[ -n "${TPS[pull]:-}${TPS[pop]:-}" ]]; then
  echo
  printf '%-16s %-58s %10s %9s %6s %12s %12s %6s\n' row "consumers ($CONSUMERS goroutines, 32 a request)" "msgs/s" consumed fails "broker us/msg" "client us/msg" "busy %"
  for k in pull pop; do
    [[ -n "${TPS[$k]:-}" ]] || continue
    d="PULL_MESSAGE + commit with the next pull (native)"
    [[ "$k" == pop ]] && d="gRPC ReceiveMessage + AckMessage (broker's pop, local mode)"
    printf '%-16s %-58s %10.0f %9s %6s %12s %12s %6s\n' "$k" "$d" "${TPS[$k]}" "${CONSUMED[$k]:-}" "${FAIL[$k]:-}" \
      "${CPU[$k]:--}" "${CLIENT_CPU[$k]:--}" "${BUSY[$k]:--}"
  done
  if [[ -n "${TPS[pop]:-}" && -n "${TPS[pull]:-}" ]]; then
    printf '%-16s x pull: msgs/s %s, broker CPU per message %s\n' pop "$(ratio "${TPS[pop]}" "${TPS[pull]}")" \
      "$(ratio "${CPU[pop]:-}" "${CPU[pull]:-}")"
  fi
fi
# Raft rows against our single broker of the same flush mode, and what the nodes' metrics say.
for k in raft raft-async; do
  [[ -n "${TPS[$k]:-}" ]] || continue
  single=sync
  [[ "$k" == raft-async ]] && single=async
  if [[ -n "${TPS[$single]:-}" ]]; then
    printf '%-16s x single %s: msgs/s %s, p99 %s\n' "$k" "$single" "$(ratio "${TPS[$k]}" "${TPS[$single]}")" \
      "$(ratio "${P99[$k]}" "${P99[$single]}")"
  fi
  if [[ -n "${RAFT_LINE[$k]:-}" ]]; then printf '%-16s %s\n' "$k" "${RAFT_LINE[$k]}"; fi
done
# HOP: a bare round trip between two processes of no broker's (mqbench hop), timed beside the row's measured
# run: what one hop costs at the row's load, against the quorum part of a Raft row's replicate stage.
for k in async sync ms raft raft-async; do
  if [[ -n "${HOP_LINE[$k]:-}" ]]; then printf '%-16s a bare round trip between two processes beside the row (mqbench hop --every %s): %s\n' "$k" "$HOP" "${HOP_LINE[$k]}"; fi
done
if [[ -n "$PROFILE" ]]; then
  for f in "$work"/prof-*.pprof; do
    [[ -s "$f" ]] || continue
    echo
    echo "CPU profile $(basename "$f" .pprof) ($f), top 12 by flat time:"
    go tool pprof -top -nodecount=12 ./bin/mqbroker "$f" 2>/dev/null | sed -n '/flat%/,$p'
  done
fi
