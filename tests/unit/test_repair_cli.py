"""The KIP-409 repair step (``kafka_replica_assignor.planner.replica_repair``) and ``replica-assignor repair``."""

from __future__ import annotations

import json
import random

import pytest
from structlog.testing import capture_logs

from kafka_replica_assignor.assignors import BrokerMetadata, PlacementSpec
from kafka_replica_assignor.assignors.default import DefaultReplicaAssignor
from kafka_replica_assignor.assignors.under_replicated import place_under_replicated
from kafka_replica_assignor.cli.main import main as cli_main
from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
from kafka_replica_assignor.planner.replica_repair import NO_RACK, Replacement, expected_back, rack_levels, repair
from kafka_replica_assignor.server.cluster_source import SnapshotSource
from kafka_replica_assignor.server.observed import ObservedBrokerStore


def snapshot(brokers, partitions) -> ClusterSnapshot:
    return ClusterSnapshot.from_dict({
        "brokers": [dict(zip(("id", "rack", "alive"), b, strict=False)) for b in brokers],
        "partitions": [{"topic": t, "partition": p, "replicas": r} for t, p, r in partitions],
    })


# -- the pure step -----------------------------------------------------------------------------
def test_module_example():
    s = snapshot([(0, "a"), (1, "b"), (2, "c"), (3, "c"), (4, "b", False), (5, "b", False)],
                 [("t", 0, [0, 1, -1]), ("t", 1, [5, 0, 2]), ("t", 2, [9, 0, 1]), ("t", 3, [4, 0, -1])])
    plan = repair(s, keep={4})
    assert dict(plan.assignments) == {("t", 0): (0, 1, 3), ("t", 1): (1, 0, 2), ("t", 2): (2, 0, 1),
                                      ("t", 3): (4, 0, 3)}
    assert plan.replacements == (Replacement("t", 0, 2, -1, 3), Replacement("t", 1, 0, 5, 1),
                                 Replacement("t", 2, 0, 9, 2), Replacement("t", 3, 2, -1, 3))
    assert plan.unrepaired == () and plan.deferred == ()
    # 5 forgotten instead of merely offline: the same plan, and 5 is never kept
    assert repair(s, forgotten={5}, keep={4, 5}) == plan


def test_placeholder_goes_to_the_rack_the_partition_lacks():
    # rack c is the only one partition 0 lacks, although broker 0 (rack a) holds the fewest replicas
    s = snapshot([(0, "a"), (1, "a"), (2, "b"), (3, "c")],
                 [("t", 0, [1, 2, -1]), ("u", 0, [3, 2, 1]), ("u", 1, [3, 1, 2])])
    assert dict(repair(s).assignments) == {("t", 0): (1, 2, 3)}


def test_forgotten_brokers_rack_wins_then_least_loaded():
    s = snapshot([(0, "a"), (1, "b"), (2, "b"), (3, "c"), (4, "b", False)],
                 [("t", 0, [4, 0, 3]), ("u", 0, [1, 0, 3])])
    assert dict(repair(s, forgotten={4}).assignments) == {("t", 0): (2, 0, 3)}


def test_a_new_rack_beats_the_old_rack_when_the_partition_already_uses_it():
    # 4 (rack b) is gone, but 1 already covers b: c is new to the partition, so 3, not 2
    s = snapshot([(0, "a"), (1, "b"), (2, "b"), (3, "c"), (4, "b", False)], [("t", 0, [4, 0, 1])])
    assert dict(repair(s).assignments) == {("t", 0): (3, 0, 1)}


def test_rack_tree_top_level_first():
    # both racks are new to the partition, only /dc2/r3 is in a new data centre
    s = snapshot([(0, "/dc1/r1"), (1, "/dc1/r2"), (2, "/dc2/r3")], [("t", 0, [0, -1]), ("u", 0, [2, 1])])
    assert dict(repair(s).assignments) == {("t", 0): (0, 2)}


def test_rack_levels_rule():
    levels = rack_levels({0: "/dc1/r1", 1: "dc1//r2", 2: "/dc3", 3: None})
    assert levels == {0: (("dc1",), ("dc1", "r1")), 1: (("dc1",), ("dc1", "r2")),
                      2: (("dc3",), ("dc3", "dc3")), 3: (NO_RACK, NO_RACK)}
    assert rack_levels({0: None, 1: ""}) == {0: (), 1: ()}


