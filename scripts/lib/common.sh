# scripts/lib/common.sh: helpers shared by the benchmark scripts (source it after `cd` to the repository).
# Processes started with start_bg are stopped by stop_all (newest first, SIGTERM then wait), which the
# scripts call from their EXIT trap.

# The pids started with start_bg, oldest first.
BG_PIDS=()
# The pid of the last process start_bg started.
LAST_PID=""

# A command prefix for every process start_bg starts (the servers; bench-compare's PIN sets it to taskset -c
# CPUS); empty: none.
SERVER_PIN=()

# start_bg LOG CMD...: starts CMD in the background with its output in LOG, and records its pid in LAST_PID.
start_bg() {
  local log="$1"
  shift
  "${SERVER_PIN[@]}" "$@" >"$log" 2>&1 &
  LAST_PID=$!
  BG_PIDS+=("$LAST_PID")
}

# STOP_WAIT: seconds stop waits for a process after SIGTERM before it sends SIGKILL.
STOP_WAIT="${STOP_WAIT:-120}"

# stop PID: SIGTERM and wait (ordered shutdown), at most STOP_WAIT seconds, then SIGKILL with a line on stderr
# that says so; nothing when PID is empty or gone.
stop() {
  if [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; then
    kill -TERM "$1" 2>/dev/null || true
    local deadline=$((SECONDS + STOP_WAIT))
    while ((SECONDS < deadline)) && kill -0 "$1" 2>/dev/null; do
      sleep 0.1
    done
    if kill -0 "$1" 2>/dev/null; then
      echo "stop: process $1 ($(ps -o args= -p "$1" 2>/dev/null | cut -c1-60)) still running ${STOP_WAIT} s after SIGTERM; SIGKILL" >&2
      kill -KILL "$1" 2>/dev/null || true
    fi
    wait "$1" 2>/dev/null || true
  fi
}

# stop_all: stops every process start_bg started, newest first.
stop_all() {
  local i
  for ((i = ${#BG_PIDS[@]} - 1; i >= 0; i--)); do
    stop "${BG_PIDS[i]}"
  done
  BG_PIDS=()
  rm -f "$PORTS_FILE"
}

# The ports free_port handed out, one a line, so that ports picked before their servers listen never repeat
# (free_port runs in $(...) subshells, so a file rather than a variable; stop_all removes it).
PORTS_FILE="${TMPDIR:-/tmp}/rocketraft-ports.$$"

# free_port prints a port free on 127.0.0.1 whose next port is free too (a broker's HA port is listenPort+1),
# neither of them handed out before by this script.
free_port() {
  local p
  for _ in $(seq 1 100); do
    p=$((20000 + RANDOM % 40000))
    if grep -qxE "$((p - 1))|$p|$((p + 1))" "$PORTS_FILE" 2>/dev/null; then
      continue
    fi
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && ! (exec 3<>"/dev/tcp/127.0.0.1/$((p + 1))") 2>/dev/null; then
      echo "$p" >>"$PORTS_FILE"
      echo "$p"
      return
    fi
  done
  echo "no free port found" >&2
  return 1
}

# wait_port PORT PID LOG [SECONDS [HOST]]: wait until HOST:PORT (default 127.0.0.1) accepts connections (at
# most SECONDS, default 10), failing if PID exits first.
wait_port() {
  local tries=$(( ${4:-10} * 20 ))
  for _ in $(seq 1 "$tries"); do
    if (exec 3<>"/dev/tcp/${5:-127.0.0.1}/$1") 2>/dev/null; then return; fi
    if ! kill -0 "$2" 2>/dev/null; then
      echo "process $2 exited before listening on $1; its log:" >&2
      cat "$3" >&2
      return 1
    fi
    sleep 0.05
  done
  echo "port $1 not listening after ${4:-10} s" >&2
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

# ratio A B: A/B with two decimals, or "-" when B is 0 or empty.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b+0 > 0) printf "%.2f", a/b; else printf "-" }'; }

# cpu_ticks PID...: the CPU time (user + system, in clock ticks) the processes have used so far
# (/proc/PID/stat fields 14 and 15; the command name in field 2 has no spaces here).
cpu_ticks() {
  local p t=0 c
  for p in "$@"; do
    c="$(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || true)"
    t=$((t + ${c:-0}))
  done
  echo "$t"
}

# machine_line: cores, load average and Go version, for the head of every report.
machine_line() {
  echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $(go version | cut -d' ' -f3)"
}

# start_listening LOG SECONDS PORT CMD...: starts CMD with start_bg (output in LOG; @PORT@ in its arguments
# becomes the port) and waits until it listens on the port, at most SECONDS. Ports are picked before the
# server binds them, so on a shared machine another process may take one first: when the server exits saying
# "address already in use", it is started again on a new free_port (three tries). Sets LAST_PID and
# BOUND_PORT.
start_listening() {
  local log="$1" secs="$2" port="$3" try
  shift 3
  for try in 1 2 3; do
    start_bg "$log" "${@//@PORT@/$port}"
    if wait_port "$port" "$LAST_PID" "$log" "$secs" 2>"$log.wait"; then
      BOUND_PORT="$port"
      rm -f "$log.wait"
      return
    fi
    if kill -0 "$LAST_PID" 2>/dev/null || ! grep -q 'address already in use' "$log"; then
      break
    fi
    echo "$log: port $port (or the next) was taken meanwhile; try $try of 3 failed" >&2
    port="$(free_port)"
  done
  cat "$log.wait" >&2
  rm -f "$log.wait"
  return 1
}

# start_namesrv DIR: a name server on a free port, data in DIR; sets NS (host:port) and NS_PID.
start_namesrv() {
  mkdir -p "$1/namesrv"
  start_listening "$1/namesrv.log" 10 "$(free_port)" ./bin/mqnamesrv --listenPort=@PORT@ --metricsExporterType=DISABLE --logDir="$1/logs" \
    --rocketmqHome="$1/namesrv" --kvConfigPath="$1/namesrv/kvConfig.json"
  NS_PID=$LAST_PID
  NS="127.0.0.1:$BOUND_PORT"
}

# start_broker NAME DIR PORT [--key=value...]: a broker registered with $NS, data in DIR, log in DIR.log,
# listening on PORT or, when that was taken meanwhile, another (start_listening); waits until it listens (60 s:
# a broker recovering a large store takes a while). Sets LAST_PID and BROKER_PORT.
start_broker() {
  local name="$1" dir="$2" port="$3"
  shift 3
  start_listening "$dir.log" 60 "$port" ./bin/mqbroker -n "$NS" --brokerName="$name" --brokerIP1=127.0.0.1 \
    --listenPort=@PORT@ --metricsExporterType=DISABLE --logDir="$dir.logs" --storePathRootDir="$dir" "$@"
  BROKER_PORT="$BOUND_PORT"
}

# raft_available: whether this build of mqbroker knows the Raft mode's keys (issue 6).
# grep reads the whole listing (no -q): a grep that quits at the match would kill mqbroker with SIGPIPE,
# which pipefail turns into "no Raft mode".
raft_available() { ./bin/mqbroker -p 2>/dev/null | grep '^enableDLegerCommitLog=' >/dev/null; }

# wait_master NAME [SECONDS]: wait until the name server $NS lists a master (brokerId 0) for brokerName NAME,
# at most SECONDS (default 60): a Raft group registers its leader as master once it has elected one.
wait_master() {
  local tries=$(( ${2:-60} * 4 ))
  for _ in $(seq 1 "$tries"); do
    if ./bin/mqadmin clusterList -n "$NS" --json 2>/dev/null | tr -d ' \n' | grep -q "\"brokerName\":\"$1\",\"brokerId\":0,"; then
      return
    fi
    sleep 0.25
  done
  echo "no master of $1 registered with $NS after ${2:-60} s" >&2
  return 1
}

# bench_init NAME TOOL...: builds bin/ (make build) and TOOLs of the bench module (bench/cmd/TOOL) into bin/,
# makes the temp folder $work (NAME.XXXXXX under $TMPDIR), and sets the traps: on exit every process start_bg
# started is stopped and $work removed, unless KEEP is set; Ctrl-C and SIGTERM exit.
bench_init() {
  local name="$1" t pkgs=()
  shift
  make build >/dev/null
  for t in "$@"; do pkgs+=("./cmd/$t"); done
  # -mod=mod: the bench module follows this checkout's go.mod (replace ../), whose requirements may have moved.
  (cd bench && go build -mod=mod -o ../bin/ "${pkgs[@]}")
  work="$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")"
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
}

# bench_cleanup: bench_init's exit trap.
bench_cleanup() {
  stop_all
  if [[ -z "${KEEP:-}" ]]; then rm -rf "$work"; else echo "kept $work" >&2; fi
}
