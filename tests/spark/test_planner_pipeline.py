"""The Spark pipeline: the same bytes as the pure planner for one snapshot, a fleet in one job,
pure transforms checked on small DataFrames."""

from __future__ import annotations

import json
import os

import pytest

from assignors.snapshot import ClusterSnapshot
from planner.outputs import render_outputs
from planner.settings import PlanSettings, make_plan
from planner.pipeline import (
    broker_rows, broker_state, normalise, partition_rows, rack_state, read_snapshots, run_pipeline,
    topic_state, validation_errors,
)

pytestmark = pytest.mark.spark


def snapshot_dict(brokers: int, partitions: int, new: int, seed: int) -> dict:
    """Round robin over the first brokers, the last ``new`` empty; one dead broker's replicas."""
    ids = list(range(1, brokers + 1))
    used = ids[: brokers - new]
    parts = []
    for p in range(partitions):
        first = (p * 7 + seed) % len(used)
        reps = [used[(first + k * (1 + seed % 2)) % len(used)] for k in range(3)]
        if len(set(reps)) < 3:
            reps = [used[(first + k) % len(used)] for k in range(3)]
        parts.append({"topic": f"t{p % 5}", "partition": p, "replicas": reps})
    parts[0]["replicas"][1] = brokers + 10          # an unknown broker to repair
    return {"brokers": [{"id": b, "rack": f"r{b % 3}"} for b in ids], "partitions": parts}


def test_pipeline_plan_is_byte_identical_to_the_core(spark, tmp_path):
    data = snapshot_dict(12, 120, 2, seed=3)
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(data))
    settings = PlanSettings("cluster", threshold=0, batch_size=20, source=str(path))
    out = tmp_path / "spark-plan"
    summary = run_pipeline(str(path), str(out), settings, spark=spark)
    assert "Spark" in summary
    expected = render_outputs(make_plan(ClusterSnapshot.from_dict(data), settings), settings)
    written = {name: (out / name).read_bytes() for name in os.listdir(out)}
    assert written == expected
    assert json.loads(expected["reassignment.json"])["partitions"]


def test_fleet_of_clusters_in_one_job(spark, tmp_path):
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    lines = []
    for k in range(4):
        d = snapshot_dict(9 + k, 60 + 10 * k, 1 + k % 2, seed=k)
        lines.append(json.dumps({"cluster_id": f"c{k}", **d}))
    bad = snapshot_dict(6, 10, 1, seed=9)
    bad["partitions"][3]["replicas"] = [1, 1, 2]
    lines.append(json.dumps({"cluster_id": "broken", **bad}))
    (fleet / "fleet.jsonl").write_text("\n".join(lines) + "\n")
    settings = PlanSettings("cluster", threshold=0)
    out = tmp_path / "plans"
    summary = run_pipeline(str(fleet), str(out), settings, charts=False, spark=spark)
    assert "4 of 5 cluster(s) planned" in summary and "1 failed" in summary
    metrics = spark.read.parquet(str(out / "_tables" / "metrics")).orderBy("cluster_id").collect()
    assert [m.cluster_id for m in metrics] == ["c0", "c1", "c2", "c3"]
    for k, m in enumerate(metrics):
        core = make_plan(ClusterSnapshot.from_dict(json.loads(lines[k])), settings)
        expected = render_outputs(core, settings, charts=False)
        assert (out / f"c{k}" / "reassignment.json").read_bytes() == expected["reassignment.json"]
        assert (m.replica_moves, m.repairs, m.leader_changes) == (core.replica_moves, 1, core.leader_changes)
        assert m.bounds["replica_moves_tight_bound"] == core.bound("replica_moves_tight_bound")
    assert not (out / "broken").exists()
    plans = spark.read.parquet(str(out / "_tables" / "plans"))
    assert plans.count() == sum(m.partitions_reassigned for m in metrics)
    errors = spark.read.parquet(str(out / "_tables" / "errors")).collect()
    assert [(e.cluster_id, e.error) for e in errors] == [("broken", "t3-3 lists a broker twice")]
    report = (out / "fleet-report.md").read_text()
    assert "| broken | invalid: t3-3 lists a broker twice" in report


def test_state_transforms(spark, tmp_path):
    data = {"cluster_id": "x", "brokers": [{"id": 1, "rack": "a"}, {"id": 2, "rack": ""},
                                           {"id": 3, "rack": "a", "alive": False}],
            "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2]},
                           {"topic": "t", "partition": 1, "replicas": [3, 1]},
                           {"topic": "u", "partition": 0, "replicas": [9]}]}
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps(data) + "\n")
    clusters = normalise(read_snapshots(spark, str(path))).cache()   # a raw JSON read must be cached
    brokers, partitions = broker_rows(clusters), partition_rows(clusters)
    assert validation_errors(clusters, brokers, partitions).count() == 0
    state = {r.id: (r.rack, r.status, r.replicas, r.leaders)
             for r in broker_state(brokers, partitions).collect()}
    assert state == {1: ("a", "alive", 2, 1), 2: (None, "alive", 1, 0), 3: ("a", "dead", 1, 1),
                     9: (None, "unknown", 1, 1)}
    racks = {r.rack: (r.brokers, r.replicas) for r in rack_state(broker_state(brokers, partitions)).collect()}
    assert racks == {"a": (1, 2), "(no rack)": (1, 1)}
    topics = {r.topic: (r.partitions, r.replicas, r.broker_min, r.broker_max)
              for r in topic_state(brokers, partitions).collect()}
    assert topics == {"t": (2, 4, 1, 2), "u": (1, 1, 0, 0)}
