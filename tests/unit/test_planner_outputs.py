"""Output files: Kafka's reassignment and leader-election JSON, batches, report, charts;
byte-identical for the same input, idempotent, written all or nothing."""

from __future__ import annotations

import json
import os

import pytest

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.report.outputs import render_outputs, write_outputs
from kafka_replica_assignor.planner.request import PlanRequest, RequestError
from kafka_replica_assignor.planner.solving.planning import make_plan


def cluster() -> ClusterSnapshot:
    brokers = tuple(BrokerEntry(i, f"r{i % 2}") for i in range(6)) + (BrokerEntry(6, "r0", alive=False),)
    parts = tuple(PartitionEntry(f"t{p % 3}", p, ((p % 4), 4 if p % 2 else 5, 6 if p % 5 == 0 else (p + 1) % 4))
                  for p in range(30))
    return ClusterSnapshot(brokers, tuple(p for p in parts if len(set(p.replicas)) == 3))


def apply(snapshot: ClusterSnapshot, reassignment: bytes) -> ClusterSnapshot:
    new = {(p["topic"], p["partition"]): tuple(p["replicas"]) for p in json.loads(reassignment)["partitions"]}
    return ClusterSnapshot(snapshot.brokers, tuple(
        PartitionEntry(p.topic, p.partition, new.get((p.topic, p.partition), p.replicas))
        for p in snapshot.partitions))


def test_kafka_formats_and_batches():
    snap = cluster()
    request = PlanRequest("cluster", threshold=0, batch_size=7)
    plan = make_plan(snap, request)
    files = render_outputs(plan, request, charts=False)
    full = json.loads(files["reassignment.json"])
    assert full["version"] == 1 and len(full["partitions"]) == len(plan.changed()) > 0
    assert all(set(p) == {"topic", "partition", "replicas"} for p in full["partitions"])
    batches = sorted(k for k in files if k.startswith("reassignment-"))
    assert [len(json.loads(files[k])["partitions"]) for k in batches][:-1] == [7] * (len(batches) - 1)
    assert sum(len(json.loads(files[k])["partitions"]) for k in batches) == len(full["partitions"])
    election = json.loads(files["leader-election.json"])
    assert set(election) == {"partitions"}
    assert len(election["partitions"]) == plan.leader_changes
    rollback = json.loads(files["rollback.json"])["partitions"]
    before = {(p.topic, p.partition): list(p.replicas) for p in snap.partitions}
    assert all(before[(p["topic"], p["partition"])] == p["replicas"] for p in rollback)
    report = files["report.md"].decode()
    assert "## Per broker" in report and "## Per rack" in report and "leader changes" in report
    assert files["moves.csv"].decode().count("\n") == len(plan.moves) + 1


def test_byte_identical_and_idempotent():
    snap = cluster()
    request = PlanRequest("cluster", threshold=0)
    first = render_outputs(make_plan(snap, request), request)
    second = render_outputs(make_plan(snap, request), request)
    assert first == second
    assert first["replicas.png"].startswith(b"\x89PNG") and first["leaders.png"].startswith(b"\x89PNG")
    balanced = apply(snap, first["reassignment.json"])
    again = render_outputs(make_plan(balanced, request), request, charts=False)
    assert again["reassignment.json"] == b'{"version":1,"partitions":[]}\n'
    assert again["leader-election.json"] == b'{"partitions":[]}\n'


def test_write_outputs_all_or_nothing(tmp_path):
    request = PlanRequest("leader")
    files = render_outputs(make_plan(cluster(), request), request, charts=False)
    out = tmp_path / "plan"
    write_outputs(files, str(out))
    assert sorted(os.listdir(out)) == sorted(files)
    blocked = tmp_path / "blocked"
    blocked.write_text("a file, not a directory")
    with pytest.raises(OSError):
        write_outputs(files, str(blocked))
    assert blocked.read_text() == "a file, not a directory"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".plan-")] == []


def test_requests_are_validated():
    with pytest.raises(RequestError, match="mode"):
        PlanRequest("sideways")
    with pytest.raises(RequestError, match="batch-size"):
        PlanRequest("cluster", batch_size=0)
    assert issubclass(RequestError, ValueError)