def test_offline_brokers_are_kept_only_when_asked():
    s = snapshot([(0, "a"), (1, "b"), (2, "c", False), (3, "c")],
                 [("t", 0, [0, 2, -1]), ("t", 1, [0, 1, 2])])
    assert expected_back(s) == {2} and expected_back(s, forgotten={2}) == frozenset()
    plan = repair(s, keep=expected_back(s))
    assert dict(plan.assignments) == {("t", 0): (0, 2, 1)}  # 2 counts for rack c: b is new
    assert {(r.topic, r.partition) for r in plan.replacements} == {("t", 0)}
    # nothing kept (the planner's view): 2 is replaced in its rack by 3
    assert dict(repair(s).assignments) == {("t", 0): (0, 3, 1), ("t", 1): (0, 1, 3)}


def test_move_budget_defers_whole_partitions():
    s = snapshot([(0, "a"), (1, "b"), (2, "c")],
                 [("t", 0, [-1, -2, 0]), ("t", 1, [9, 0, 1]), ("t", 2, [0, 1, -1])])
    plan = repair(s, max_moves=2)
    assert [(r.topic, r.partition) for r in plan.replacements] == [("t", 0), ("t", 0)]
    assert plan.deferred == (("t", 1), ("t", 2)) and plan.unrepaired == ()
    plan = repair(s, max_moves=1)
    assert dict(plan.assignments) == {("t", 1): (2, 0, 1)}
    assert plan.deferred == (("t", 0), ("t", 2))


def test_unknown_brokers_are_replaced():
    s = snapshot([(0, "a"), (1, "b"), (2, "c")], [("t", 0, [9, 1, 2])])
    assert dict(repair(s).assignments) == {("t", 0): (0, 1, 2)}


def test_not_enough_alive_brokers_leaves_the_partition_out():
    s = snapshot([(0, "a"), (1, "b")], [("t", 0, [0, -1, -2]), ("t", 1, [1, -1])])
    plan = repair(s)
    assert dict(plan.assignments) == {("t", 1): (1, 0)}
    assert plan.unrepaired == (("t", 0),)
    assert plan.to_reassignment() == {"version": 1, "partitions": [
        {"topic": "t", "partition": 1, "replicas": [1, 0]}]}


def test_nothing_to_repair():
    s = snapshot([(0, "a"), (1, "b")], [("t", 0, [0, 1])])
    plan = repair(s)
    assert plan.to_reassignment() == {"version": 1, "partitions": []}
    assert plan.replacements == () and plan.unrepaired == ()


# -- the command -------------------------------------------------------------------------------
@pytest.fixture
def cli(capsys):
    def run(*argv: str) -> tuple[int, str, str]:
        rc = cli_main(["repair", *argv])
        out, err = capsys.readouterr()
        return rc, out, err

    return run


def test_cli_prints_kafka_reassignment_json(cli, tmp_path):
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(snapshot([(0, "a"), (1, "b"), (2, "c")],
                                        [("t", 0, [0, 1, -1]), ("t", 1, [1, 2, 0])]).to_dict()))
    rc, out, err = cli("--snapshot", str(path))
    assert rc == 0
    assert json.loads(out) == {"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [0, 1, 2]}]}
    assert err.startswith("replica-assignor repair: 1 partition(s) repaired (1 placeholder(s) filled")


def test_cli_with_observed_store_moves_replicas_of_forgotten_brokers(cli, tmp_path):
    """4 was forgotten and the (live-like) snapshot lists only the alive brokers: its replicas
    move; 3 is offline in the store: expected back."""
    path = tmp_path / "cluster.json"
    s = snapshot([(0, "a"), (1, "b"), (2, "c")], [("t", 0, [3, 0, 1]), ("t", 1, [0, 4, 1])])
    path.write_text(json.dumps(s.to_dict()))
    store_path = tmp_path / "observed.db"
    with ObservedBrokerStore(store_path) as store:
        store.record([*(b.metadata for b in s.brokers), BrokerMetadata(3, "c"), BrokerMetadata(4, "c")], now=1.0)
        store.forget(4)  # decommissioned; 3 will come back
    rc, out, err = cli("--snapshot", str(path), "--observed-path", str(store_path))
    assert rc == 0, err
    assert json.loads(out)["partitions"] == [{"topic": "t", "partition": 1, "replicas": [0, 2, 1]}]
    # without the store, 3 is unknown too
    rc, out, _ = cli("--snapshot", str(path))
    assert [p["partition"] for p in json.loads(out)["partitions"]] == [0, 1]


def test_cli_a_broker_the_snapshot_lists_is_known_even_if_the_store_never_saw_it(cli, tmp_path):
    path = tmp_path / "cluster.json"
    s = snapshot([(0, "a"), (1, "b"), (2, "c"), (3, "c", False)], [("t", 0, [3, 0, 1]), ("t", 1, [0, 3, 1])])
    path.write_text(json.dumps(s.to_dict()))
    store_path = tmp_path / "observed.db"
    with ObservedBrokerStore(store_path) as store:
        store.record([s.brokers[i].metadata for i in range(3)], now=1.0)  # 3 never seen by this store
    rc, out, err = cli("--snapshot", str(path), "--observed-path", str(store_path))
    assert rc == 0, err
    assert json.loads(out)["partitions"] == []  # 3 is expected back: nothing moves


def test_cli_reports_partitions_left_out(cli, tmp_path):
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(snapshot([(0, "a")], [("t", 0, [0, -1])]).to_dict()))
    rc, out, err = cli("--snapshot", str(path))
    assert rc == 0 and json.loads(out)["partitions"] == []
    assert "1 partition(s) left out, not enough alive brokers: t-0" in err


@pytest.mark.parametrize("content, message", [
    (None, "cannot read snapshot"),
    ("{", "is not valid JSON"),
    ('{"brokers": [{"id": -1}]}', "brokers[0].id must be >= 0"),
])
def test_cli_bad_snapshot_is_one_line(cli, tmp_path, content, message):
    path = tmp_path / "cluster.json"
    if content is not None:
        path.write_text(content)
    rc, out, err = cli("--snapshot", str(path))
    assert rc == 2 and out == ""
    assert len(err.splitlines()) == 1 and message in err and err.startswith("replica-assignor repair: error:")


def test_cli_missing_store_is_one_line(cli, tmp_path):
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"brokers": [{"id": 0}]}))
    rc, out, err = cli("--snapshot", str(path), "--observed-path", str(tmp_path / "none.db"))
    assert rc == 2 and out == "" and len(err.splitlines()) == 1
    assert "no observed broker store" in err


def test_cli_needs_exactly_one_source(cli):
    with pytest.raises(SystemExit) as exit_:
        cli_main(["repair"])
    assert exit_.value.code == 2


# -- a rolling restart, from placement to repair ------------------------------------------------
async def test_rolling_restart_then_repair(cli, tmp_path):
    """Zone c's broker restarts: topic created with a placeholder in zone c, then repaired."""
    brokers = [{"id": 0, "rack": "a"}, {"id": 1, "rack": "b"}, {"id": 2, "rack": "c"}]
    path = tmp_path / "cluster.json"
    store = ObservedBrokerStore(tmp_path / "observed.db")
    path.write_text(json.dumps({"brokers": brokers}))
    source = SnapshotSource(path, store)
    with capture_logs():  # keep stdout for the command's JSON
        await source.start()  # all three seen
        brokers[2]["alive"] = False  # broker 2 goes down for its restart
        path.write_text(json.dumps({"brokers": brokers}))
        assert await source.refresh()
    created = place_under_replicated(
        DefaultReplicaAssignor(), PlacementSpec("orders", range(6), 3), source.view(), rng=random.Random(5),
        enabled=True, min_insync_replicas=2)
    assert all(sorted(r) == [-1, 0, 1] for r in created.values())

    brokers[2]["alive"] = True  # broker 2 is back
    path.write_text(json.dumps({"brokers": brokers, "partitions": [
        {"topic": "orders", "partition": p, "replicas": r} for p, r in created.items()]}))
    rc, out, _ = cli("--snapshot", str(path), "--observed-path", str(tmp_path / "observed.db"))
    assert rc == 0
    plan = {p["partition"]: p["replicas"] for p in json.loads(out)["partitions"]}
    assert plan == {p: [2 if b == -1 else b for b in r] for p, r in created.items()}
    await source.stop()
    store.close()
