#!/usr/bin/env bash
# make deploy-check (part of make test): the Ansible playbooks of deploy/, without deploying anything.
#   1. ansible-playbook --syntax-check of every playbook (deploy/*.yml, deploy/tests/*.yml), loading every
#      inventory (deploy/inventories/*/hosts.yml);
#   2. deploy/tests/render-config.yml on the local Raft inventory and on the local master/slave inventory
#      (SYNC_MASTER): each broker's config rendered from the broker role's template, its keys checked, and
#      parsed by bin/mqbroker, which must know every key; each name server's the same with bin/mqnamesrv;
#      again with peer TLS on (broker_peer_tls_enable), and with the name servers' write protection on
#      (namesrv_acl_enable, namesrv_peer_tls_enable; the brokers' broker_namesrv_tls_enable);
#   3. deploy/tests/peer-tls.yml on both local inventories: the name server role's tls.yml and the broker role's
#      peer_tls.yml make a CA, the name servers' server certificates and the node certificates under a
#      temporary folder (openssl on the controller), checked with openssl.
#   4. the name server guard live: mqnamesrv with ACL and the cluster CA of step 3, a broker presenting its node
#      certificate (registers) and one without (refused); about 10 s.
# Needs ansible-playbook (Debian: apt-get install -y ansible-core; make test installs it: scripts/test-deps.sh) and bin/mqbroker, bin/mqnamesrv, bin/mqadmin
# (make build); fails, naming what is missing, without either. Steps 1-3 run no module on a host.
set -euo pipefail
cd "$(dirname "$0")/../deploy"

command -v ansible-playbook >/dev/null || {
  echo "deploy-check: ansible-playbook is missing (Debian: apt-get install -y ansible-core)" >&2
  exit 1
}
for b in mqbroker mqnamesrv mqadmin; do
  [[ -x ../bin/$b ]] || { echo "deploy-check: bin/$b is missing: run make build first" >&2; exit 1; }
done
export ANSIBLE_NOCOLOR=1

