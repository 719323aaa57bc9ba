#!/usr/bin/env bash
# Install what the tests need on a fresh machine, then lint and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."

# sshd for the test boxes; podman and runc for the container tests (tests/podman.py)
missing=""
if ! command -v sshd >/dev/null 2>&1 && [ ! -x /usr/sbin/sshd ]; then
  missing="openssh-server openssh-client"
fi
command -v podman >/dev/null 2>&1 || missing="$missing podman"
command -v runc >/dev/null 2>&1 || [ -x /usr/sbin/runc ] || missing="$missing runc"
# a one-node Slurm cluster for the Slurm tests (tests/slurm.py)
[ -x /usr/sbin/slurmctld ] || missing="$missing slurm-wlm"
[ -x /usr/sbin/munged ] || missing="$missing munge"
# the login shells of tests/test_login_shells.py (dash and rbash come with Debian itself)
for shell in zsh fish tcsh mksh; do command -v "$shell" >/dev/null 2>&1 || missing="$missing $shell"; done
# the container image is built from it; the install test makes its venvs with it
/usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing="$missing python3 python3-venv"
if [ -n "$missing" ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq $missing >/dev/null
fi

python3 -m pip install -q -e '.[test]'
python3 -m ruff check remotedbg tests bench
if [ "$#" -gt 0 ]; then
  exec python3 -m pytest -q "$@"
fi
# What users install comes first: a wheel or sdist that does not work fails here, in minutes.
python3 -m pytest -q tests/test_packaging.py
python3 -m pytest -q --ignore=tests/test_packaging.py -m "not sweep"
# the every-release audits last (1,106, README "Every release"): a failure above is seen first
# each audit is independent (its own tmp tree, -H local): two workers, one a core
python3 -m pytest -q -p no:benchmark -m sweep -n 2 tests/test_conformance_sweep.py tests/test_oracle.py
