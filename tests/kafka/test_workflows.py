"""Every workflow of the command line against Apache Kafka itself (the session cluster of
tests/kafka/conftest.py: brokers 0-4 on racks /dc1/zone-a, /dc1/zone-b, /dc2/zone-a, two log
directories each), with Kafka's own tools reading what we write."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from scripts.kafka_cluster import KafkaCluster
from tests.kafka.conftest import RACKS, Topics
from tests.servers import ServerThread

ROOT = Path(__file__).resolve().parents[2]
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
ELECT = "org.apache.kafka.tools.LeaderElectionCommand"
LOG_DIRS = "org.apache.kafka.tools.LogDirsCommand"


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafka_replica_assignor.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def admin(kafka: KafkaCluster) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=kafka.bootstrap, request_timeout_ms=30000)


def described(kafka: KafkaCluster, topic: str) -> dict[int, dict[str, Any]]:
    client = admin(kafka)
    try:
        [answer] = [t for t in client.describe_topics([topic]) if t["name"] == topic]
    finally:
        client.close()
    return {p["partition_index"]: p for p in answer["partitions"]}


def replicas_of(kafka: KafkaCluster, topic: str) -> dict[int, list[int]]:
    return {p: list(d["replica_nodes"]) for p, d in described(kafka, topic).items()}


def plan(proc: subprocess.CompletedProcess[str]) -> dict[int, list[int]]:
    data = json.loads(proc.stdout)
    return {p["partition"]: p["replicas"] for p in data["partitions"]}


@pytest.fixture(scope="module", params=["default", "striped", "multi-level"])
def assignor(request: pytest.FixtureRequest, kafka_cluster: KafkaCluster) -> Iterator[ServerThread]:
    """Our server following the live cluster (racks from broker.rack), one per built-in assignor."""
    with ServerThread({"bootstrap.servers": kafka_cluster.bootstrap, "replica.assignor.class.name": request.param,
                       "metadata.refresh.interval.ms": "2000"}) as server:
        yield server


def rack(broker: int) -> str:
    return RACKS[broker % 3]


def test_create_topic_applies_exactly_the_assignors_replicas_and_leaders(
        kafka: KafkaCluster, topics: Topics, assignor: ServerThread) -> None:
    name = topics.name("create")
    proc = cli("create-topic", "--bootstrap-server", kafka.bootstrap, "--assignor", assignor.bootstrap,
               "--topic", name, "--partitions", "12", "--replication-factor", "3")
    assert proc.returncode == 0, proc.stderr
    assigned = plan(proc)
    assert sorted(assigned) == list(range(12))
    got = described(kafka, name)
    assert {p: list(d["replica_nodes"]) for p, d in got.items()} == assigned
    assert {p: d["leader_id"] for p, d in got.items()} == {p: r[0] for p, r in assigned.items()}
    # every assignor here is rack-aware: three replicas on three racks
    assert all(len({rack(b) for b in r}) == 3 for r in assigned.values())


def test_add_partitions_places_the_new_ones_and_moves_no_old_one(
        kafka: KafkaCluster, topics: Topics, assignor: ServerThread) -> None:
    name = topics.name("grow")
    created = cli("create-topic", "--bootstrap-server", kafka.bootstrap, "--assignor", assignor.bootstrap,
                  "--topic", name, "--partitions", "4", "--replication-factor", "2")
    assert created.returncode == 0, created.stderr
    before = replicas_of(kafka, name)
    added = cli("add-partitions", "--bootstrap-server", kafka.bootstrap, "--assignor", assignor.bootstrap,
                "--topic", name, "--partitions", "9")
    assert added.returncode == 0, added.stderr
    new = plan(added)
    assert sorted(new) == list(range(4, 9))
    after = replicas_of(kafka, name)
    assert after == {**before, **new}


def make_skewed_topic(kafka: KafkaCluster, name: str, partitions: int, replicas: list[int],
                      records: int, record_bytes: int) -> None:
    """A topic with every partition on ``replicas`` (a skew to balance) and known data."""
    client = admin(kafka)
    try:
        client.create_topics([NewTopic(name, replica_assignments={p: replicas for p in range(partitions)})])
    finally:
        client.close()
    deadline = time.monotonic() + 30
    while len(replicas_of(kafka, name)) < partitions and time.monotonic() < deadline:
        time.sleep(0.2)
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap, acks="all", linger_ms=5)
    try:
        for p in range(partitions):
            for _ in range(records):
                producer.send(name, value=b"x" * record_bytes, partition=p)
        producer.flush(60)
    finally:
        producer.close()


def live_snapshot(kafka: KafkaCluster, tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str],
                                                                               dict[str, Any]]:
    out = tmp_path / "live.json"
    proc = cli("state", "--bootstrap-server", kafka.bootstrap, "--json", "--save-snapshot", str(out), *extra)
    assert proc.returncode == 0, proc.stderr
    return proc, json.loads(out.read_text())


def test_state_reads_racks_leaders_isr_and_sizes_and_sees_a_stopped_broker(
        kafka: KafkaCluster, topics: Topics, restarted: list[int], tmp_path: Path) -> None:
    name = topics.name("state")
    make_skewed_topic(kafka, name, partitions=3, replicas=[1, 2], records=50, record_bytes=1000)
    proc, snap = live_snapshot(kafka, tmp_path)
    assert {b["id"]: b["rack"] for b in snap["brokers"]} == {i: rack(i) for i in range(5)}
    mine = {p["partition"]: p for p in snap["partitions"] if p["topic"] == name}
    assert {p: (e["replicas"], e["leader"], sorted(e["isr"])) for p, e in mine.items()} == {
        p: ([1, 2], 1, [1, 2]) for p in range(3)}
    # 50 records of 1,000 bytes in a batch format: at least the payload, and not twice it
    assert all(50_000 <= e["size_bytes"] < 100_000 for e in mine.values()), mine
    shown = json.loads(proc.stdout)
    assert {b["id"]: (b["replicas"] >= 3 if b["id"] in (1, 2) else True) for b in shown["brokers"]} == {
        i: True for i in range(5)}

    kafka.stop_node(2)
    restarted.append(2)
    kafka.wait_fenced(2)
    deadline = time.monotonic() + 60
    while True:
        proc, snap = live_snapshot(kafka, tmp_path)
        mine = {p["partition"]: p for p in snap["partitions"] if p["topic"] == name}
        if all(e["isr"] == [1] for e in mine.values()) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert {p: e["isr"] for p, e in mine.items()} == {p: [1] for p in range(3)}
    shown = json.loads(proc.stdout)
    assert {b["id"]: b["alive"] for b in shown["brokers"]} == {0: True, 1: True, 2: False, 3: True, 4: True}
    assert "fenced broker(s) [2]" in proc.stderr


def run_tool(kafka: KafkaCluster, main: str, *args: str) -> subprocess.CompletedProcess[str]:
    proc = kafka.tool(main, "--bootstrap-server", kafka.bootstrap, *args)
    assert proc.returncode == 0, f"{main} {args}: {proc.stdout}\n{proc.stderr}"
    return proc


def execute_with_kafkas_tool(kafka: KafkaCluster, path: Path) -> None:
    run_tool(kafka, REASSIGN, "--reassignment-json-file", str(path), "--execute", "--throttle", "50000000")
    deadline = time.monotonic() + 120
    while True:
        verify = run_tool(kafka, REASSIGN, "--reassignment-json-file", str(path), "--verify")
        if "is still in progress" not in verify.stdout or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert "is still in progress" not in verify.stdout, verify.stdout
    assert "Clearing broker-level throttles" in verify.stdout or "Clearing" in verify.stdout, verify.stdout


def planned_end_state(out: Path) -> dict[tuple[str, int], list[int]]:
    final: dict[tuple[str, int], list[int]] = {}
    for batch in sorted(out.glob("reassignment*.json")):   # reassignment.json, or one file per batch
        for p in json.loads(batch.read_text())["partitions"]:
            final[(p["topic"], p["partition"])] = p["replicas"]
    return final


def test_balance_plans_run_by_kafkas_own_tools_end_in_the_planned_state(
        kafka: KafkaCluster, topics: Topics, tmp_path: Path) -> None:
    names = [topics.name("skew"), topics.name("skew")]
    for name in names:
        make_skewed_topic(kafka, name, partitions=6, replicas=[0, 3], records=20, record_bytes=500)
    out = tmp_path / "plan"
    proc = cli("balance", "--bootstrap-server", kafka.bootstrap, "--mode", "cluster", "--out", str(out),
               "--batch-size", "5", "--no-charts")
    assert proc.returncode == 0, proc.stderr
    final = planned_end_state(out)
    assert any(t in names for t, _ in final), final
    before = {(t, p): r for t in names for p, r in replicas_of(kafka, t).items()}

    for batch in sorted(out.glob("reassignment-*.json")):
        if json.loads(batch.read_text())["partitions"]:
            execute_with_kafkas_tool(kafka, batch)
    run_tool(kafka, ELECT, "--election-type", "PREFERRED", "--path-to-json-file", str(out / "leader-election.json"))

    now = {key: replicas_of(kafka, key[0])[key[1]] for key in final}
    assert now == final
    leaders = {key: described(kafka, key[0])[key[1]]["leader_id"] for key in final}
    assert leaders == {key: r[0] for key, r in final.items()}
    verify = cli("verify-plan", "--plan", str(out), "--bootstrap-server", kafka.bootstrap)
    # every planned partition at its planned replicas: an execution that ended, not drift
    assert verify.returncode == 0, verify.stderr
    assert re.search(r"(\d+) of \1 planned partition\(s\) already at their planned replicas .*, 0 still at",
                     verify.stderr), verify.stderr

    # rollback.json, run by the same tool, brings the planned partitions back
    rollback = out / "rollback.json"
    execute_with_kafkas_tool(kafka, rollback)
    restored = {(t, p): r for t in names for p, r in replicas_of(kafka, t).items()}
    assert restored == before


def test_balance_takes_sizes_from_kafkas_log_dirs_tool(kafka: KafkaCluster, topics: Topics, tmp_path: Path) -> None:
    name = topics.name("sized")
    make_skewed_topic(kafka, name, partitions=4, replicas=[1, 4], records=40, record_bytes=1000)
    described_dirs = run_tool(kafka, LOG_DIRS, "--describe", "--broker-list", "0,1,2,3,4",
                              "--topic-list", name)
    log_dirs = tmp_path / "log-dirs.txt"
    log_dirs.write_text(described_dirs.stdout)
    _, snap = live_snapshot(kafka, tmp_path)
    snapshot = tmp_path / "cluster.json"
    for p in snap["partitions"]:
        p.pop("size_bytes", None)
    snapshot.write_text(json.dumps(snap))
    out = tmp_path / "plan"
    proc = cli("balance", "--snapshot", str(snapshot), "--log-dirs", str(log_dirs), "--mode", "replica",
               "--out", str(out), "--no-charts")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    final = {key: r for key, r in planned_end_state(out).items() if key[0] == name}
    assert final, proc.stdout
    # the sizes are Kafka's: each new replica of the topic copies the largest log of its partition
    reported = json.loads(described_dirs.stdout.strip().splitlines()[-1])
    size: dict[int, int] = {}
    for broker in reported["brokers"]:
        for log_dir in broker["logDirs"]:
            for entry in log_dir["partitions"]:
                partition = int(entry["partition"].rsplit("-", 1)[1])
                size[partition] = max(size.get(partition, 0), entry["size"])
    assert sorted(size) == [0, 1, 2, 3] and min(size.values()) >= 40_000
    mine = sum(size[p] * len(set(r) - {1, 4}) for (_, p), r in final.items())
    assert mine > 0 and summary["bytes_moved"] >= mine, (summary, mine)


def test_verify_plan_exits_1_after_the_cluster_changed_under_the_plan(
        kafka: KafkaCluster, topics: Topics, tmp_path: Path) -> None:
    name = topics.name("drift")
    make_skewed_topic(kafka, name, partitions=4, replicas=[2, 4], records=1, record_bytes=10)
    out = tmp_path / "plan"
    proc = cli("balance", "--bootstrap-server", kafka.bootstrap, "--mode", "replica", "--out", str(out), "--no-charts")
    assert proc.returncode == 0, proc.stderr
    ok = cli("verify-plan", "--plan", str(out), "--bootstrap-server", kafka.bootstrap)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    planned = [p for p in planned_end_state(out) if p[0] == name]
    assert planned
    topic, partition = planned[0]
    current = replicas_of(kafka, topic)[partition]
    other = next(b for b in range(5) if b not in current)
    change = tmp_path / "change.json"
    change.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": partition, "replicas": [other, *current[1:]]}]}))
    execute_with_kafkas_tool(kafka, change)
    drifted = cli("verify-plan", "--plan", str(out), "--bootstrap-server", kafka.bootstrap)
    assert drifted.returncode == 1
    assert f"{topic}-{partition}: planned from {current}, now {[other, *current[1:]]}" in drifted.stdout


def leaders_and_replicas(snap: dict[str, Any]) -> dict[int, tuple[int, int]]:
    """(preferred leaders, replicas) per broker of a snapshot."""
    counts = {b["id"]: [0, 0] for b in snap["brokers"]}
    for p in snap["partitions"]:
        counts[p["replicas"][0]][0] += 1
        for b in p["replicas"]:
            counts[b][1] += 1
    return {b: (c[0], c[1]) for b, c in counts.items()}


def test_a_batch_of_topics_is_created_as_placed_and_spread_as_one(kafka: KafkaCluster, topics: Topics,
                                                                  tmp_path: Path) -> None:
    """Five topics of two single-replica partitions, placed by a load-aware plug-in following the
    live cluster (each new partition on the broker leading the fewest, then holding the fewest),
    created with one CreateTopics: the batch lands as if it were one topic of ten partitions."""
    _, before = live_snapshot(kafka, tmp_path)
    names = [topics.name("batch") for _ in range(5)]
    with ServerThread({"bootstrap.servers": kafka.bootstrap,
                       "replica.assignor.class.name": "examples.least_loaded.LeastLoadedAssignor"}) as server:
        proc = cli("create-topic", "--bootstrap-server", kafka.bootstrap, "--assignor", server.bootstrap,
                   *[a for n in names for a in ("--topic", n)], "--partitions", "2", "--replication-factor", "1")
    assert proc.returncode == 0, proc.stderr
    assigned = json.loads(proc.stdout)["partitions"]
    placed = {(t, p): r for t in names for p, r in replicas_of(kafka, t).items()}
    assert placed == {(e["topic"], e["partition"]): e["replicas"] for e in assigned}
    # what the view of every topic so far predicts: each partition to a least-leading, least-loaded
    # broker (ties broken at random, which leaves the multiset of counts the same)
    expected = sorted(leaders_and_replicas(before).values())
    for _ in range(10):
        least = min(expected)
        expected[expected.index(least)] = (least[0] + 1, least[1] + 1)
    _, after = live_snapshot(kafka, tmp_path)
    assert sorted(leaders_and_replicas(after).values()) == sorted(expected)
