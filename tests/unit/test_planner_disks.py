"""Log directories (JBOD): the snapshot field, the readers, the directory pass, its outputs."""

from __future__ import annotations

import argparse
import json
from random import Random
from typing import Any

import pytest

from kafka_replica_assignor.cluster.snapshot import (
    BrokerEntry,
    ClusterSnapshot,
    PartitionEntry,
    SnapshotError,
    with_log_dirs,
)
from kafka_replica_assignor.planner.inputs.log_dirs import merge_log_dirs, parse_placement
from kafka_replica_assignor.planner.plan import Plan
from kafka_replica_assignor.planner.report.outputs import render_outputs, write_outputs
from kafka_replica_assignor.planner.request import MODES, PlanRequest, Scope
from kafka_replica_assignor.planner.solving import planning
from kafka_replica_assignor.planner.solving.disks import (
    balance_disks,
    broker_dirs,
    dir_loads,
    disk_moves,
    has_log_dirs,
    intra_only,
    report_lines,
)
from kafka_replica_assignor.planner.solving.planning import make_plan
from kafka_replica_assignor.protocol.cluster_reader import placement_from_log_dirs
from tests.planning import request_of

G = 1 << 30


def jbod(seed: int, brokers: int = 6, partitions: int = 60, dirs: int = 2) -> ClusterSnapshot:
    """A random cluster whose brokers have ``dirs`` directories, replicas crowded into the first."""
    rng = Random(seed)
    ids = list(range(1, brokers + 1))
    names = [f"/data/{k}" for k in range(dirs)]
    parts = []
    for p in range(partitions):
        reps = tuple(rng.sample(ids[:-1], 3))      # the last broker is new
        parts.append(PartitionEntry(f"t{p % 3}", p, reps, None, None, int(rng.lognormvariate(0, 1) * G) + 1,
                                    tuple(names[0] if rng.random() < 0.8 else rng.choice(names) for _ in reps)))
    return ClusterSnapshot(tuple(BrokerEntry(b, f"r{b % 3}", log_dirs=tuple(names)) for b in ids), tuple(parts))


