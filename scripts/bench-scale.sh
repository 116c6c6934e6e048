#!/usr/bin/env bash
# scripts/bench-scale.sh (make bench-scale): the scale runs of issue 8, point 3, against one broker on loopback
# (a name server and a broker on free ports, data in a temp folder on the disk of ${TMPDIR:-/tmp}):
#
#   topics    the same producer load (mqbench producer, SIZE-byte messages, THREADS goroutines, sync sends,
#             DURATION) sent to one topic, then spread over 100 and 1,000 topics (--topics N: Scale_0..N-1,
#             QUEUES queues each, created before the run; each count on a fresh broker, after a 5 s warm-up
#             run); messages/s and p99 of each as a ratio to the one-topic run; with ROUNDS > 1 the counts
#             run in turn that many times, each round's ratios to its own first count, and the median and
#             range of each count's ratios close the table (this machine's runs differ by several percent)
#   recovery  a CommitLog filled to SMALL_GIB (1), then to BACKLOG_GIB (10) GiB of records; each time the
#             broker is killed with SIGKILL while a producer sends (after dispatch, and the checkpoint, caught
#             up, so both kills leave the same kind of tail: what the load wrote in KILL_AFTER seconds), restarted,
#             and timed from the start of the process until it answers a send and a pull of the message sent
#             (brokerprobe); the broker's own log line says where its recovery scan started and how many bytes
#             it checked
#   drain     the same BACKLOG_GIB backlog (topic Backlog) drained by one consumer (mqbench consumer, the
#             native client, from the first offset, until idle for 5 s), four times, each after an ordered
#             restart of the broker and a drop of the page cache (sync; echo 3 > /proc/sys/vm/drop_caches; as
#             root; pages a process has mapped cannot be dropped, the restart unmaps them, and its recovery reads
#             the last files back): pulls of 32 messages on a broker with RocketMQ's defaults; pulls of 256 on a
#             broker whose maxTransfer{Count,Bytes}OnMessageIn{Memory,Disk} allow them (what an operator sets for
#             bulk consumption); the same with coldReadEnable=false (every read through the page cache);
#             the same with a producer of SIDE_RATE msgs/s to another topic during the
#             drain's first SIDE_SECS s, its p99 next to the same producer's alone. In MB/s of message bodies
#             and of CommitLog bytes, next to the disk's raw sequential read of one CommitLog file (dd
#             iflag=direct) and diskbench's buffered cold read, measured in the same run
#
# Settings: DURATION (60s), THREADS (16), SIZE (1024), QUEUES (8), TOPIC_COUNTS ("1 100 1000"), ROUNDS (1), FLUSH
# (ASYNC_FLUSH), SMALL_GIB (1), BACKLOG_GIB (10), SIDE_RATE (2000), SIDE_SECS (10), KILL_AFTER (5 seconds of
# load before each SIGKILL), PARTS ("topics recovery drain"; drain needs recovery's backlog), KEEP=1 (keep the temp folder and logs),
# BROKER_ARGS (more --key=value for the topics part's brokers; --cpuprofile=FILE_%d profiles each count, %d its topics).
# The backlog needs about BACKLOG_GIB * 1.25 GiB of free disk; the script refuses to start without twice that.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/common.sh

DURATION="${DURATION:-60s}"
THREADS="${THREADS:-16}"
SIZE="${SIZE:-1024}"
QUEUES="${QUEUES:-8}"
TOPIC_COUNTS="${TOPIC_COUNTS:-1 100 1000}"
ROUNDS="${ROUNDS:-1}"
FLUSH="${FLUSH:-ASYNC_FLUSH}"
SMALL_GIB="${SMALL_GIB:-1}"
BACKLOG_GIB="${BACKLOG_GIB:-10}"
SIDE_RATE="${SIDE_RATE:-2000}"
SIDE_SECS="${SIDE_SECS:-10}"
KILL_AFTER="${KILL_AFTER:-5}"
PARTS="${PARTS:-topics recovery drain}"
read -r -a BROKER_EXTRA <<<"${BROKER_ARGS:-}"
GIB=$((1 << 30))

bench_init bench-scale diskbench brokerprobe

part() { [[ " $PARTS " == *" $1 "* ]]; }