playbooks=(*.yml tests/*.yml)
inventories=()
for inv in inventories/*/hosts.yml; do inventories+=(-i "$inv"); done
if ! out=$(ansible-playbook --syntax-check "${inventories[@]}" "${playbooks[@]}" 2>&1); then
  echo "deploy-check: ansible-playbook --syntax-check failed:" >&2
  echo "$out" >&2
  exit 1
fi
echo "deploy-check: --syntax-check passed: ${#playbooks[@]} playbooks, $((${#inventories[@]} / 2)) inventories"

render() { # NAME INVENTORY [ansible-playbook args]
  local name=$1 inv=$2 out
  shift 2
  if ! out=$(ansible-playbook -i "$inv" tests/render-config.yml "$@" 2>&1); then
    echo "deploy-check: tests/render-config.yml -i $inv $* failed:" >&2
    grep -E '^(fatal|failed):|"msg"|ERROR' <<<"$out" >&2 || echo "$out" >&2
    exit 1
  fi
  echo "deploy-check: $name: $(grep -c '"broker [^"]*checks passed' <<<"$out") broker configs and" \
    "$(grep -c '"name server [^"]*checks passed' <<<"$out") name server configs rendered and checked"
}
render raft inventories/local-raft/hosts.yml
render raft-vip inventories/local-raft/hosts.yml -e broker_master_vip_address=127.0.0.100
render master-slave inventories/local-master-slave/hosts.yml -e broker_replication=sync
render "raft, peer TLS" inventories/local-raft/hosts.yml -e broker_peer_tls_enable=true
render "master-slave, peer TLS" inventories/local-master-slave/hosts.yml -e broker_replication=sync -e broker_peer_tls_enable=true
# The name servers' write protection: ACL, client certificates of the cluster CA, and the brokers presenting theirs.
guarded='{"namesrv_acl_enable": true, "namesrv_peer_tls_enable": true, "namesrv_acl_broker_access_keys": ["rocketmq-broker", "rocketmq-broker-b"], "broker_peer_tls_enable": true, "broker_namesrv_tls_enable": true}'
render "raft, name server ACL and certificates" inventories/local-raft/hosts.yml -e "$guarded"
render "master-slave, name server ACL and certificates" inventories/local-master-slave/hosts.yml -e broker_replication=sync -e "$guarded"

command -v openssl >/dev/null || { echo "deploy-check: openssl is missing (Debian: apt-get install -y openssl)" >&2; exit 1; }
pki=$(mktemp -d)
trap 'rm -rf "$pki"' EXIT
for inv in local-raft local-master-slave; do
  if ! out=$(ansible-playbook -i "inventories/$inv/hosts.yml" tests/peer-tls.yml -e peer_tls_test_dir="$pki/$inv" 2>&1); then
    echo "deploy-check: tests/peer-tls.yml -i inventories/$inv/hosts.yml failed:" >&2
    grep -E '^(fatal|failed):|"msg"|ERROR' <<<"$out" >&2 || echo "$out" >&2
    exit 1
  fi
  echo "deploy-check: $inv, peer TLS: $(grep -c 'peer TLS material checked' <<<"$out") node certificates and" \
    "$(grep -c 'TLS material checked (server' <<<"$out") name server certificates made and checked"
done

# 4. The material of step 3 (local master/slave) live, with the keys the roles write under namesrv_acl_enable,
#    namesrv_peer_tls_enable and broker_namesrv_tls_enable (step 2 checks the templates write these keys with
#    these files): a name server with ACL on and no account, so only a certificate can register; a broker
#    presenting its node certificate registers, one without is refused NO_PERMISSION and not routed.
m=$pki/local-master-slave
live=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait; rm -rf "$pki" "$live"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ns=$(free_port)
printf '{}\n' >"$live/plain_acl.yml"
cat >"$live/namesrv.properties" <<EOC
listenPort=$ns
bindAddress=127.0.0.1
metricsExporterType=DISABLE
logDir=$live/namesrv-log
rocketmqHome=$live
kvConfigPath=$live/kvConfig.json
aclEnable=true
aclFile=$live/plain_acl.yml
aclBrokerAccessKeys=rocketmq-broker
peerTlsTrustCertPath=$m/ns0/conf/peer-ca.pem
tlsServerMode=permissive
tlsServerCertPath=$m/ns0/conf/namesrv-ns0-tls.pem
tlsServerKeyPath=$m/ns0/conf/namesrv-ns0-tls.key
tlsServerNeedClientAuth=optional
EOC
broker_conf() { # NAME PORT [client certificate host]
  cat <<EOC
brokerClusterName=DeployCheck
brokerName=$1
brokerId=0
brokerRole=ASYNC_MASTER
brokerIP1=127.0.0.1
listenPort=$2
haListenPort=$(free_port)
namesrvAddr=127.0.0.1:$ns
metricsExporterType=DISABLE
logDir=$live/$1-log
rocketmqHome=$live
storePathRootDir=$live/$1-store
mappedFileSizeCommitLog=16777216
registerNameServerPeriod=1000
EOC
  [[ -z ${3:-} ]] || printf '%s\n' tlsEnable=true "tlsClientCertPath=$m/$3/conf/broker-$3-peer.pem" \
    "tlsClientKeyPath=$m/$3/conf/broker-$3-peer.key"
}
../bin/mqnamesrv -c "$live/namesrv.properties" >"$live/namesrv.out" 2>&1 &
pids+=($!)
certified=$(free_port) plain=$(free_port)
broker_conf certified "$certified" broker-a-master >"$live/certified.properties"
broker_conf plain "$plain" >"$live/plain.properties"
../bin/mqbroker -c "$live/certified.properties" >"$live/certified.out" 2>&1 &
pids+=($!)
../bin/mqbroker -c "$live/plain.properties" >"$live/plain.out" 2>&1 &
pids+=($!)
# Poll until the certified broker is routed and the other was refused (deadline 60 s).
deadline=$((SECONDS + 60))
until routes=$(../bin/mqadmin clusterList -n "127.0.0.1:$ns" 2>&1) && grep -q "127.0.0.1:$certified" <<<"$routes" &&
  grep -q 'NO_PERMISSION' "$live/plain.out"; do
  if ((SECONDS > deadline)); then
    echo "deploy-check: name server guard: after 60 s the routes are:" >&2
    echo "$routes" >&2
    tail -n 5 "$live"/*.out >&2
    exit 1
  fi
  sleep 0.2
done
if grep -q "127.0.0.1:$plain" <<<"$routes"; then
  echo "deploy-check: name server guard: the broker without a certificate was routed:" >&2
  echo "$routes" >&2
  exit 1
fi
grep -q 'writes authorised by a client certificate of the cluster CA.*node=rocketraft://broker-a/0' "$live/namesrv.out" || {
  echo "deploy-check: name server guard: no certificate authorisation logged:" >&2
  cat "$live/namesrv.out" >&2
  exit 1
}
echo "deploy-check: name server guard: the broker with its node certificate (rocketraft://broker-a/0) registered," \
  "the one without was refused NO_PERMISSION and is not routed"
