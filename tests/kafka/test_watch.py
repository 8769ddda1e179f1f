"""``replica-assignor watch`` on the session's Apache Kafka cluster (5 brokers on a multi-level
rack tree), with our server following it with the multi-level assignor: a topic created by
Kafka's own TopicCommand ends on the assignor's placement; a broker stopped past a short grace
period is healed while a producer (acks=all) and a consumer run, losing no acknowledged record;
a broker stopped and unregistered while ``create-topic --intent-file`` makes a topic
under-replicated (KIP-409) gets its placeholders back when it returns, without an operator; a
watcher killed with SIGKILL in the middle of a throttled placement resumes that plan first when
started again; a ``--dry-run`` watcher decides and changes nothing. The audit log names each
action."""

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
from tests.kafka.following import (
    ROOT,
    cli,
    follower,
    others,
    refused_sockets,
    source,
    stop_watcher,
    topic_state,
    unregister,
    wait_for,
)

__all__ = ["refused_sockets"]
GRACE_S = 5


def start_watcher(kafka: KafkaCluster, assignor: str, state: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kafka_replica_assignor.cli.main", "watch", "--bootstrap-server", kafka.bootstrap,
         "--assignor", assignor, "--state-dir", str(state), "--refresh-interval-ms", "500",
         "--grace-period-s", str(GRACE_S), "--timeout-ms", "10000", *extra],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


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
    # a "wait" may come first (the new topic's sizes not read yet), then the placement
    decided = next(r for r in audit(state) if r["event"] == "decided" and r["subject"] == name
                   and r["action"] == "place")
    assert decided["moves"]
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


def test_a_returning_broker_gets_its_placeholders_without_an_operator(
        kafka: KafkaCluster, topics: Topics, restarted: list[int], tmp_path: Path) -> None:
    from kafka_replica_assignor.cli.intent import read_record

    name = topics.name("returning")
    intent_file = tmp_path / "intent.json"
    state = tmp_path / "watch"
    with follower(kafka, tmp_path, enable_under_replicated_topic_creation="true") as server:
        assert set(source(server).view().broker_ids) == {0, 1, 2, 3, 4}   # observed, so expected back
        # a grace period of an hour: broker 4's other replicas are not healed meanwhile
        process = start_watcher(kafka, server.bootstrap, state, "--intent-file", str(intent_file),
                                "--grace-period-s", "3600")
        try:
            wait_for(lambda: any(r["event"] == "baseline" for r in audit(state)), what="the watcher's baseline")
            kafka.stop_node(4)
            restarted.append(4)
            kafka.wait_fenced(4)
            unregister(kafka, 4)
            wait_for(lambda: {b.id for b in source(server).view().offline} == {4}, what="4 offline")
            created = cli("create-topic", "--bootstrap-server", others(kafka, 4), "--assignor", server.bootstrap,
                          "--topic", name, "--partitions", "6", "--replication-factor", "5",
                          "--intent-file", str(intent_file))
            assert created.returncode == 0 and "under-replicated" in created.stderr, created.stderr
            (intent,) = read_record(intent_file)
            # five replicas on four brokers alive: a placeholder in every partition
            placeholders = {p for p, r in intent.replicas.items() if any(b < 0 for b in r)}
            assert placeholders == set(range(6)) and 4 not in intent.alive_brokers
            time.sleep(3)       # rounds with broker 4 away: nothing to fill
            assert not [r for r in audit(state) if r["event"] == "decided" and r["kind"] == "placeholders"
                        and r["action"] == "fill"]

            kafka.start_node(4)
            kafka.wait_ready(timeout=120)
            restarted.clear()
            record = wait_for(lambda: executed(state, "placeholders", name), timeout=90,
                              what="the placeholders filled")
            assert record["status"] == "done", record
            wait_for(lambda: read_record(intent_file) == [], timeout=30, what="the topic out of the intent record")
        finally:
            stop_watcher(process)
    decided = [r for r in audit(state) if r["event"] == "decided" and r["kind"] == "placeholders"]
    fill = next(r for r in decided if r["action"] == "fill")
    assert fill["subject"] == name and fill["brokers"] == [4] and not fill["dry_run"]
    assert {m["partition"] for m in fill["moves"]} == placeholders
    assert decided[-1]["action"] == "leave" and "complete" in decided[-1]["reason"]
    final = wait_for(lambda: (s := topic_state(kafka, name)) and all(
        sorted(s[p][2]) == sorted(s[p][0]) for p in s) and s, what="a full ISR")
    for p, intended in intent.replicas.items():
        replicas, leader, _ = final[p]
        assert sorted(replicas) == [0, 1, 2, 3, 4]
        assert [b for b, i in zip(replicas, intended, strict=True) if i >= 0] == [b for b in intended if b >= 0]
        assert [b for b, i in zip(replicas, intended, strict=True) if i < 0] == [4], (p, replicas)
        assert leader == intended[0]
    print(f"placeholders of {len(placeholders)} partition(s) filled by broker 4 on its return")


