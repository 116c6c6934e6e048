#!/usr/bin/env bash
# make deploy-local / make deploy-local-raft: deploys a cluster on this machine with the Ansible playbooks of
# deploy/ (connection local, no systemd, no root: every process on its own ports and in its own folder under a
# scratch directory), runs the playbook again (it must report changed=0 for every host), sends and receives
# through it, rotates each process's output file with the logrotate config the roles wrote (copytruncate),
# restarts it with rolling-restart.yml, sends and receives again, then stops it with stop.yml, twice (the
# second run must report changed=0).
#
#   scripts/deploy-local.sh master-slave   two masters with two slaves (deploy/master-slave.yml)
#   scripts/deploy-local.sh raft           a three-node Raft group (deploy/raft.yml); needs the Raft mode (issue 6)
#
# Settings (environment): REPLICATION=async|sync (master-slave: ASYNC_MASTER or SYNC_MASTER, default async),
# MESSAGES (per round, default 2000), DEPLOY_DIR (default: a new temporary folder, removed after a passing
# run; a failing run keeps it and prints where), PORT_BASE (default: a free range of 50 ports),
# CLIENT=native|official (mqbench's client, default native).
#
# Installs ansible-core from the Debian packages (apt-get, as root or through sudo) when ansible-playbook is
# missing. Needs bin/ (make build). Checks, and fails with a line that names what differs:
#   round 1: every message sent is consumed once by a new group; the topic's queues hold exactly the
#            messages sent, spread over every group (broker name) of the inventory; each slave's CommitLog
#            catches up with its master's (master-slave), each Raft node applies the leader's commit index (raft);
#   rolling restart: rolling-restart.yml passes (every node restarted one at a time, each healthy again
#            before the next; its own checks) while the official Go client (mqbench --client official)
#            produces to and consumes from the topic RollingLoad throughout: the failed sends are reported
#            (after the client's own retries; Raft: 0 expected, the run fails otherwise; master/slave: a
#            slave never takes over, so sends fail while a master restarts) and every acknowledged message
#            must be consumed (mqbench --ids: the acknowledged ids are a subset of the consumed ids);
#   round 2: the group of round 1 receives exactly the new messages (its offsets survived the restarts), a
#            new group from the first offset receives every message of both rounds (so did the data).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/common.sh

mode="${1:-}"
case "$mode" in
master-slave) playbook=master-slave.yml inventory=inventories/local-master-slave/hosts.yml ;;
raft) playbook=raft.yml inventory=inventories/local-raft/hosts.yml ;;
*) echo "usage: $0 master-slave|raft" >&2; exit 2 ;;
esac
replication="${REPLICATION:-async}"
messages="${MESSAGES:-2000}"
client="${CLIENT:-native}"
topic=DeployCheck

for b in mqnamesrv mqbroker mqadmin mqbench; do
  [[ -x bin/$b ]] || { echo "bin/$b is missing: run make build first" >&2; exit 1; }
done
if [[ $mode == raft ]] && ! raft_available; then
  echo "deploy-local raft: bin/mqbroker has no Raft mode (it does not know enableDLegerCommitLog; issue 6)." >&2
  echo "make deploy-check renders and checks the Raft playbook's config meanwhile." >&2
  exit 1
fi

if ! command -v ansible-playbook >/dev/null; then
  echo "ansible-playbook is missing: installing ansible-core from the Debian packages"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq ansible-core >/dev/null
fi
if ! command -v logrotate >/dev/null && [[ ! -x /usr/sbin/logrotate ]]; then
  echo "logrotate is missing (process mode rotates the servers' output with it): installing it from the Debian packages"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends logrotate >/dev/null
fi
if ! ansible-doc -t module ansible.posix.sysctl >/dev/null 2>&1; then
  # The roles use ansible.posix.sysctl; Debian's ansible package ships the collection.
  echo "the collection ansible.posix is missing: installing ansible from the Debian packages"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends ansible >/dev/null
fi

# port_range_free BASE: no port of BASE..BASE+49 accepts connections on 127.0.0.1.
port_range_free() {
  local p
  for ((p = $1; p < $1 + 50; p++)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then return 1; fi
  done
}
base="${PORT_BASE:-}"
if [[ -z $base ]]; then
  for _ in $(seq 1 50); do
    # Below the kernel's ephemeral range (32768 up by default), where outgoing connections take ports, and
    # above the ports tests and tools take (internal/freeport: 10000 to 19999), which a chaos run took here.
    base=$((20000 + (RANDOM % 250) * 50))
    if port_range_free "$base"; then break; fi
    base=""
  done
  [[ -n $base ]] || { echo "no free range of 50 ports found" >&2; exit 1; }
fi

keep="${DEPLOY_DIR:+yes}"
dir="${DEPLOY_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/rocketraft-deploy.XXXXXX")}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
ns="127.0.0.1:$base"
extra=(-e "rr_local_root=$dir/cluster" -e "rr_port_base=$base" -e "broker_replication=$replication")

