#!/usr/bin/env bash
# Install what the tests need on a fresh machine, then lint and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v sshd >/dev/null 2>&1 && [ ! -x /usr/sbin/sshd ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq openssh-server openssh-client >/dev/null
fi

python3 -m pip install -q -e '.[test]'
python3 -m ruff check remotedbg tests bench
python3 -m pytest -q "$@"