def without_disk_pass(snapshot: ClusterSnapshot, request: PlanRequest) -> Plan:
    """The plan of ``request`` with the log-directory pass left out (the broker plan alone)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(planning, "balance_disks", lambda plan, **_: plan)
        return make_plan(snapshot, request)


def stripped(snapshot: ClusterSnapshot) -> ClusterSnapshot:
    return ClusterSnapshot(
        tuple(BrokerEntry(b.id, b.rack, b.alive, b.host, b.port, b.capacity_bytes) for b in snapshot.brokers),
        tuple(PartitionEntry(p.topic, p.partition, p.replicas, p.leader, p.isr, p.size_bytes)
              for p in snapshot.partitions))


# -- without log directories nothing changes -----------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_without_log_dirs_the_outputs_are_byte_identical(mode: str) -> None:
    snapshot = stripped(jbod(3))
    request = PlanRequest(mode, batch_size=5)
    plan = make_plan(snapshot, request)
    plain = without_disk_pass(snapshot, request)
    assert plan.after == plain.after and plan.notes == plain.notes
    files = render_outputs(plan, request, charts=False)
    assert files == render_outputs(plain, request, charts=False)
    assert not any(b"log_dirs" in data or b"Log directories" in data for data in files.values())


def test_one_directory_per_broker_is_no_jbod() -> None:
    snapshot = stripped(jbod(4))
    placement = {(p.topic, p.partition): {b: "/only" for b in p.replicas} for p in snapshot.partitions}
    assert with_log_dirs(snapshot, placement, {b.id: ["/only"] for b in snapshot.brokers}) is snapshot
    single = ClusterSnapshot(snapshot.brokers, tuple(
        PartitionEntry(p.topic, p.partition, p.replicas, None, None, p.size_bytes, ("/only",) * len(p.replicas))
        for p in snapshot.partitions))
    assert not has_log_dirs(single)
    request = PlanRequest("cluster")
    plan = make_plan(single, request)
    assert plan.after == without_disk_pass(single, request).after


# -- the snapshot field --------------------------------------------------------------------
def test_snapshot_round_trip_and_checks() -> None:
    snapshot = jbod(1, partitions=5)
    data = snapshot.to_dict()
    assert data["brokers"][0]["log_dirs"] == ["/data/0", "/data/1"]
    assert ClusterSnapshot.from_dict(json.loads(json.dumps(data))) == snapshot
    assert "log_dirs" not in json.dumps(stripped(snapshot).to_dict())
    bad: list[tuple[dict[str, Any], str]] = [
        ({"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["/a"]},
         "partitions[0] (t-0): log_dirs has 1 entries for 2 replicas (one per replica)"),
        ({"topic": "t", "partition": 0, "replicas": [1], "log_dirs": ["data"]},
         "partitions[0] (t-0): a log directory must be an absolute path, got 'data'"),
        ({"topic": "t", "partition": 0, "replicas": [1], "log_dirs": "/a"},
         "partitions[0] (t-0): log_dirs must be a list, got '/a'"),
    ]
    for entry, message in bad:
        with pytest.raises(SnapshotError) as err:
            ClusterSnapshot.from_dict({"brokers": [{"id": 1}, {"id": 2}], "partitions": [entry]})
        assert str(err.value) == message
    with pytest.raises(SnapshotError, match=r"brokers\[0\].log_dirs: a log directory listed twice"):
        ClusterSnapshot.from_dict({"brokers": [{"id": 1, "log_dirs": ["/a", "/a"]}]})
    ok = ClusterSnapshot.from_dict({"brokers": [{"id": 1}], "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1], "log_dirs": [None]}]})
    assert ok.partitions[0].log_dirs == (None,)


# -- the readers -----------------------------------------------------------------------------
def test_kafka_log_dirs_output_gives_the_directories() -> None:
    text = "Querying brokers for log directories information\n" + json.dumps({"version": 1, "brokers": [
        {"broker": 1, "logDirs": [
            {"logDir": "/d/a", "error": None, "partitions": [{"partition": "t-0", "size": 5, "offsetLag": 0,
                                                              "isFuture": False}]},
            {"logDir": "/d/b", "error": None, "partitions": [{"partition": "t-0", "size": 2, "offsetLag": 0,
                                                              "isFuture": True}]}]},
        {"broker": 2, "logDirs": [{"logDir": "/d/a", "error": None, "partitions": []},
                                  {"logDir": "/d/b", "error": None, "partitions": [
                                      {"partition": "t-0", "size": 5, "offsetLag": 0, "isFuture": False}]}]}]})
    placement, dirs = parse_placement(text)
    assert placement == {("t", 0): {1: "/d/a", 2: "/d/b"}}      # the future copy is not where it lives
    assert dirs == {1: ["/d/a", "/d/b"], 2: ["/d/a", "/d/b"]}
    snapshot = ClusterSnapshot((BrokerEntry(1), BrokerEntry(2), BrokerEntry(3)),
                               (PartitionEntry("t", 0, (2, 3, 1)),))
    merged = merge_log_dirs(snapshot, text)
    assert merged.partitions[0] == PartitionEntry("t", 0, (2, 3, 1), None, None, 5, ("/d/b", None, "/d/a"))
    assert [b.log_dirs for b in merged.brokers] == [("/d/a", "/d/b"), ("/d/a", "/d/b"), None]


def test_describe_log_dirs_answer_gives_the_directories() -> None:
    def part(index: int, future: bool = False) -> dict[str, Any]:
        return {"partition_index": index, "partition_size": 10, "offset_lag": 0, "is_future_key": future}

    answers = [
        {"broker": 0, "log_dirs": [
            {"error_code": 0, "log_dir": "/x/1", "topics": [{"name": "t", "partitions": [part(0), part(1)]}]},
            {"error_code": 0, "log_dir": "/x/2", "topics": [{"name": "t", "partitions": [part(1, True)]}]},
            {"error_code": 57, "log_dir": "/x/3", "topics": []}]},
        {"broker": 1, "log_dirs": [{"error_code": 0, "log_dir": "/x/2", "topics": [
            {"name": "t", "partitions": [part(0)]}]}]},
    ]
    placement, dirs = placement_from_log_dirs(answers)
    assert placement == {("t", 0): {0: "/x/1", 1: "/x/2"}, ("t", 1): {0: "/x/1"}}
    assert dirs == {0: ["/x/1", "/x/2"], 1: ["/x/2"]}


# -- the pass ------------------------------------------------------------------------------
def test_the_worked_example_of_the_module_doc() -> None:
    brokers = (BrokerEntry(1, log_dirs=("/a", "/b")), BrokerEntry(2))
    before = ClusterSnapshot(brokers, (
        PartitionEntry("t", 0, (1,), None, None, 60 * G, ("/a",)),
        PartitionEntry("t", 1, (1,), None, None, 30 * G, ("/a",)),
        PartitionEntry("t", 2, (1,), None, None, 10 * G, ("/b",)),
        PartitionEntry("u", 0, (2,), None, None, 5 * G),
    ))
    after = ClusterSnapshot(brokers, (*before.partitions[:3], PartitionEntry("u", 0, (1,), None, None, 5 * G)))
    plan = balance_disks(Plan(before, after), threshold=10)
    assert [p.log_dirs for p in plan.after.partitions] == [("/a",), ("/b",), ("/b",), ("/b",)]
    assert disk_moves(plan) == (disk_moves(plan)[0],) and disk_moves(plan)[0].partition == 1
    assert [(x.log_dir, x.before, x.after) for x in dir_loads(plan)] == [("/a", 90 * G, 60 * G),
                                                                        ("/b", 10 * G, 45 * G)]
    assert [p.partition for p in intra_only(plan)] == [1]


@pytest.mark.parametrize("seed", range(8))
def test_the_pass_keeps_the_broker_plan_and_brings_directories_into_the_band(seed: int) -> None:
    snapshot = jbod(seed, dirs=2 + seed % 2)
    request = request_of("cluster")
    plain = without_disk_pass(snapshot, request)
    plan = make_plan(snapshot, request)
    assert plan == make_plan(snapshot, request)                        # deterministic
    assert [p.replicas for p in plan.after.partitions] == [p.replicas for p in plain.after.partitions]
    assert plan.moves == plain.moves
    dirs = broker_dirs(snapshot)
    moved: set[tuple[str, int, int]] = set()
    for old, new in zip(plan.before.partitions, plan.after.partitions, strict=True):   # by (topic, partition)
        assert new.log_dirs is not None or new is old
        for b, d in zip(new.replicas, new.log_dirs or old.log_dirs or (), strict=True):
            assert d in dirs[b]                                         # every replica has a directory of its broker
    for m in disk_moves(plan):
        assert (m.topic, m.partition, m.broker) not in moved
        moved.add((m.topic, m.partition, m.broker))
    outside = sum(not x.in_band for x in dir_loads(plan))
    assert outside <= sum(not x.lo <= x.before <= x.hi for x in dir_loads(plan)) / 3
    assert outside <= 3
    section = "\n".join(report_lines(plan))
    assert ("Not reached for" in section) == (outside > 0)
    assert f"**{outside}** after" in section


def test_scope_and_modes_limit_the_pass() -> None:
    snapshot = jbod(5)
    leader = make_plan(snapshot, PlanRequest("leader"))
    assert all(p.log_dirs == q.log_dirs for p, q in zip(leader.before.partitions, leader.after.partitions, strict=True)
               if p.replicas == q.replicas)
    assert not disk_moves(make_plan(snapshot, PlanRequest("repair")))
    fixed = make_plan(snapshot, request_of("cluster", scope=Scope(exclude_brokers=(1, 2))))
    assert disk_moves(fixed) and all(m.broker not in (1, 2) for m in disk_moves(fixed))
    only = make_plan(snapshot, request_of("cluster", scope=Scope(topics="t1")))
    assert disk_moves(only) and all(m.topic == "t1" for m in disk_moves(only))


# -- the outputs -----------------------------------------------------------------------------
def test_reassignment_json_carries_log_dirs_and_verify_reads_the_plan(tmp_path: Any) -> None:
    from kafka_replica_assignor.cli import execute
    from kafka_replica_assignor.cli.common import CommandError
    from kafka_replica_assignor.cli.verify import read_plan

    snapshot = jbod(2)
    request = request_of("cluster", batch_size=7)
    plan = make_plan(snapshot, request)
    files = render_outputs(plan, request, charts=False)
    entries = json.loads(files["reassignment.json"])["partitions"]
    assert all(len(e["log_dirs"]) == len(e["replicas"]) for e in entries)
    intra = {(p.topic, p.partition) for p in intra_only(plan)}
    assert intra and intra <= {(e["topic"], e["partition"]) for e in entries}
    before = {(p.topic, p.partition): p for p in snapshot.partitions}
    for e in entries:
        if (e["topic"], e["partition"]) in intra:
            assert tuple(e["replicas"]) == before[(e["topic"], e["partition"])].replicas
    batches = sorted(name for name in files if name.startswith("reassignment-"))
    assert sum(len(json.loads(files[n])["partitions"]) for n in batches) == len(entries)
    assert "## Log directories" in files["report.md"].decode()
    out = tmp_path / "plan"
    write_outputs(files, str(out))
    assert set(read_plan(str(out))) == {(e["topic"], e["partition"]) for e in entries}
    args = argparse.Namespace(plan=str(out), throttle=None, max_moves_per_broker=None, max_concurrent_moves=None,
                              order=None, no_leader_election=False, poll_interval_ms=1000,
                              stall_timeout_ms=600_000, unreachable_timeout_ms=300_000, adaptive_cap=None,
                              max_bytes_in_flight_per_broker=None)
    loaded = execute.load_plan(args)
    assert loaded.log_dirs == {(e["topic"], e["partition"], b): d for e in entries
                               for b, d in zip(e["replicas"], e["log_dirs"], strict=True) if d != "any"}
    assert set(dict(loaded.targets)) == {(e["topic"], e["partition"]) for e in entries}
    data = json.loads(files["reassignment.json"])
    data["partitions"][0]["log_dirs"] = data["partitions"][0]["log_dirs"][:1]
    (out / "reassignment.json").write_text(json.dumps(data))
    with pytest.raises(CommandError, match="log_dirs must be one directory") as err:
        execute.load_plan(args)
    assert err.value.code == 2


@pytest.mark.parametrize("seed", range(4))
def test_balancing_the_result_again_moves_nothing(seed: int) -> None:
    snapshot = jbod(seed, dirs=2 + seed % 2)
    request = request_of("cluster")
    plan = make_plan(snapshot, request)
    after = ClusterSnapshot(plan.after.brokers, tuple(       # the cluster once the plan ran
        p if p.log_dirs is not None else PartitionEntry(p.topic, p.partition, p.replicas, p.leader, p.isr,
                                                        p.size_bytes, o.log_dirs)
        for o, p in zip(plan.before.partitions, plan.after.partitions, strict=True)))
    assert disk_moves(plan)
    again = make_plan(after, request)
    assert not disk_moves(again) and not intra_only(again) and again.replica_moves == 0