play() { # PLAYBOOK [LOG]: runs it on the local inventory, its output in $dir/LOG.log (default: PLAYBOOK's name)
  local log="$dir/${2:-${1%.yml}}.log" start=$SECONDS
  if ! (cd deploy && ANSIBLE_NOCOLOR=1 ansible-playbook -i "$inventory" "$1" "${extra[@]}") >"$log" 2>&1; then
    echo "ansible-playbook $1 failed after $((SECONDS - start))s; the end of $log:" >&2
    grep -E '^(fatal|failed):|"msg"|^ERROR' "$log" | tail -n 20 >&2 || tail -n 20 "$log" >&2
    return 1
  fi
  echo "$1: passed in $((SECONDS - start))s ($(grep -E '^[a-z0-9-]+ +: ok=' "$log" | wc -l) hosts)"
}

# play_unchanged PLAYBOOK: runs it again (nothing changed since its last run) and fails unless the PLAY
# RECAP shows changed=0 for every host: the playbook is idempotent.
play_unchanged() {
  local log="$dir/${1%.yml}-again.log"
  play "$1" "${1%.yml}-again"
  local changed
  changed=$(grep -E '^[a-z0-9-]+ +: ok=' "$log" | grep -v ' changed=0 ' | awk '{print $1, $4}' | paste -sd, -) || true
  if [[ -n $changed ]]; then
    echo "deploy-local $mode: the second run of $1 changed something: $changed; the changed tasks:" >&2
    grep -E -B2 '^changed:' "$log" | grep -E '^(TASK|changed:)' >&2 || true
    exit 1
  fi
  echo "$1 again: changed=0 on every host ($(grep -cE '^[a-z0-9-]+ +: ok=' "$log") hosts)"
}

stopped=""
load_pids=() # the background mqbench processes of the rolling restart
# On any exit: stop.yml, then rocketraft-ctl on every env file left (in case the playbook could not run).
cleanup() {
  local rc=$?
  trap - EXIT
  local pid
  for pid in "${load_pids[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
  if [[ -d $dir/cluster && -z $stopped ]]; then
    play stop.yml || true
    local env
    for env in "$dir"/cluster/*/conf/*.env; do
      [[ -e $env ]] || continue
      deploy/roles/rocketraft_common/files/rocketraft-ctl stop "$env" >/dev/null 2>&1 || true
    done
  fi
  if [[ $rc -eq 0 && -z $keep ]]; then
    rm -rf "$dir"
  else
    echo "logs and data kept in $dir (ansible: $dir/*.log; servers: $dir/cluster/*/logs)"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

json() { # JSON EXPR: evaluates the Python expression EXPR over the JSON document j read from stdin
  python3 -c "import json,sys; j=json.load(sys.stdin); print($1)"
}

fail() { echo "deploy-local $mode: $*" >&2; exit 1; }

# produce ROUND: sends $messages messages to $topic and checks none failed.
produce() {
  local out
  out=$(./bin/mqbench producer -client "$client" -n "$ns" -t "$topic" -q "$messages" -w 4 -queues 4 -json 2>"$dir/producer-$1.log") ||
    fail "round $1: mqbench producer failed: $(tail -n 3 "$dir/producer-$1.log")"
  local sent failed
  sent=$(json 'j["messages"]' <<<"$out")
  failed=$(json 'j["failed"] + j["rejected"]' <<<"$out")
  [[ $sent -eq $messages && $failed -eq 0 ]] || fail "round $1: sent $sent of $messages, $failed failed"
  echo "round $1: sent $sent messages ($(json '"%.0f msgs/s, p99 %.1f ms" % (j["msgs_per_sec"], j["latency_ms"]["p99"])' <<<"$out"))"
}

# consume ROUND GROUP WANT: consumes as GROUP until nothing arrives for 10 s and checks it got WANT messages.
consume() {
  local out got
  out=$(./bin/mqbench consumer -client "$client" -n "$ns" -t "$topic" -g "$2" -idle 10s -duration 120s -json 2>"$dir/consumer-$1-$2.log") ||
    fail "round $1: mqbench consumer $2 failed: $(tail -n 3 "$dir/consumer-$1-$2.log")"
  got=$(json 'j["messages"]' <<<"$out")
  [[ $got -eq $3 ]] || fail "round $1: group $2 received $got messages, want $3"
  echo "round $1: group $2 received $got messages"
}

