#!/usr/bin/env bash
# The whole test suite, after set-up: pytest (extra arguments go to it), then, on a full run,
# the container smoke test (a private Docker engine; needs root, or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m pytest "$@"
if [ $# -eq 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO bash scripts/container-smoke.sh
fi