if part recovery || part drain; then
  free_kib="$(df -Pk "$work" | awk 'NR==2{print $4}')"
  need_kib=$((BACKLOG_GIB * 5 / 4 * 2 * 1024 * 1024))
  if ((free_kib < need_kib)); then
    echo "bench-scale: $((free_kib / 1024 / 1024)) GiB free under $work, want $((need_kib / 1024 / 1024)) GiB for a $BACKLOG_GIB GiB backlog (BACKLOG_GIB)" >&2
    exit 1
  fi
fi

echo "$(machine_line) at start"
start_namesrv "$work"

# producer ARGS...: one mqbench producer run against $NS with the shared workload flags; prints its JSON summary.
producer() {
  ./bin/mqbench producer -n "$NS" -w "$THREADS" -s "$SIZE" --queues "$QUEUES" --json "$@"
}

# ---- topics: the same load over 1, 100, 1000 topics ------------------------------------------------------------
if part topics; then
  echo "== topics: $SIZE-byte messages, $THREADS goroutines, sync sends, $DURATION per count, $QUEUES queues per topic, $FLUSH"
  printf '%-8s %9s %10s %9s %6s %10s %9s %8s %8s\n' topics "setup s" "msgs/s" "p99 ms" fails "x msgs/s" "x p99" "stop s" "us/msg"
  declare -A ratios=()
  for _ in $(seq "$ROUNDS"); do
    base_tps=""
    base_p99=""
    for n in $TOPIC_COUNTS; do
      dir="$work/topics-$n"
      extra=()
      for a in ${BROKER_EXTRA[@]+"${BROKER_EXTRA[@]}"}; do extra+=("${a//%d/$n}"); done
      start_broker bench-scale "$dir" "$(free_port)" --flushDiskType="$FLUSH" ${extra[@]+"${extra[@]}"}
      pid=$LAST_PID
      echo "== topics $n: warm-up (creates the topics)" >&2
      t0="$(date +%s.%N)"
      w="$(producer -t Scale --topics "$n" --mode sync --duration 5s || true)"
      t1="$(date +%s.%N)"
      # Setup: the warm-up's wall time less its 5 s of sending (topic creation and routes, mostly).
      setup="$(awk -v a="$t0" -v b="$t1" -v s="$(num "$w" seconds)" 'BEGIN{printf "%.1f", b-a-s}')"
      echo "== topics $n: mqbench producer --topics $n" >&2
      ticks="$(cpu_ticks "$pid")"
      s="$(producer -t Scale --topics "$n" --mode sync --duration "$DURATION" || true)"
      ticks=$(($(cpu_ticks "$pid") - ticks))
      t0="$(date +%s.%N)"
      stop "$pid"
      t1="$(date +%s.%N)"
      stopped="$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')"
      rm -rf "$dir"
      if [[ -z "$s" ]]; then
        echo "$n: no summary (see the errors above)"
        continue
      fi
      tps="$(num "$s" msgs_per_sec)"
      p99="$(num "$s" p99)"
      [[ -n "$base_tps" ]] || { base_tps="$tps"; base_p99="$p99"; }
      # The broker's CPU (user + system) per message of the run.
      us="$(awk -v c="$ticks" -v hz="$(getconf CLK_TCK)" -v t="$tps" -v d="$(num "$s" seconds)" \
        'BEGIN { if (t * d > 0) printf "%.1f", c / hz * 1e6 / (t * d); else printf "-" }')"
      printf '%-8s %9s %10.0f %9.2f %6d %10s %9s %8s %8s\n' "$n" "$setup" "$tps" "$p99" "$(($(num "$s" failed) + $(num "$s" rejected)))" \
        "$(ratio "$tps" "$base_tps")" "$(ratio "$p99" "$base_p99")" "$stopped" "$us"
      ratios[$n]+="$(ratio "$tps" "$base_tps") "
    done
  done
  if ((ROUNDS > 1)); then
    for n in $TOPIC_COUNTS; do
      # shellcheck disable=SC2086
      printf '%s\n' ${ratios[$n]} | sort -g | awk -v n="$n" '{v[NR]=$1} END{printf "%-8s x msgs/s over %d rounds: median %s, lowest %s, highest %s\n", n, NR, v[int((NR+1)/2)], v[1], v[NR]}'
    done
  fi
  echo "x msgs/s, x p99: each count divided by the first count's run; setup s: topic creation before the warm-up's sending;"
  echo "stop s: the broker's shutdown after SIGTERM (SIGKILL after STOP_WAIT, $STOP_WAIT s, said above when it came to that);"
  echo "us/msg: the broker's CPU time (user + system) during the run per message sent"
  echo
fi

