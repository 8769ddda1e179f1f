#!/usr/bin/env bash
# Everything a fresh machine needs: a virtual environment with the packages pinned in
# constraints.txt (within pyproject.toml's ranges), and
# Java 17 for Spark when `java` is missing. Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.installed-$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade "pip==25.3"
  .venv/bin/python -m pip install --quiet -c constraints.txt -e ".[dev]"
  touch "$stamp"
fi
if ! command -v java >/dev/null 2>&1; then
  echo "setup: installing Java 17 for Spark" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi
