"""The Spark pipeline: the same bytes as the pure planner for one snapshot, a fleet in one job,
pure transforms checked on small DataFrames."""

from __future__ import annotations

import json
import os

import pytest

from bench.snapshots import SnapshotSpec, generate
from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
from kafka_replica_assignor.planner.fleet.pipeline import (
    broker_rows,
    broker_state,
    normalise,
    partition_rows,
    rack_state,
    read_snapshots,
    run_pipeline,
    topic_state,
    validation_errors,
)
from kafka_replica_assignor.planner.report.outputs import render_outputs
from kafka_replica_assignor.planner.request import PlanRequest, RequestError
from kafka_replica_assignor.planner.solving.planning import make_plan
from tests.planning import request_of

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
    request = request_of("cluster", threshold=0, batch_size=20, source=str(path))
    out = tmp_path / "spark-plan"
    summary = run_pipeline(str(path), str(out), request, spark=spark)
    assert "Spark" in summary
    expected = render_outputs(make_plan(ClusterSnapshot.from_dict(data), request), request)
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
    request = PlanRequest("cluster", threshold=0)
    out = tmp_path / "plans"
    summary = run_pipeline(str(fleet), str(out), request, charts=False, spark=spark)
    assert "4 of 5 cluster(s) planned" in summary and "1 failed" in summary
    metrics = spark.read.parquet(str(out / "_tables" / "metrics")).orderBy("cluster_id").collect()
    assert [m.cluster_id for m in metrics] == ["c0", "c1", "c2", "c3"]
    for k, m in enumerate(metrics):
        core = make_plan(ClusterSnapshot.from_dict(json.loads(lines[k])), request)
        expected = render_outputs(core, request, charts=False)
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


def test_fleet_honours_capacity_and_sizes_like_the_single_cluster_path(spark, tmp_path):
    """Sized partitions and brokers' capacity_bytes reach the planner on the --fleet path: each
    cluster's files are the single-cluster command's, and differ from a plan without capacity."""
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    clusters = {f"sized-{seed}": generate(SnapshotSpec(brokers=10, partitions=200, new=2, dead=1, hot=2,
                                                       capacity=1.25, seed=seed))
                for seed in (1, 2)}
    # disks adding up to less than the bytes: provably too full (at 1.2 a plan exists)
    clusters["too-full"] = generate(SnapshotSpec(brokers=9, partitions=120, new=2, dead=1, hot=2,
                                                 capacity=0.8, seed=2))
    for name, data in clusters.items():
        (fleet / f"{name}.json").write_text(json.dumps(data))
    request = request_of("cluster", threshold=10)     # the heuristic alone
    out = tmp_path / "plans"
    summary = run_pipeline(str(fleet), str(out), request, charts=False, spark=spark)
    assert "2 of 3 cluster(s) planned" in summary and "1 failed" in summary
    for name in ("sized-1", "sized-2"):
        data = clusters[name]
        assert all("capacity_bytes" in b for b in data["brokers"])
        assert all("size_bytes" in p for p in data["partitions"])
        core = make_plan(ClusterSnapshot.from_dict(data), request)
        expected = render_outputs(core, request, charts=False)
        assert {f: (out / name / f).read_bytes() for f in os.listdir(out / name)} == expected
        uncapped = {**data, "brokers": [{k: v for k, v in b.items() if k != "capacity_bytes"}
                                        for b in data["brokers"]]}
        assert make_plan(ClusterSnapshot.from_dict(uncapped), request).after != core.after
    with pytest.raises(RequestError, match="capacity infeasible") as single:
        make_plan(ClusterSnapshot.from_dict(clusters["too-full"]), request)
    assert f"| too-full | failed: RequestError: {single.value}" in (out / "fleet-report.md").read_text()
    assert not (out / "too-full").exists()


def test_parquet_fleet_without_the_optional_fields(spark, tmp_path):
    """A Parquet fleet written before capacity_bytes existed still reads (the field is null)."""
    rows = [{"cluster_id": "old", "brokers": [{"id": 1, "rack": "a"}, {"id": 2, "rack": "b"}],
             "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2]}]}]
    path = tmp_path / "fleet.parquet"
    spark.createDataFrame(rows, "cluster_id string, brokers array<struct<id:long,rack:string>>, "
                                "partitions array<struct<topic:string,partition:long,replicas:array<long>>>") \
        .write.parquet(str(path))
    clusters = normalise(read_snapshots(spark, str(path)))
    assert [(r.id, r.capacity_bytes) for r in broker_rows(clusters).collect()] == [(1, None), (2, None)]
    assert [r.size_bytes for r in partition_rows(clusters).collect()] == [None]


def jbod_dict(seed: int) -> dict:
    """``snapshot_dict`` with two log directories per broker, replicas crowded into the first."""
    data = snapshot_dict(10, 80, 2, seed=seed)
    for b in data["brokers"]:
        b["log_dirs"] = ["/data/a", "/data/b"]
    for n, p in enumerate(data["partitions"]):
        p["size_bytes"] = (n % 7 + 1) << 20
        p["log_dirs"] = ["/data/a" if n % 5 else "/data/b", None, "/data/a"]
    return data


def test_log_dirs_plan_like_the_core_and_are_validated_alike(spark, tmp_path):
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    good = [jbod_dict(k) for k in range(2)]
    short = jbod_dict(5)
    short["partitions"][4]["log_dirs"] = ["/data/a"]
    relative = jbod_dict(6)
    relative["partitions"][2]["log_dirs"][0] = "data/a"
    lines = [json.dumps({"cluster_id": f"c{k}", **d}) for k, d in enumerate(good)]
    lines += [json.dumps({"cluster_id": "short", **short}), json.dumps({"cluster_id": "relative", **relative})]
    (fleet / "fleet.jsonl").write_text("\n".join(lines) + "\n")
    request = request_of("cluster")
    out = tmp_path / "plans"
    summary = run_pipeline(str(fleet), str(out), request, charts=False, spark=spark)
    assert "2 of 4 cluster(s) planned" in summary
    for k, d in enumerate(good):
        expected = render_outputs(make_plan(ClusterSnapshot.from_dict(d), request), request, charts=False)
        assert b'"log_dirs"' in expected["reassignment.json"]
        assert {name: (out / f"c{k}" / name).read_bytes() for name in expected} == expected
    errors = sorted((e.cluster_id, e.error) for e in spark.read.parquet(str(out / "_tables" / "errors")).collect())
    assert errors == [("relative", "t2-2: a log directory must be an absolute path"),
                      ("short", "t4-4: log_dirs has 1 entries for 3 replicas (one per replica)")]
    for cluster, message in errors:      # the snapshot file's own check says the same
        with pytest.raises(ValueError, match=message.split(": ", 1)[1].replace("(", r"\(").replace(")", r"\)")):
            ClusterSnapshot.from_dict(json.loads(next(x for x in lines if f'"{cluster}"' in x)))


def rated_dict(seed: int) -> dict:
    """A generated cluster with skewed produce and consume rates and network capacities."""
    data = generate(SnapshotSpec(brokers=8, partitions=160, racks=2, new=1, dead=0, hot=2, seed=seed))
    for k, p in enumerate(data["partitions"]):
        rate = 1000.5 * (k % 7 + 1) * (10 if k % 23 == 0 else 1)
        p["bytes_in_per_s"] = rate
        p["bytes_out_per_s"] = 2 * rate
    total_in = sum(p["bytes_in_per_s"] * len(p["replicas"]) for p in data["partitions"])
    for b in data["brokers"]:
        b["network_in_capacity"] = round(2 * total_in / len(data["brokers"]))
        b["network_out_capacity"] = 1e12
    return data


def test_fleet_carries_rates_and_network_capacities_like_the_single_cluster_path(spark, tmp_path):
    """bytes_in_per_s, bytes_out_per_s and the network capacities reach the planner on the --fleet
    path (each cluster's files are the single-cluster command's, and differ from a plan without
    rates); a negative rate or capacity is refused by name, as a snapshot file's is."""
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    good = rated_dict(4)
    bad = rated_dict(5)
    bad["partitions"][3]["bytes_in_per_s"] = -1.0
    bad["brokers"][1]["network_out_capacity"] = -5
    (fleet / "rated.json").write_text(json.dumps(good))
    (fleet / "bad.json").write_text(json.dumps(bad))
    request = request_of("cluster", threshold=10)
    out = tmp_path / "plans"
    summary = run_pipeline(str(fleet), str(out), request, charts=False, spark=spark)
    assert "1 of 2 cluster(s) planned" in summary
    core = make_plan(ClusterSnapshot.from_dict(good), request)
    expected = render_outputs(core, request, charts=False)
    assert {f: (out / "rated" / f).read_bytes() for f in os.listdir(out / "rated")} == expected
    assert b"network-in" in expected["report.md"]
    plain = {"brokers": [{k: v for k, v in b.items() if not k.startswith("network")} for b in good["brokers"]],
             "partitions": [{k: v for k, v in p.items() if not k.startswith("bytes_")} for p in good["partitions"]]}
    assert make_plan(ClusterSnapshot.from_dict(plain), request).after != core.after
    errors = sorted(e.error for e in spark.read.parquet(str(out / "_tables" / "errors")).collect())
    p3 = bad["partitions"][3]
    assert errors == [f"broker {bad['brokers'][1]['id']} network_out_capacity must be a finite number >= 0 "
                      "(bytes per second)",
                      f"{p3['topic']}-{p3['partition']} bytes_in_per_s must be a finite number >= 0 (bytes per second)"]
    for where, field in (("partitions", "bytes_in_per_s"), ("brokers", "network_out_capacity")):
        one = json.loads(json.dumps(good))      # the snapshot file's own check says the same
        one[where][1][field] = -1
        with pytest.raises(ValueError, match=f"{field} must be a finite number >= 0"):
            ClusterSnapshot.from_dict(one)
