#!/usr/bin/env bash
# The main job: start the server on the embedded default cluster (6 brokers, 3 data
# centres), answer one CreateReplicaAssignment request (12 partitions, RF 3) with the
# CLI, print the plan, and stop the server.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f .venv/.installed-"$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-16)" ] ||
  echo "demo: setting up first (scripts/setup.sh); its progress follows on stderr" >&2
bash scripts/setup.sh
echo "demo: starting replica-assignor-server on 127.0.0.1 (a free port), on the embedded example cluster" >&2
log=$(mktemp)
.venv/bin/replica-assignor-server --override listeners=PLAINTEXT://127.0.0.1:0 --override log.format=json >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 100); do
  port=$(grep -o '"port": *[0-9]*' "$log" | head -1 | grep -o '[0-9]*$' || true)
  [ -n "$port" ] && break
  kill -0 $pid 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "demo: server did not start" >&2; cat "$log" >&2; exit 1; }
grep 'server_started' "$log"
echo "demo: asking it for 12 partitions with replication factor 3 (replica-assignor assign):" >&2
.venv/bin/replica-assignor assign --bootstrap-server "127.0.0.1:$port" --partitions 12 --replication-factor 3 --topic demo
echo "demo: stopping the server (SIGTERM); its log line for the request:" >&2
kill -TERM $pid
wait $pid
grep 'request_handled' "$log"