def test_a_watcher_killed_mid_plan_resumes_it_first(kafka: KafkaCluster, topics: Topics, tmp_path: Path) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient

    name = topics.name("resume")
    state = tmp_path / "watch"
    with follower(kafka, tmp_path, replica_assignor_class_name="multi-level") as server:
        first = start_watcher(kafka, server.bootstrap, state, "--topics", "resume-.*")
        wait_for(lambda: any(r["event"] == "baseline" for r in audit(state)), what="the watcher's baseline")
        stop_watcher(first)
        # made while the watcher is away, with data: striped over three flat racks by Kafka
        out = kafka.tool("kafka-topics", "--bootstrap-server", kafka.bootstrap, "--create", "--topic", name,
                         "--partitions", "12", "--replication-factor", "2")
        assert out.returncode == 0, out.stderr
        producer = KafkaProducer(bootstrap_servers=kafka.bootstrap, acks="all", linger_ms=20)
        for p in range(12):
            for _ in range(20):
                producer.send(name, b"x" * 8000, partition=p)
        producer.flush()
        producer.close()
        # throttled to 30 kB/s a broker: the placement takes seconds, long enough to kill it in flight
        second = start_watcher(kafka, server.bootstrap, state, "--topics", "resume-.*", "--throttle", "30000")
        admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap, request_timeout_ms=20000)
        try:
            wait_for(lambda: admin.list_partition_reassignments(timeout_ms=20000), timeout=60,
                     what="the placement in flight")
            time.sleep(1)
            second.kill()
            second.communicate(timeout=30)
            assert executed(state, "placement", name) is None
            ledger = json.loads((state / "watch-state.json").read_text())
            assert ledger["active"]["kind"] == "placement" and ledger["active"]["subject"] == name
            in_flight = admin.list_partition_reassignments(timeout_ms=20000)
            assert in_flight, "the reassignment finished before the kill: a larger topic is needed"
        finally:
            admin.close()
        third = start_watcher(kafka, server.bootstrap, state, "--topics", "resume-.*", "--throttle", "2000000")
        try:
            record = wait_for(lambda: executed(state, "placement", name), timeout=120, what="the plan resumed")
        finally:
            stop_watcher(third)
    assert record["status"] == "done", record
    events = [r for r in audit(state) if r["ts"] >= ledger["active"]["started_at"]]
    after_kill = events[[r["event"] for r in events].index("started"):]
    assert [r["event"] for r in after_kill[:3]] == ["started", "resumed", "executed"], after_kill[:3]
    assert after_kill[1]["plan_dir"] == ledger["active"]["dir"] == record["plan_dir"]
    decided = next(r for r in audit(state) if r["event"] == "decided" and r["subject"] == name)
    placed = {p: replicas for p, (replicas, _, _) in topic_state(kafka, name).items()}
    assert all(list(placed[m["partition"]]) == m["to"] for m in decided["moves"])
    assert json.loads((state / "watch-state.json").read_text())["active"] is None
    print(f"placement of {name} ({len(decided['moves'])} moves) killed in flight and resumed")


def test_a_dry_run_decides_and_changes_nothing(kafka: KafkaCluster, topics: Topics, tmp_path: Path) -> None:
    name = topics.name("dry")
    state = tmp_path / "watch"
    with follower(kafka, tmp_path, replica_assignor_class_name="multi-level") as server:
        process = start_watcher(kafka, server.bootstrap, state, "--topics", "dry-.*", "--dry-run",
                                "--metrics-listener", "127.0.0.1:0")
        try:
            wait_for(lambda: any(r["event"] == "baseline" for r in audit(state)), what="the watcher's baseline")
            out = kafka.tool("kafka-topics", "--bootstrap-server", kafka.bootstrap, "--create", "--topic", name,
                             "--partitions", "12", "--replication-factor", "2")
            assert out.returncode == 0, out.stderr
            before = {p: replicas for p, (replicas, _, _) in topic_state(kafka, name).items()}
            decided = wait_for(lambda: next((r for r in audit(state) if r["event"] == "decided"
                                             and r["subject"] == name and r["action"] == "place"), None),
                               timeout=30, what="a decision")
            time.sleep(3)
            started = next(r for r in audit(state) if r["event"] == "started")
            import urllib.request

            with urllib.request.urlopen(f"http://127.0.0.1:{started['metrics_port']}/metrics", timeout=10) as answer:
                metrics = answer.read().decode()
        finally:
            stop_watcher(process)
    assert decided["action"] == "place" and decided["dry_run"] is True and decided["moves"]
    assert not [r for r in audit(state) if r["event"] in ("executed", "resumed")]
    assert not list((state / "plans").iterdir())
    assert {p: replicas for p, (replicas, _, _) in topic_state(kafka, name).items()} == before
    assert 'replica_assignor_watch_decisions_total{action="place",kind="placement"} 1.0' in metrics
    assert 'replica_assignor_watch_executions_total{kind="placement",status="done"} 0.0' in metrics