# check_stored WANT: the topic's queues hold WANT messages in all, and every broker group of the inventory some.
check_stored() {
  local status want_groups
  status=$(./bin/mqadmin topicStatus -n "$ns" -t "$topic" --json) || fail "mqadmin topicStatus failed"
  local stored groups
  stored=$(json 'sum(q["maxOffset"] - q["minOffset"] for q in j["queues"])' <<<"$status")
  groups=$(json '" ".join(sorted({q["brokerName"] for q in j["queues"] if q["maxOffset"] > 0}))' <<<"$status")
  want_groups=$([[ $mode == raft ]] && echo "RaftNode00" || echo "broker-a broker-b")
  [[ $stored -eq $1 ]] || fail "the queues of $topic hold $stored messages, want $1"
  [[ $groups == "$want_groups" ]] || fail "messages stored on groups '$groups', want '$want_groups'"
  echo "stored: $stored messages on $groups"
}

# wait_slaves: every slave's CommitLog reaches its master's end (classic replication), within 60 s.
wait_slaves() {
  local deadline=$((SECONDS + 60)) lagging
  while :; do
    lagging=""
    local cluster
    cluster=$(./bin/mqadmin clusterList -n "$ns" --json) || fail "mqadmin clusterList failed"
    local name master slave
    for name in broker-a broker-b; do
      master=$(json "[b['addr'] for b in j['brokers'] if b['brokerName']=='$name' and b['brokerId']==0][0]" <<<"$cluster")
      slave=$(json "([b['addr'] for b in j['brokers'] if b['brokerName']=='$name' and b['brokerId']>0] or [''])[0]" <<<"$cluster")
      [[ -n $slave ]] || { lagging+=" $name has no slave listed;"; continue; }
      local mo so
      mo=$(./bin/mqadmin brokerStatus -b "$master" --json | json 'j["brokers"][0]["table"]["commitLogMaxOffset"]')
      so=$(./bin/mqadmin brokerStatus -b "$slave" --json | json 'j["brokers"][0]["table"]["commitLogMaxOffset"]')
      [[ $so -eq $mo ]] || lagging+=" $name slave $slave at $so, master $master at $mo;"
    done
    [[ -n $lagging ]] || break
    ((SECONDS < deadline)) || fail "slaves behind after 60 s:$lagging"
    sleep 1
  done
  echo "slaves caught up with their masters"
}

# wait_raft: every node of the Raft group has applied the leader's commit index, within 60 s.
wait_raft() {
  local deadline=$((SECONDS + 60)) st behind
  while :; do
    st=$(./bin/mqadmin getRaftStatus -n "$ns" -c RaftCluster --json) || fail "mqadmin getRaftStatus failed"
    behind=$(json '" ".join("%s applied %d of %d;" % (n["selfId"], n["appliedIndex"], c) for c in [max([m["commitIndex"] for m in j["nodes"] if m["master"]] or [-1])] for n in j["nodes"] if n["appliedIndex"] < c or c < 0)' <<<"$st")
    [[ -n $behind ]] || break
    ((SECONDS < deadline)) || fail "Raft nodes behind after 60 s: $behind"
    sleep 1
  done
  echo "every Raft node applied the leader's commit index ($(json '" ".join("%s=%s/%d" % (n["selfId"], n["role"], n["appliedIndex"]) for n in j["nodes"])' <<<"$st"))"
}

# rotate_logs: forces each process's logrotate config (the roles write one per process in process mode:
# conf/NAME.logrotate, copytruncate) and checks the old output went to NAME.log.1 and NAME.log was emptied.
rotate_logs() {
  local conf n=0
  for conf in "$dir"/cluster/*/conf/*.logrotate; do
    local log
    log=$(sed -n 's/^"\(.*\)" {$/\1/p' "$conf")
    [[ -s $log ]] || fail "logrotate: $log (of $conf) is empty before the rotation"
    local before
    before=$(stat -c %s "$log")
    PATH=/usr/sbin:/sbin:$PATH logrotate -f -s "$dir/logrotate.state" "$conf" || fail "logrotate -f $conf failed"
    [[ $(stat -c %s "$log.1") -ge $before ]] || fail "logrotate: $log.1 holds less than the $before bytes $log had"
    n=$((n + 1))
  done
  ((n > 0)) || fail "no logrotate config written under $dir/cluster/*/conf"
  echo "logrotate: $n process output files rotated (copytruncate)"
}