# ---- recovery: SIGKILL with SMALL_GIB and BACKLOG_GIB of CommitLog, time to serving -----------------------------
big="$work/big"
bport=""
bpid=""
# commitlog_bytes: the broker's CommitLog max offset (mqadmin brokerStatus).
commitlog_bytes() {
  broker_stat commitLogMaxOffset
}
# fill_to GIB: batch sends to topic Backlog until the CommitLog holds GIB GiB (two rounds at most: the first
# sends what the body sizes suggest, the second the rest at the measured bytes per record).
fill_to() {
  local want=$(($1 * GIB)) have per=$((SIZE + 200)) n
  for _ in 1 2 3; do
    have="$(commitlog_bytes)"
    ((have < want)) || return 0
    n=$(((want - have) / per + 1))
    echo "== fill: $n messages to topic Backlog (CommitLog at $have bytes, want $want)" >&2
    local before=$have
    producer -t Backlog --mode batch -b 16 -q "$n" >/dev/null
    have="$(commitlog_bytes)"
    per=$(((have - before) / n))
    ((per > 0)) || per=$((SIZE + 200))
  done
}
# broker_stat KEY: one figure of the broker's runtime table (mqadmin brokerStatus).
broker_stat() {
  ./bin/mqadmin brokerStatus -n "$NS" -b "127.0.0.1:$bport" 2>/dev/null | awk -v k="$1" '$1==k{print $NF}'
}
# wait_dispatched: until the broker has dispatched its whole CommitLog (dispatchBehindBytes 0; at most 5 min).
# The batch fill writes faster than dispatch runs, and the checkpoint's safe point cannot pass dispatch.
wait_dispatched() {
  for _ in $(seq 1 1200); do
    [[ "$(broker_stat dispatchBehindBytes)" == 0 ]] && return
    sleep 0.25
  done
  echo "dispatch still $(broker_stat dispatchBehindBytes) bytes behind after 5 min" >&2
  return 1
}
# checkpoint_offset FIELD_OFFSET: an int64 of the broker's checkpoint file (store/doc.go: 40 is
# physicFlushedOffset, 48 logicsFlushedOffset; big-endian).
checkpoint_offset() {
  od -An -t d8 --endian=big -j "$1" -N 8 "$big/checkpoint" 2>/dev/null | tr -d ' '
}
# wait_checkpoint END: until the checkpoint says the CommitLog and the ConsumeQueues are durable up to END
# (the ConsumeQueue flusher moves it every flushConsumeQueueThoroughInterval, 60 s; at most 3 min).
wait_checkpoint() {
  for _ in $(seq 1 720); do
    local p l
    p="$(checkpoint_offset 40)"
    l="$(checkpoint_offset 48)"
    if [[ -n "$p" && -n "$l" ]] && ((p >= $1 && l >= $1)); then return; fi
    sleep 0.25
  done
  echo "checkpoint not at $1 after 3 min (physicFlushedOffset $(checkpoint_offset 40), logicsFlushedOffset $(checkpoint_offset 48))" >&2
  return 1
}
# kill_restart LABEL: a producer load for KILL_AFTER s, SIGKILL of the broker under it, then a restart timed
# until it serves. Prints the row. Before the load, dispatch catches up with the fill and the checkpoint with
# dispatch, so both kills leave the same kind of tail: what KILL_AFTER s of the load wrote after the
# checkpoint (a crash at any other moment leaves at most flushConsumeQueueThoroughInterval of writes more).
kill_restart() {
  local label="$1" size
  wait_dispatched
  size="$(commitlog_bytes)"
  wait_checkpoint "$size"
  sync
  echo "== $label: load, then SIGKILL" >&2
  producer -t Backlog --mode sync --duration "$((KILL_AFTER + 5))s" >"$work/load.json" 2>/dev/null &
  local lpid=$!
  sleep "$KILL_AFTER" # the length of the load before the kill, not a synchronisation
  kill -KILL "$bpid"
  wait "$bpid" 2>/dev/null || true
  kill -TERM "$lpid" 2>/dev/null || true
  wait "$lpid" 2>/dev/null || true
  mv "$big.log" "$big.$label.crashed.log"
  echo "== $label: restart" >&2
  local t0
  t0="$(date +%s%N)"
  start_bg "$big.log" ./bin/mqbroker -n "$NS" --brokerName=bench-big --brokerIP1=127.0.0.1 --listenPort="$bport" \
    --metricsExporterType=DISABLE --logDir="$big.logs" --storePathRootDir="$big" --flushDiskType="$FLUSH"
  bpid=$LAST_PID
  local p
  p="$(./bin/brokerprobe --addr "127.0.0.1:$bport" --broker bench-big --topic Backlog --since "$t0" --timeout 10m --json)"
  local rec scanned
  rec="$(grep -m1 'recovering store' "$big.log" || true)"
  scanned="$(sed -n 's/.*scanFrom=\([0-9]*\).*commitlogEnd=\([0-9]*\).*/\1 \2/p' <<<"$rec" | awk '{printf "%.0f", ($2-$1)/1048576}')"
  printf '%-10s %14.2f %12.3f %12.3f %14s   %s\n' "$label" "$(awk -v b="$size" 'BEGIN{print b/2^30}')" \
    "$(num "$p" send_ok_sec)" "$(num "$p" serving_sec)" "${scanned:-?}" "$(sed -n 's/.*\(abnormal=[a-z]*\).*/\1/p' <<<"$rec")"
}

