#!/usr/bin/env bash
# make test-deps (the first step of make test): installs what make test needs beyond Go, when it is missing,
# from the Debian packages with apt-get (as root, or through sudo when it needs no password):
#   ansible-core  make deploy-check checks deploy/'s playbooks with ansible-playbook (a failure without it);
#   chromium      internal/console's browser tests (they skip without /usr/bin/chromium; a note says so).
# Without root or password-less sudo it says what to install and stops when ansible-playbook is missing.
# Then go mod download, so the tests do not fetch modules while timed. Nothing is done when all is there.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v ansible-playbook >/dev/null || need+=(ansible-core)
[[ -x /usr/bin/chromium ]] || need+=(chromium)

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
    if ! command -v ansible-playbook >/dev/null; then
      echo "test-deps: make deploy-check (part of make test) cannot run without ansible-playbook" >&2
      exit 1
    fi
    echo "test-deps: the console's browser tests will skip without chromium" >&2
  else
    echo "test-deps: installing ${need[*]} with apt-get"
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
fi
go mod download
