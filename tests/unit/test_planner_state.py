"""Cluster state: counts per broker and per rack-tree node, skew, problems."""

from __future__ import annotations

import json

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.racks import RackTree
from kafka_replica_assignor.planner.report.cluster_report import describe, render

BROKERS = (
    BrokerEntry(1, "/dc1/r1"), BrokerEntry(2, "/dc1/r2"), BrokerEntry(3, "/dc2/r1"),
    BrokerEntry(4, "/dc2/r1"), BrokerEntry(5, "/dc2/r2", alive=False),
)
PARTS = (
    PartitionEntry("a", 0, (1, 3)),        # two data centres: diverse
    PartitionEntry("a", 1, (3, 4)),        # one data centre: not diverse at level 1
    PartitionEntry("a", 2, (1, 2)),        # dc1 only: not diverse at level 1
    PartitionEntry("b", 0, (5, 1)),        # on a dead broker
    PartitionEntry("b", 1, (8, 2)),        # on an unknown broker
    PartitionEntry("b", 2, (1, -1)),       # a placeholder
)


def test_describe_counts_and_problems():
    state = describe(ClusterSnapshot(BROKERS, PARTS))
    by_id = {b.id: b for b in state.brokers}
    assert (by_id[1].replicas, by_id[1].leaders) == (4, 3)
    assert (by_id[5].alive, by_id[5].replicas) == (False, 1)
    assert [(b.id, b.replicas) for b in state.unknown_brokers] == [(8, 1)]
    racks = {(r.level, r.rack): (r.brokers, r.replicas, r.leaders) for r in state.racks}
    assert racks[(1, "/dc1")] == (2, 6, 3)
    assert racks[(1, "/dc2")] == (2, 3, 1)           # the dead broker 5 is not counted
    assert racks[(2, "/dc2/r1")] == (2, 3, 1)
    assert [(d.topic, d.partition, d.level) for d in state.not_diverse][:2] == [("a", 1, 1), ("a", 2, 1)]
    assert [(m.topic, m.partition, m.broker) for m in state.on_dead] == [("b", 0, 5)]
    assert [m.broker for m in state.on_unknown] == [8]
    assert [m.broker for m in state.placeholders] == [-1]
    assert state.replicas == 12 and state.partitions == 6
    # 12 replicas over 4 alive brokers: ceil 3; broker 1 has 4, plus 3 to repair
    assert state.replica_moves_lower_bound == 1 + 3
    assert state.replicas_spread.max == 4 and state.replicas_spread.ceil == 3


def test_json_and_text():
    state = describe(ClusterSnapshot(BROKERS, PARTS))
    data = json.loads(json.dumps(state.to_dict()))
    assert data["skew"]["replicas"]["ideal"] == [3, 3]
    assert data["placeholders"] == [{"topic": "b", "partition": 2, "broker": -1}]
    assert data["topics"][0] == {"topic": "a", "partitions": 3, "replicas": 6, "per_broker": [1, 2]}
    text = render(state)
    assert "/dc2/r1" in text and "unknown" in text
    assert "partitions lacking rack diversity: 5" in text   # a-1, a-2 and the degraded b-*
    assert "placeholders (KIP-409): 1: b-2 on -1" in text


def test_rack_tree_padding_and_rackless_clusters():
    tree = RackTree.of({1: "/dc1/r1", 2: "/dc2"})
    assert tree.depth == 2 and tree.keys[2][0] != tree.keys[1][0]
    assert tree.names[tree.keys[2][1]] == "/dc2/dc2"
    flat = describe(ClusterSnapshot((BrokerEntry(1), BrokerEntry(2)), (PartitionEntry("t", 0, (1,)),)))
    assert flat.racks == () and flat.not_diverse == ()