if part recovery || part drain; then
  start_broker bench-big "$big" "$(free_port)" --flushDiskType="$FLUSH"
  bpid=$LAST_PID
  bport=$BROKER_PORT
fi
if part recovery; then
  echo "== recovery: SIGKILL after $KILL_AFTER s of load ($THREADS goroutines, sync sends, $FLUSH), restart timed to a send and a pull answered"
  printf '%-10s %14s %12s %12s %14s\n' row "CommitLog GiB" "send ok s" "serving s" "scanned MiB"
  fill_to "$SMALL_GIB"
  kill_restart "${SMALL_GIB}GiB"
  fill_to "$BACKLOG_GIB"
  kill_restart "${BACKLOG_GIB}GiB"
  echo "serving s: from the start of mqbroker to a send and a pull of it answered; scanned MiB: CommitLog bytes the"
  echo "recovery checked record by record (from the file holding the checkpoint's safe point to the end)"
  echo
elif part drain; then
  fill_to "$BACKLOG_GIB"
fi

# ---- drain: a cold backlog consumed in MB/s, next to the disk's raw read ----------------------------------------
# cold_restart ARGS...: an ordered restart of the backlog's broker (with ARGS), then the page cache dropped. The
# restart matters: drop_caches cannot drop a page some process has mapped, and dispatch read every record
# through the broker's mapping, so without it the "cold" backlog stayed cached. The restarted broker's recovery
# reads its last files back in (resident_mib says how much was cached when the drain started).
cold_restart() {
  echo "== drain: ordered restart of the broker $*, then drop_caches" >&2
  stop "$bpid"
  start_bg "$big.log" ./bin/mqbroker -n "$NS" --brokerName=bench-big --brokerIP1=127.0.0.1 --listenPort="$bport" \
    --metricsExporterType=DISABLE --logDir="$big.logs" --storePathRootDir="$big" --flushDiskType="$FLUSH" "$@"
  bpid=$LAST_PID
  ./bin/brokerprobe --addr "127.0.0.1:$bport" --broker bench-big --topic Backlog --since "$(date +%s%N)" --timeout 10m --json >/dev/null
  sync
  dropped="page cache dropped (drop_caches)"
  if ! echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then
    dropped="drop_caches not permitted: CommitLog files advised out with diskbench --evict"
    ./bin/diskbench --evict "$big/commitlog"
  fi
  resident_mib="$(fincore -b -n -o RES "$big"/commitlog/* 2>/dev/null | awk '{s+=$1} END{printf "%.0f", s/1048576}')"
}
# drain_row LABEL BATCH [SIDE]: the whole topic Backlog drained by a new group with pull batches of BATCH; with
# SIDE, a producer sends SIDE_RATE msgs/s to another topic during the drain's first SIDE_SECS s. Prints the row.
drain_row() {
  local label="$1" batch="$2" side="${3:-}" d spid="" sp99="-"
  if [[ -n "$side" ]]; then
    producer -t DrainSide -w 4 --rate "$SIDE_RATE" --mode sync --duration "${SIDE_SECS}s" >"$work/side.json" 2>/dev/null &
    spid=$!
  fi
  d="$(./bin/mqbench consumer -n "$NS" -t Backlog -g "drain_${#rows[@]}" -w "$THREADS" --pull-batch "$batch" --from first --idle 5s --json || true)"
  if [[ -n "$spid" ]]; then
    wait "$spid" || true
    sp99="$(num "$(cat "$work/side.json")" p99)"
  fi
  local msgs secs cl_mbps
  msgs="$(num "$d" messages)"
  drained="$msgs"
  secs="$(num "$d" seconds)"
  # The CommitLog bytes drained: the whole log (topic Backlog is nearly all it holds).
  cl_mbps="$(awk -v b="$clbytes" -v m="$msgs" -v s="$secs" 'BEGIN{ if (s>0 && m>0) printf "%.0f", b/1048576/s; else printf "-" }')"
  rows+=("$(printf '%-30s %9s %10.0f %10.0f %9s %11s %11s %9s' "$label" "$resident_mib" "$(num "$d" msgs_per_sec)" \
    "$(num "$d" mb_per_sec)" "$cl_mbps" "$(ratio "$cl_mbps" "$dd_mbps")" "$(ratio "$cl_mbps" "$cold_mbps")" "$sp99")")
}
if part drain; then
  echo "== drain: topic Backlog from its first offset, one consumer, $THREADS goroutines, after a restart and drop_caches" >&2
  clbytes="$(commitlog_bytes)"
  first_file="$(ls "$big/commitlog" | head -n1)"
  # The disk first, with the broker's pages dropped too, so the rows can carry their ratios.
  stop "$bpid"
  sync
  echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
  dd_out="$(dd if="$big/commitlog/$first_file" of=/dev/null bs=1M iflag=direct 2>&1 | tail -n1)"
  dd_mbps="$(awk '{for(i=1;i<=NF;i++) if ($i ~ /^[0-9.]+$/ && $(i+1) ~ /^s,?$/) { printf "%.0f", 1073741824/1048576/$i; exit }}' <<<"$dd_out")"
  disk="$(./bin/diskbench --dir "$work" --size $((2 * GIB)) --json)"
  cold_mbps="$(num "$disk" cold_read_mb_per_sec)"
  rows=()
  # RocketMQ's defaults: a pull of at most 32 messages (the clients' pullBatchSize and the broker's
  # maxTransferCountOnMessageInMemory), 8 when the broker thinks the data is on disk.
  cold_restart
  drain_row "batch 32, broker defaults" 32
  # What an operator sets for bulk consumption: the client asks for 256 and the broker's caps allow them.
  bulk=(--maxTransferCountOnMessageInMemory=256 --maxTransferBytesOnMessageInMemory=1048576
    --maxTransferCountOnMessageInDisk=256 --maxTransferBytesOnMessageInDisk=1048576)
  cold_restart "${bulk[@]}"
  drain_row "batch 256, caps raised" 256
  # The same with every read through the mapping (the store's cold reads off: store/cold_read.go).
  cold_restart "${bulk[@]}" --coldReadEnable=false
  drain_row "batch 256, caps, no cold reads" 256
  cold_restart "${bulk[@]}"
  drain_row "batch 256, caps raised, +sends" 256 side
  # The side producer alone on the same (now warm) broker, for its p99 without a drain.
  alone="$(producer -t DrainSide -w 4 --rate "$SIDE_RATE" --mode sync --duration "${SIDE_SECS}s" 2>/dev/null || true)"
  printf 'backlog: %.2f GiB of CommitLog, %s messages; before each row an ordered restart and %s\n' \
    "$(awk -v b="$clbytes" 'BEGIN{print b/2^30}')" "$drained" "$dropped"
  printf '%-30s %9s %10s %10s %9s %11s %11s %9s\n' row "cached MiB" "msgs/s" "body MB/s" "CL MB/s" "x raw dd" "x cold read" "sends p99"
  printf '%s\n' "${rows[@]}"
  printf 'raw: dd iflag=direct, 1 MiB reads of one CommitLog file %s MB/s; diskbench cold read (buffered, after fadvise DONTNEED) %.0f MB/s\n' \
    "$dd_mbps" "$cold_mbps"
  printf 'CL MB/s: CommitLog bytes drained per second; cached MiB: CommitLog still in the page cache when the drain started;\n'
  printf 'sends p99: ms, a producer of %s msgs/s (4 goroutines, sync) to another topic during the first %s s of the drain;\n' "$SIDE_RATE" "$SIDE_SECS"
  printf '  the same producer alone afterwards: p99 %s ms, %.0f msgs/s\n' "$(num "$alone" p99)" "$(num "$alone" msgs_per_sec)"
  printf '%s pulls in flight (one per queue)\n' "$QUEUES"
fi
echo "$(machine_line) at end"
