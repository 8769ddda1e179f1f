#!/usr/bin/env bash
# An Apache Kafka KRaft cluster on 127.0.0.1 (see scripts/kafka_cluster.py):
#   bash scripts/kafka-cluster.sh up [--brokers 4] [--racks rack-a,rack-b,rack-c]   # prints the bootstrap address last
#   bash scripts/kafka-cluster.sh status
#   bash scripts/kafka-cluster.sh down
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >&2
exec .venv/bin/python scripts/kafka_cluster.py "$@"
