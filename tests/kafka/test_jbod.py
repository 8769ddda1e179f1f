"""Log directories (JBOD) against Apache Kafka: a plan whose reassignment JSON names directories
is accepted by Kafka's own ReassignPartitionsCommand, and the replicas end in those directories
(DescribeLogDirs). The session cluster has two log directories per broker."""

from __future__ import annotations

import json
import time
from pathlib import Path

from kafka.errors import NoError

from scripts.kafka_cluster import KafkaCluster
from tests.kafka.conftest import Topics
from tests.kafka.test_execute import throttle_configs
from tests.kafka.test_workflows import admin, cli, execute_with_kafkas_tool, make_skewed_topic

PARTITIONS = 6
BROKERS = (1, 4)


def where_replicas_live(kafka: KafkaCluster) -> tuple[dict[tuple[str, int, int], str], int]:
    """``(topic, partition, broker) -> directory`` of every replica, and how many future
    replicas (intra-broker moves in progress) there are."""
    client = admin(kafka)
    try:
        answers = client.describe_log_dirs()
    finally:
        client.close()
    out: dict[tuple[str, int, int], str] = {}
    futures = 0
    for answer in answers:
        for log_dir in answer["log_dirs"]:
            for t in log_dir["topics"]:
                for p in t["partitions"]:
                    if p["is_future_key"]:
                        futures += 1
                    else:
                        out[(t["name"], p["partition_index"], answer["broker"])] = log_dir["log_dir"]
    return out, futures


def settle(kafka: KafkaCluster, done: object, timeout: float = 90) -> dict[tuple[str, int, int], str]:
    deadline = time.monotonic() + timeout
    while True:
        now, futures = where_replicas_live(kafka)
        if (futures == 0 and callable(done) and done(now)) or time.monotonic() > deadline:
            return now
        time.sleep(0.5)


def crowded_plan(kafka: KafkaCluster, topics: Topics, tmp_path: Path) -> tuple[Path, dict[tuple[str, int, int], str]]:
    """A topic whose replicas all sit in the first directory of brokers 1 and 4, and the plan
    ``balance`` makes of the cluster: its directory and the directories it names."""
    name = topics.name("jbod")
    make_skewed_topic(kafka, name, partitions=PARTITIONS, replicas=list(BROKERS), records=40, record_bytes=1000)
    placed, _ = where_replicas_live(kafka)
    first = {b: placed[(name, 0, b)] for b in BROKERS}
    client = admin(kafka)
    try:
        answer = client.alter_replica_log_dirs({(name, p, b): first[b] for p in range(PARTITIONS) for b in BROKERS})
    finally:
        client.close()
    assert all(err is NoError for err in answer.values()), answer
    settle(kafka, lambda now: all(now.get((name, p, b)) == first[b] for p in range(PARTITIONS) for b in BROKERS))

    out = tmp_path / "plan"
    proc = cli("balance", "--bootstrap-server", kafka.bootstrap, "--mode", "cluster", "--out", str(out),
               "--no-charts")
    assert proc.returncode == 0, proc.stderr
    entries = json.loads((out / "reassignment.json").read_text())["partitions"]
    assert entries and all(len(e["log_dirs"]) == len(e["replicas"]) for e in entries), entries
    named = {(e["topic"], e["partition"], b): d for e in entries
             for b, d in zip(e["replicas"], e["log_dirs"], strict=True) if d != "any"}
    # some replicas of the topic stay on broker 1 or 4 and change directory: intra-broker moves
    assert any(b in BROKERS and t == name and d != first[b] for (t, _, b), d in named.items()), entries
    assert "## Log directories" in (out / "report.md").read_text()
    return out, named


def test_a_plan_with_log_dirs_runs_under_kafkas_tool_and_replicas_end_in_the_named_directories(
        kafka: KafkaCluster, topics: Topics, tmp_path: Path) -> None:
    out, named = crowded_plan(kafka, topics, tmp_path)
    execute_with_kafkas_tool(kafka, out / "reassignment.json")
    now = settle(kafka, lambda now: all(now.get(k) == d for k, d in named.items()))
    assert {k: now.get(k) for k in named} == named


def test_execute_places_replicas_in_the_named_directories_too(
        kafka: KafkaCluster, topics: Topics, tmp_path: Path) -> None:
    out, named = crowded_plan(kafka, topics, tmp_path)
    proc = cli("execute", "--plan", str(out), "--bootstrap-server", kafka.bootstrap, "--poll-interval-ms", "300",
               "--throttle", "50000000", timeout=240)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    events = [json.loads(line)["event"] for line in proc.stdout.splitlines() if line.startswith("{")]
    assert "log_dirs_placed" in events, events
    # the throttle limits the moves between directories too, and goes with the others
    assert events.index("log_dir_throttles_set") < events.index("log_dir_moves_submitted"), events
    assert throttle_configs(kafka.bootstrap, [t for t, _, _ in named]) == {}
    now, futures = where_replicas_live(kafka)
    assert futures == 0 and {k: now.get(k) for k in named} == named
