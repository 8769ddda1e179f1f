"""``replica-assignor watch`` on the session's Apache Kafka cluster (5 brokers on a multi-level
rack tree), with our server following it with the multi-level assignor: a topic created by
Kafka's own TopicCommand ends on the assignor's placement; a broker stopped past a short grace
period is healed while a producer (acks=all) and a consumer run, losing no acknowledged record;
the audit log names each action."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_replica_assignor.watcher.audit import read_audit
from scripts.kafka_cluster import KafkaCluster
from tests.kafka.conftest import RACKS, Topics
from tests.kafka.following import ROOT, follower, others, refused_sockets, topic_state, wait_for

__all__ = ["refused_sockets"]
GRACE_S = 5


def start_watcher(kafka: KafkaCluster, assignor: str, state: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kafka_replica_assignor.cli.main", "watch", "--bootstrap-server", kafka.bootstrap,
         "--assignor", assignor, "--state-dir", str(state), "--refresh-interval-ms", "500",
         "--grace-period-s", str(GRACE_S), "--timeout-ms", "10000", *extra],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stop_watcher(process: subprocess.Popen[str]) -> str:
    process.terminate()
    try:
        _, err = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        process.kill()
        _, err = process.communicate()
    assert process.returncode == 0, err
    return err


def audit(state: Path) -> list[dict[str, Any]]:
    path = state / "audit.jsonl"
    return read_audit(str(path)) if path.exists() else []


def executed(state: Path, kind: str, subject: str) -> dict[str, Any] | None:
    return next((r for r in audit(state) if r["event"] == "executed" and r["kind"] == kind
                 and r["subject"] == subject), None)


def dc(broker: int) -> str:
    return RACKS[broker % 3].split("/")[1]


@pytest.fixture
def watched(kafka: KafkaCluster, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    with follower(kafka, tmp_path, replica_assignor_class_name="multi-level") as server:
        state = tmp_path / "watch"
        process = start_watcher(kafka, server.bootstrap, state, "--exclude-topics", "heal-.*")
        try:
            wait_for(lambda: any(r["event"] == "baseline" for r in audit(state)), what="the watcher's baseline")
            yield server.bootstrap, state
        finally:
            stop_watcher(process)


def test_a_topic_made_by_kafkas_topic_command_ends_on_the_multi_level_placement(
        kafka: KafkaCluster, topics: Topics, watched: tuple[str, Path]) -> None:
    _, state = watched
    name = topics.name("watched")
    created = time.monotonic()
    out = kafka.tool("kafka-topics", "--bootstrap-server", kafka.bootstrap, "--create", "--topic", name,
                     "--partitions", "12", "--replication-factor", "2")
    assert out.returncode == 0, out.stderr
    # Kafka's striped placer sees three flat racks: some partitions stay in /dc1 only
    record = wait_for(lambda: executed(state, "placement", name), timeout=30, what="the placement executed")
    took = time.monotonic() - created
    assert record["status"] == "done", record
    decided = next(r for r in audit(state) if r["event"] == "decided" and r["subject"] == name)
    assert decided["action"] == "place" and decided["moves"]
    placed = {p: replicas for p, (replicas, _, _) in topic_state(kafka, name).items()}
    for move in decided["moves"]:
        assert list(placed[move["partition"]]) == move["to"]
    # the multi-level rule: one replica in each data centre for every partition
    assert all(sorted(dc(b) for b in replicas) == ["dc1", "dc2"] for replicas in placed.values()), placed
    assert took < 30
    print(f"placed {name} {took:.1f} s after creation")


def test_a_broker_down_past_the_grace_period_is_healed_without_losing_a_record(
        kafka: KafkaCluster, topics: Topics, restarted: list[int], watched: tuple[str, Path]) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    _, state = watched
    name = topics.name("heal")
    out = kafka.tool("kafka-topics", "--bootstrap-server", kafka.bootstrap, "--create", "--topic", name,
                     "--replica-assignment", "0:1:4,1:4:3,4:2:0,3:4:1", "--config", "min.insync.replicas=2")
    assert out.returncode == 0, out.stderr
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap, acks="all", retries=10, linger_ms=5,
                             request_timeout_ms=20_000)
    acked: list[bytes] = []
    stop = threading.Event()

    def produce() -> None:
        n = 0
        while not stop.is_set():
            value = f"record-{n}".encode()
            try:
                producer.send(name, value).get(timeout=30)
                acked.append(value)
            except Exception:  # noqa: BLE001 - not acknowledged: not promised
                time.sleep(0.2)
            n += 1
            time.sleep(0.01)

    consumer = KafkaConsumer(name, bootstrap_servers=kafka.bootstrap, auto_offset_reset="earliest",
                             group_id=None, consumer_timeout_ms=1000)
    received: list[bytes] = []

    def consume() -> None:
        while not stop.is_set():
            received.extend(r.value for r in consumer)

    threads = [threading.Thread(target=produce), threading.Thread(target=consume)]
    for t in threads:
        t.start()
    try:
        time.sleep(2)
        kafka.stop_node(4)
        restarted.append(4)
        record = wait_for(lambda: executed(state, "dead_brokers", "brokers 4"), timeout=150,
                          what="broker 4 healed")
        assert record["status"] == "done", record
        time.sleep(2)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
        producer.close()
    rest = KafkaConsumer(name, bootstrap_servers=others(kafka, 4), auto_offset_reset="earliest", group_id=None,
                         consumer_timeout_ms=5000)
    everything = {r.value for r in rest}
    rest.close()
    consumer.close()
    assert acked and not set(acked) - everything, f"{len(set(acked) - everything)} acknowledged record(s) lost"
    state_now = topic_state(kafka, name, 4)
    assert all(4 not in replicas and len(replicas) == 3 for replicas, _, _ in state_now.values()), state_now
    decided = [r for r in audit(state) if r["event"] == "decided" and r["kind"] == "dead_brokers"]
    assert decided and decided[-1]["action"] == "heal" and decided[-1]["brokers"] == [4]
    assert {m["partition"] for m in decided[-1]["moves"] if m["topic"] == name} == {0, 1, 2, 3}
    assert json.dumps(decided[-1]["seen"]) and 4 in decided[-1]["seen"]["down"]
    print(f"healed broker 4; {len(acked)} acknowledged records, {len(received)} consumed live, none lost")
