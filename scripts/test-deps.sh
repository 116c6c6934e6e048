#!/usr/bin/env bash
# make test-deps (the first step of make test): installs what make test needs beyond Go, when it is missing,
# from the Debian packages with apt-get (as root, or through sudo when it needs no password):
#   ansible-core  make deploy-check checks deploy/'s playbooks with ansible-playbook (a failure without it);
#   ansible       for the collection ansible.posix (ansible.posix.sysctl) the roles use (Debian's ansible ships it);
#   ansible-lint  make deploy-lint (part of make deploy-check): the playbooks against its production profile;
#   chromium      tools/console's browser tests (they skip without /usr/bin/chromium; a note says so);
#   protobuf-compiler  protoc, for proxy/v2pb's check that the committed generated code is current (make proto);
#   libprotobuf-dev    the well-known types' .proto files (google/protobuf/duration.proto, timestamp.proto) that
#                      the RocketMQ 5 definitions import; Debian's protobuf-compiler does not ship them.
# Without root or password-less sudo it says what to install and stops when ansible-playbook is missing.
# Then go mod download, so the tests do not fetch modules while timed, and, where node and npm are, npm ci of
# e2e/nodejs (the official RocketMQ 5 Node.js client, rocketmq-client-nodejs, for e2e/grpc_nodejs_test.go; its
# node_modules is git-ignored; without node or npm those tests skip and say so). Nothing is done when all is there.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v ansible-playbook >/dev/null || need+=(ansible-core)
ansible-doc -t module ansible.posix.sysctl >/dev/null 2>&1 || need+=(ansible)
command -v ansible-lint >/dev/null || need+=(ansible-lint)
[[ -x /usr/bin/chromium ]] || need+=(chromium)
command -v protoc >/dev/null || need+=(protobuf-compiler)
[[ -f /usr/include/google/protobuf/duration.proto ]] || need+=(libprotobuf-dev)

if ((${#need[@]} > 0)); then
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      sudo=(sudo -n)
    else
      sudo=(none)
    fi
  fi
  if [[ ${sudo[0]:-} == none ]] || ! command -v apt-get >/dev/null; then
    echo "test-deps: missing ${need[*]}; install them (Debian: apt-get install -y --no-install-recommends ${need[*]})" >&2
    if ! command -v ansible-playbook >/dev/null || ! command -v ansible-lint >/dev/null ||
      ! ansible-doc -t module ansible.posix.sysctl >/dev/null 2>&1; then
      echo "test-deps: make deploy-check (part of make test) cannot run without ansible-playbook, ansible-lint" \
        "and the collection ansible.posix" >&2
      exit 1
    fi
    echo "test-deps: the console's browser tests will skip without chromium, the generated-code check without protoc" >&2
  else
    echo "test-deps: installing ${need[*]} with apt-get"
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
fi
go mod download
if command -v node >/dev/null && command -v npm >/dev/null; then
  if [[ ! -f e2e/nodejs/node_modules/rocketmq-client-nodejs/package.json ||
    e2e/nodejs/package-lock.json -nt e2e/nodejs/node_modules/.package-lock.json ]]; then
    echo "test-deps: npm ci in e2e/nodejs (rocketmq-client-nodejs)"
    npm ci --prefix e2e/nodejs --no-audit --no-fund --loglevel=error
  fi
else
  echo "test-deps: node or npm is missing: the RocketMQ 5 Node.js client tests (e2e/grpc_nodejs_test.go) will skip" >&2
fi
