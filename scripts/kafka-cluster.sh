#!/usr/bin/env bash
# An Apache Kafka KRaft cluster on 127.0.0.1 (see scripts/kafka_cluster.py):
#   bash scripts/kafka-cluster.sh up [--brokers 4] [--racks rack-a,rack-b,rack-c] [--dir DIR]   # prints the bootstrap address last
#   bash scripts/kafka-cluster.sh status | stop-node N | start-node N | down   [--dir DIR]
#   bash scripts/kafka-cluster.sh tool kafka-topics --bootstrap-server HOST:PORT --describe     # Kafka's own tools
# A relative --dir, and every path given to a tool, is taken from the folder it is run in.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/setup.sh" >&2
exec "$root/.venv/bin/python" "$root/scripts/kafka_cluster.py" "$@"
