"""The one live-cluster reader (kafka_replica_assignor.protocol.cluster_reader) feeding the planner, and the ``state`` / ``balance`` subcommands against a real
Kafka-protocol broker (Tansu: node 111, no rack); their offline cases are unit tests
(``tests/unit/test_planner_sources.py``, ``tests/unit/test_planner_cli.py``)."""

from __future__ import annotations

import json

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from kafka_replica_assignor.cli.main import main
from kafka_replica_assignor.planner.report.cluster_report import describe
from kafka_replica_assignor.protocol.cluster_reader import read_live_cluster

pytestmark = pytest.mark.tansu


def create_topics(bootstrap: str, client_id: str, *topics: NewTopic) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id=client_id)
    try:
        admin.create_topics(list(topics))
    finally:
        admin.close()


def test_live_cluster_through_kafka_python(tansu):
    create_topics(tansu.bootstrap, "planner-test", NewTopic("orders", 3, 1), NewTopic("audit", 2, 1))
    snap = read_live_cluster(tansu.bootstrap).snapshot
    assert [(b.id, b.rack, b.alive, b.host) for b in snap.brokers] == [(111, None, True, "127.0.0.1")]
    assert {(p.topic, p.partition, p.replicas) for p in snap.partitions} >= {
        ("orders", 0, (111,)), ("orders", 2, (111,)), ("audit", 1, (111,))}
    assert describe(snap).replica_moves_lower_bound == 0


def test_state_and_balance_of_a_live_cluster(tansu, tmp_path, capsys):
    create_topics(tansu.bootstrap, "planner-cli-test", NewTopic("events", 4, 1))
    assert main(["state", "--bootstrap-server", tansu.bootstrap, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["brokers"] == [{"id": 111, "rack": None, "alive": True, "replicas": 4, "leaders": 4}]
    out = tmp_path / "plan"
    assert main(["balance", "--bootstrap-server", tansu.bootstrap, "--mode", "cluster", "--out", str(out),
                 "--no-charts"]) == 0
    assert json.loads((out / "reassignment.json").read_text()) == {"version": 1, "partitions": []}
