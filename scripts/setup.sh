#!/usr/bin/env bash
# Everything a fresh machine needs: a virtual environment with the packages pinned in
# constraints.txt (within pyproject.toml's ranges),
# Java 17 for Spark when `java` is missing, and Chromium with its chromedriver (Debian's) for the
# browser test of the watcher's web page when they are missing. Idempotent: a second run only checks, and prints nothing.
# While it installs it says what it does on stderr: one line per step and per package pip
# collects (a fresh machine takes minutes), and pip's whole output if pip fails.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
began=$SECONDS
say() { echo "setup: $*" >&2; }

pip_install() {  # pip with one progress line per package; its whole log when it fails
  local log status
  log=$(mktemp)
  set +e
  .venv/bin/python -m pip install --progress-bar off "$@" 2>&1 | tee "$log" | while IFS= read -r line; do
    case $line in
      Collecting*|"Installing collected packages"*|Successfully*) say "  ${line:0:150}" ;;
    esac
  done
  status=${PIPESTATUS[0]}
  set -e
  if [ "$status" != 0 ]; then
    say "pip failed (exit $status):"
    cat "$log" >&2
    rm -f "$log"
    exit "$status"
  fi
  rm -f "$log"
}

if [ ! -x .venv/bin/python ]; then
  say "creating the virtual environment .venv ($("$PY" --version 2>&1))"
  "$PY" -m venv .venv
fi
stamp=.venv/.installed-$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ]; then
  say "installing pip 25.3"
  pip_install --upgrade "pip==25.3"
  say "installing the packages pinned in constraints.txt and this project (editable, with the planner and"
  say "test extras): about 50 packages, minutes on a fresh machine; one line per package"
  pip_install -c constraints.txt -e ".[dev]"
  touch "$stamp"
  say "packages installed in $((SECONDS - began)) s"
fi
if ! command -v java >/dev/null 2>&1; then
  say "installing Java 17 for Spark (Debian's openjdk-17-jre-headless)"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null
  say "Java installed"
fi
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  say "installing Chromium and its driver for the web page's browser test (Debian's chromium, chromium-driver)"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
  say "Chromium installed"
fi
