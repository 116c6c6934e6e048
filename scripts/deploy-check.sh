#!/usr/bin/env bash
# make deploy-check (part of make test): the Ansible playbooks of deploy/, without deploying anything.
#   1. ansible-playbook --syntax-check of every playbook (deploy/*.yml, deploy/tests/*.yml), loading every
#      inventory (deploy/inventories/*/hosts.yml);
#   2. deploy/tests/render-config.yml on the local Raft inventory and on the local master/slave inventory
#      (SYNC_MASTER): each broker's config rendered from the broker role's template, its keys checked, and
#      parsed by bin/mqbroker, which must know every key.
# Needs ansible-playbook (Debian: apt-get install -y ansible-core; .ci/run installs it) and bin/mqbroker
# (make build); fails, naming what is missing, without either. Takes seconds of CPU: no module runs.
set -euo pipefail
cd "$(dirname "$0")/../deploy"

command -v ansible-playbook >/dev/null || {
  echo "deploy-check: ansible-playbook is missing (Debian: apt-get install -y ansible-core)" >&2
  exit 1
}
[[ -x ../bin/mqbroker ]] || { echo "deploy-check: bin/mqbroker is missing: run make build first" >&2; exit 1; }
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
  echo "deploy-check: $name: $(grep -c 'checks passed' <<<"$out") broker configs rendered and checked"
}
render raft inventories/local-raft/hosts.yml
render raft-vip inventories/local-raft/hosts.yml -e broker_master_vip_address=127.0.0.100
render master-slave inventories/local-master-slave/hosts.yml -e broker_replication=sync
