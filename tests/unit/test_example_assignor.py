"""The example third-party assignor, loaded the way an operator would load it."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from examples.least_loaded import LeastLoadedAssignor
from kafka_replica_assignor.assignors import (
    ClusterView,
    InvalidReplicationFactorError,
    create_assignor,
    load_assignor_class,
    place,
)
from tests.property.invariants import check_placement, replica_counts

CLASS_PATH = "examples.least_loaded.LeastLoadedAssignor"


def test_loaded_by_dotted_class_path():
    assert load_assignor_class(CLASS_PATH) is LeastLoadedAssignor
    assert isinstance(create_assignor(CLASS_PATH), LeastLoadedAssignor)


def test_docstring_example_new_partitions_avoid_loaded_brokers():
    cluster = ClusterView.of([(b, None) for b in range(4)], topics={"old": {0: [0, 1], 1: [1, 0]}})
    got = place(LeastLoadedAssignor(), "t", [0, 1], 2, cluster, rng=random.Random(1))
    assert {b for r in got.values() for b in r} == {2, 3}
    assert sorted(r[0] for r in got.values()) == [2, 3]


def test_fills_a_new_broker_first():
    old = {p: [p % 3, (p + 1) % 3] for p in range(30)}  # brokers 0-2 hold 20 replicas each
    cluster = ClusterView.of([(b, None) for b in range(4)], topics={"old": old})
    got = place(LeastLoadedAssignor(), "t", range(6), 2, cluster, rng=random.Random(7))
    check_placement(got, cluster, 2, range(6))
    assert all(3 in r for r in got.values())  # broker 3 (empty) gets a replica of every new partition


def test_spreads_one_request_evenly_on_an_empty_cluster():
    cluster = ClusterView.of([(b, f"r{b % 3}") for b in range(9)])
    got = place(LeastLoadedAssignor(), "t", range(27), 3, cluster, rng=random.Random(3))
    check_placement(got, cluster, 3, range(27), rack_spread=True, leader_balance=True, replica_balance=0)


def test_never_two_replicas_in_one_rack_when_avoidable():
    # rack "a" is empty and most attractive, but may hold only one replica per partition
    old = {p: [3, 4] for p in range(10)}
    cluster = ClusterView.of([(0, "a"), (1, "a"), (2, "a"), (3, "b"), (4, "c")], topics={"old": old})
    got = place(LeastLoadedAssignor(), "t", range(5), 3, cluster, rng=random.Random(0))
    check_placement(got, cluster, 3, range(5), rack_spread=True)
    # with more replicas than racks, a rack holds two only once every rack has one
    got = place(LeastLoadedAssignor(), "t", range(5), 4, cluster, rng=random.Random(0))
    assert all(len({cluster.rack_by_broker[b] for b in r}) == 3 for r in got.values())


def test_fenced_brokers_never_lead():
    cluster = ClusterView.of([(b, None) for b in range(4)], fenced={0, 1})
    got = place(LeastLoadedAssignor(), "t", range(10), 3, cluster, rng=random.Random(5))
    check_placement(got, cluster, 3, range(10), fenced_never_lead=True)
    assert Counter(r[0] for r in got.values()) == {2: 5, 3: 5}


def test_all_fenced_is_refused_by_the_framework():
    # before the plug-in runs, with Kafka's class and message (StripedReplicaPlacer's)
    cluster = ClusterView.of([(0, None), (1, None)], fenced={0, 1})
    with pytest.raises(InvalidReplicationFactorError, match=r"^All brokers are currently fenced\.$"):
        place(LeastLoadedAssignor(), "t", [0], 1, cluster, rng=random.Random(0))


def test_raised_replication_factor_keeps_current_replicas():
    current = {0: [0, 1], 1: [1, 2]}
    cluster = ClusterView.of([(b, f"r{b}") for b in range(5)], topics={"t": current})
    got = place(LeastLoadedAssignor(), "t", [0, 1, 2], 3, cluster, rng=random.Random(0))
    check_placement(got, cluster, 3, [0, 1, 2], current=current, rack_spread=True)
    # the third replicas go to the least-loaded brokers (3 and 4 hold nothing)
    assert {got[0][2], got[1][2]} == {3, 4}


def test_same_seed_same_answer_and_load_counts_all_topics():
    topics = {"a": {0: [0, 1, 2]}, "b": {0: [0, 1, 3], 1: [0, 2, 3]}}
    cluster = ClusterView.of([(b, None) for b in range(6)], topics=topics)
    first = place(LeastLoadedAssignor(), "t", range(4), 2, cluster, rng=random.Random(9))
    assert first == place(LeastLoadedAssignor(), "t", range(4), 2, cluster, rng=random.Random(9))
    loads = replica_counts({**{("a", p): r for p, r in topics["a"].items()},
                            **{("b", p): r for p, r in topics["b"].items()},
                            **{("t", p): r for p, r in first.items()}}, range(6))
    assert max(loads.values()) - min(loads.values()) <= 1