# check_logs_appended: after the rotation and the rolling restart, every output file has content and no NUL
# byte (a process writing at its old offset into a truncated file would leave a hole of NULs).
check_logs_appended() {
  local conf
  for conf in "$dir"/cluster/*/conf/*.logrotate; do
    local log
    log=$(sed -n 's/^"\(.*\)" {$/\1/p' "$conf")
    [[ -s $log ]] || fail "$log is empty after the rolling restart"
    if tr -d '\000' <"$log" | cmp -s - "$log"; then :; else fail "$log has NUL bytes after copytruncate"; fi
  done
  echo "process output files written on after the rotation, without holes"
}

echo "deploy-local $mode: $dir, ports $base-$((base + 49)), replication $replication, $messages messages per round, client $client"
echo "$(machine_line); $(ansible-playbook --version 2>/dev/null | sed -n 1p)"
start=$SECONDS
play "$playbook"
play_unchanged "$playbook"

produce 1
consume 1 deploy_check_1 "$messages"
check_stored "$messages"
if [[ $mode == raft ]]; then wait_raft; else wait_slaves; fi
rotate_logs

# Load through the rolling restart: the official Go client sends (4 goroutines, 200 msgs/s, the client's
# own retries) and a push consumer reads, both recording message ids.
load_topic=RollingLoad
./bin/mqbench producer -client official -n "$ns" -t "$load_topic" -w 4 -queues 4 -rate 200 -ids "$dir/load-acked.ids" \
  -json >"$dir/load-producer.json" 2>"$dir/load-producer.log" &
load_pids+=($!)
prod_pid=$!
ids_count() { [[ -s $1 ]] && sort -u "$1" | wc -l || echo 0; }
deadline=$((SECONDS + 60))
until (($(ids_count "$dir/load-acked.ids") > 0)); do
  ((SECONDS < deadline)) || fail "the load producer acknowledged nothing in 60 s: $(tail -n 3 "$dir/load-producer.log")"
  sleep 1
done
./bin/mqbench consumer -client official -n "$ns" -t "$load_topic" -g rolling_load -w 4 -ids "$dir/load-consumed.ids" \
  -json >"$dir/load-consumer.json" 2>"$dir/load-consumer.log" &
load_pids+=($!)
cons_pid=$!
roll_start=$SECONDS

play rolling-restart.yml

# A little more load after the last restart, then the producer's summary.
acked_before=$(ids_count "$dir/load-acked.ids")
deadline=$((SECONDS + 60))
until (($(ids_count "$dir/load-acked.ids") >= acked_before + 1000)); do
  ((SECONDS < deadline)) || fail "the load producer stalled after the rolling restart: $(tail -n 3 "$dir/load-producer.log")"
  sleep 1
done
kill -INT "$prod_pid"
wait "$prod_pid" || fail "the load producer failed: $(tail -n 3 "$dir/load-producer.log")"
load_sent=$(json 'j["messages"]' <"$dir/load-producer.json")
load_failed=$(json 'j["failed"] + j["rejected"]' <"$dir/load-producer.json")
load_error=$(json 'j.get("first_error", "")' <"$dir/load-producer.json")
# Every acknowledged message consumed: wait up to 120 s for the consumer to have them all.
missing=""
deadline=$((SECONDS + 120))
while :; do
  missing=$( (comm -23 <(sort -u "$dir/load-acked.ids") <(sort -u "$dir/load-consumed.ids" 2>/dev/null) || true) | wc -l)
  ((missing == 0)) && break
  ((SECONDS < deadline)) || break
  sleep 2
done
kill -INT "$cons_pid"
wait "$cons_pid" || true
missing=$( (comm -23 <(sort -u "$dir/load-acked.ids") <(sort -u "$dir/load-consumed.ids") || true) | wc -l)
consumed=$(ids_count "$dir/load-consumed.ids")
load_pids=()
echo "rolling restart under load ($((SECONDS - roll_start))s, official Go client, 200 msgs/s): $load_sent sends acknowledged, $load_failed failed${load_error:+ (first: $load_error)}; $consumed distinct messages consumed, $missing acknowledged not consumed"
((missing == 0)) || fail "$missing acknowledged messages of $load_topic were not consumed within 120 s (ids: $dir/load-acked.ids, $dir/load-consumed.ids)"
if [[ $mode == raft ]] && ((load_failed != 0)); then
  fail "$load_failed sends failed during the rolling restart of the Raft group, want 0"
fi

check_logs_appended
produce 2
consume 2 deploy_check_1 "$messages"
consume 2 deploy_check_2 $((2 * messages))
check_stored $((2 * messages))
if [[ $mode == raft ]]; then wait_raft; else wait_slaves; fi

play stop.yml
stopped=yes
play_unchanged stop.yml
for env in "$dir"/cluster/*/conf/*.env; do
  if deploy/roles/rocketraft_common/files/rocketraft-ctl status "$env" >/dev/null; then fail "still running after stop.yml: $env"; fi
done
echo "deploy-local $mode: passed in $((SECONDS - start))s"
