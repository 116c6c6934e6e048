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
# Needs ansible-playbook (Debian: apt-get install -y ansible-core; make test installs it: scripts/test-deps.sh) and bin/mqbroker, bin/mqnamesrv
# (make build); fails, naming what is missing, without either. Takes seconds of CPU: no module runs.
set -euo pipefail
cd "$(dirname "$0")/../deploy"

command -v ansible-playbook >/dev/null || {
  echo "deploy-check: ansible-playbook is missing (Debian: apt-get install -y ansible-core)" >&2
  exit 1
}
for b in mqbroker mqnamesrv; do
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
