"""KRaft's StripedReplicaPlacer: Kafka's test vectors (StripedReplicaPlacerTest), exactly.

Kafka's tests use ``MockRandom`` (a ``java.util.Random`` with a fixed LCG); :class:`JavaMockRandom`
reproduces it, with ``randrange(n)`` = Java's ``nextInt(n)``, so the vectors match draw for draw.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_replica_assignor.assignors import ClusterView, InvalidReplicationFactorError, create_assignor, place
from kafka_replica_assignor.assignors.java_random import JavaRandom
from kafka_replica_assignor.assignors.striped import (
    BrokerList,
    RackList,
    StripedReplicaAssignor,
    UsableBroker,
    _java_string_hash,
    java_hash_order,
    java_shuffle,
)
from tests.property.invariants import check_placement


class JavaMockRandom(JavaRandom):
    """Kafka's ``MockRandom``: ``java.util.Random`` with ``next(bits)`` replaced by a fixed LCG,
    seed 17, ``state = state * 2862933555777941757 + 3037000493``."""

    def __init__(self, seed: int = 17) -> None:
        super().__init__(seed)

    def seed(self, a=None, version=2) -> None:
        self.state = a

    def next_bits(self, bits: int) -> int:
        self.state = (self.state * 2862933555777941757 + 3037000493) & (2**64 - 1)
        return self.state >> (64 - bits)


class Zeros:
    def randrange(self, bound: int) -> int:
        return 0


def usable(*specs):
    """``(id, rack)`` or ``(id, rack, fenced)`` tuples to UsableBroker."""
    return [UsableBroker(*s) for s in specs]


def cluster_of(specs):
    return ClusterView.of([(s[0], s[1]) for s in specs],
                          fenced={s[0] for s in specs if len(s) > 2 and s[2]})


# --- the Java random source itself -----------------------------------------------------------

def test_java_mock_random_is_java_random_arithmetic():
    rng = JavaMockRandom()
    state = 17
    for bound in (1, 2, 3, 4, 5, 7, 16, 1000):
        state = (state * 2862933555777941757 + 3037000493) % 2**64
        r31 = state >> 33
        value = rng.randrange(bound)
        if bound & (bound - 1) == 0:
            assert value == (bound * r31) >> 31
        else:
            assert value == r31 % bound  # no rejection happens for these small bounds


def test_java_shuffle_swaps_from_the_end():
    class Scripted:
        def __init__(self):
            self.bounds = []

        def randrange(self, n):
            self.bounds.append(n)
            return 0

    items, rng = [1, 2, 3, 4], Scripted()
    java_shuffle(items, rng)
    assert rng.bounds == [4, 3, 2]
    assert items == [2, 3, 4, 1]  # swap(3,0), swap(2,0), swap(1,0)


def test_java_string_hash_and_hash_map_order():
    assert _java_string_hash("hello") == 99162322
    assert _java_string_hash("Aa") == _java_string_hash("BB") == 2112
    assert java_hash_order(["BB", "Aa"]) == ["BB", "Aa"]  # same bucket: insertion order
    assert java_hash_order(["Aa", "BB"]) == ["Aa", "BB"]
    assert java_hash_order(["4", "2", None, "3", "1"]) == [None, "1", "2", "3", "4"]
    # "a" (97) and "q" (113) share bucket 1 of 16 buckets, but not of 32 (13+ keys)
    assert java_hash_order(["q", "a"]) == ["q", "a"]
    many = ["q", "a"] + [f"k{i}" for i in range(11)]
    order = java_hash_order(many)
    assert order.index("a") < order.index("q")


def test_hash_map_order_when_a_bucket_grows_past_eight():
    """Java's HashMap resizes instead of building a tree when a ninth key joins a bucket of a
    table under 64 buckets (found by Kafka's own StripedReplicaPlacer, tests/oracle): nine names
    16 code points apart share bucket 1 of 16, then split by bucket 1 and 17 of 32."""
    names = ["A", "Q", "a", "q", "Á", "Ñ", "á", "ñ", "ā"]  # 65, 81, 97, ..., 257
    assert java_hash_order(names[:8]) == names[:8]  # eight keys: one bucket, insertion order
    assert java_hash_order(names) == ["A", "a", "Á", "á", "ā", "Q", "q", "Ñ", "ñ"]
    # eight names with one hash code: one bucket whatever the table size, insertion order
    same_hash = ["Aa" + x + y for x in ("Aa", "BB") for y in ("Aa", "BB")] + ["BB" + x + y for x in ("Aa", "BB")
                                                                           for y in ("Aa", "BB")]
    assert java_hash_order(same_hash) == same_hash


# --- StripedReplicaPlacerTest ----------------------------------------------------------------

def test_broker_list():
    assert BrokerList().next(1) == -1
    brokers = BrokerList([0, 1, 2, 3])
    assert [brokers.next(0) for _ in range(6)] == [0, 1, 2, 3, -1, -1]
    assert [brokers.next(1) for _ in range(5)] == [1, 2, 3, 0, -1]


def test_avoid_fenced_replica_if_possible_on_single_rack():
    rack_list = RackList(JavaMockRandom(), usable((3, None), (1, None, True), (0, None), (4, None), (2, None)))
    assert (rack_list.total_brokers, rack_list.unfenced_brokers) == (5, 4)
    assert rack_list.rack_names == [None]
    for bad in (0, -1):
        with pytest.raises(InvalidReplicationFactorError):
            rack_list.place(bad)
    assert [rack_list.place(4) for _ in range(5)] == [
        [3, 4, 0, 2], [4, 0, 2, 3], [0, 2, 3, 4], [2, 3, 4, 0], [0, 4, 3, 2]]


def test_multi_partition_topic_placement_on_single_unfenced_broker():
    cluster = cluster_of([(0, None), (1, None, True)])
    got = StripedReplicaAssignor().assign_replicas_to_brokers("t", range(3), 1, cluster, rng=JavaMockRandom())
    assert got == {0: [0], 1: [0], 2: [0]}


def test_placement_on_fenced_replica_on_single_rack():
    rack_list = RackList(JavaMockRandom(), usable((3, None), (1, None, True), (2, None)))
    assert (rack_list.total_brokers, rack_list.unfenced_brokers) == (3, 2)
    assert [rack_list.place(3) for _ in range(4)] == [[3, 2, 1], [2, 3, 1], [3, 2, 1], [2, 3, 1]]


def test_rack_list_with_multiple_racks():
    rack_list = RackList(JavaMockRandom(), usable(
        (11, "1"), (10, "1"), (30, "3"), (31, "3"), (21, "2"), (20, "2", True)))
    assert (rack_list.total_brokers, rack_list.unfenced_brokers) == (6, 5)
    assert rack_list.rack_names == ["1", "2", "3"]
    assert [rack_list.place(4) for _ in range(3)] == [[11, 21, 31, 10], [21, 30, 10, 20], [31, 11, 21, 30]]


def test_rack_list_with_invalid_racks():
    rack_list = RackList(JavaMockRandom(), usable(
        (11, "1"), (10, "1"), (30, "3", True), (31, "3", True), (20, "2", True), (21, "2", True),
        (41, "4"), (40, "4", True)))
    assert (rack_list.total_brokers, rack_list.unfenced_brokers) == (8, 3)
    # sorted by name only, although racks 2 and 3 are entirely fenced
    assert rack_list.rack_names == ["1", "2", "3", "4"]
    assert [rack_list.place(4) for _ in range(3)] == [[41, 11, 21, 30], [10, 20, 31, 41], [41, 21, 30, 11]]


def test_successful_placement():
    cluster = cluster_of([(0, None), (3, None), (2, None), (1, None)])
    got = StripedReplicaAssignor().assign_replicas_to_brokers("t", range(5), 3, cluster, rng=JavaMockRandom())
    assert got == {0: [2, 3, 0], 1: [3, 0, 1], 2: [0, 1, 2], 3: [1, 2, 3], 4: [1, 0, 2]}


def test_even_distribution():
    cluster = cluster_of([(b, None) for b in range(4)])
    got = StripedReplicaAssignor().assign_replicas_to_brokers("t", range(200), 2, cluster, rng=JavaMockRandom())
    counts = Counter(tuple(r) for r in got.values())
    assert counts == {(0, 1): 14, (0, 2): 22, (0, 3): 14, (1, 0): 17, (1, 2): 17, (1, 3): 16,
                      (2, 0): 13, (2, 1): 17, (2, 3): 20, (3, 0): 20, (3, 1): 19, (3, 2): 11}


# --- errors: messages and check order ---------------------------------------------------------

def test_all_brokers_fenced():
    cluster = cluster_of([(11, "1", True), (10, "1", True)])
    with pytest.raises(InvalidReplicationFactorError) as err:
        StripedReplicaAssignor().assign_replicas_to_brokers("t", [0], 1, cluster, rng=JavaMockRandom())
    assert err.value.message == "All brokers are currently fenced."


def test_not_enough_brokers():
    cluster = cluster_of([(11, "1"), (10, "1")])
    with pytest.raises(InvalidReplicationFactorError) as err:
        StripedReplicaAssignor().assign_replicas_to_brokers("t", [0], 3, cluster, rng=JavaMockRandom())
    assert err.value.message == ("The target replication factor of 3 cannot be reached "
                                 "because only 2 broker(s) are registered.")


def test_non_positive_replication_factor():
    cluster = cluster_of([(11, "1"), (10, "1")])
    with pytest.raises(InvalidReplicationFactorError) as err:
        StripedReplicaAssignor().assign_replicas_to_brokers("t", [0], 0, cluster, rng=JavaMockRandom())
    assert err.value.message == "Invalid replication factor 0: the replication factor must be positive."


def test_rack_list_errors():
    all_fenced = RackList(JavaMockRandom(), usable((0, None, True), (1, None, True), (2, None, True)))
    with pytest.raises(InvalidReplicationFactorError, match=r"^All brokers are currently fenced\.$"):
        all_fenced.place(3)
    two = RackList(JavaMockRandom(), usable((11, "1"), (10, "1")))
    with pytest.raises(InvalidReplicationFactorError, match="of 3 cannot be reached because only 2 broker"):
        two.place(3)
    with pytest.raises(InvalidReplicationFactorError, match=r"^Invalid replication factor -1: "):
        two.place(-1)


def test_check_order_differs_between_placer_and_rack_list():
    specs = [(0, None, True), (1, None, True)]
    # the placer: positive, then all fenced, then too few
    with pytest.raises(InvalidReplicationFactorError, match="must be positive"):
        StripedReplicaAssignor().assign_replicas_to_brokers("t", [0], 0, cluster_of(specs), rng=JavaMockRandom())
    with pytest.raises(InvalidReplicationFactorError, match="All brokers are currently fenced"):
        StripedReplicaAssignor().assign_replicas_to_brokers("t", [0], 3, cluster_of(specs), rng=JavaMockRandom())
    # the rack list: positive, then too few, then all fenced
    with pytest.raises(InvalidReplicationFactorError, match="cannot be reached"):
        RackList(JavaMockRandom(), usable(*specs)).place(3)


# --- semantics around the vectors ---------------------------------------------------------------

def test_docstring_stripes_with_all_offsets_zero():
    racks = {"A": [0, 1, 2], "B": [10, 11, 12], "C": [20, 21, 22]}
    rack_list = RackList(Zeros(), usable(*[(b, r) for r, ids in racks.items() for b in ids]))
    got = [rack_list.place(3) for _ in range(3)]
    assert got == [[0, 10, 20], [11, 21, 1], [22, 2, 12]]


def test_one_fresh_rack_list_per_call():
    specs = [(b, f"r{b % 3}") for b in range(9)]
    cluster = cluster_of(specs)
    rng = JavaMockRandom()
    first = StripedReplicaAssignor().assign_replicas_to_brokers("t", range(4), 3, cluster, rng=rng)
    second = StripedReplicaAssignor().assign_replicas_to_brokers("t", range(4), 3, cluster, rng=rng)
    replay = JavaMockRandom()
    expected = []
    for _ in range(2):
        rack_list = RackList(replay, usable(*specs))
        expected.append({p: rack_list.place(3) for p in range(4)})
    assert [first, second] == expected
    assert first != second  # re-randomised per call


def test_partitions_are_placed_in_id_order():
    cluster = cluster_of([(b, None) for b in range(4)])
    got = StripedReplicaAssignor().assign_replicas_to_brokers("t", [7, 3, 5], 2, cluster, rng=JavaMockRandom())
    reference = StripedReplicaAssignor().assign_replicas_to_brokers("t", range(3), 2, cluster, rng=JavaMockRandom())
    assert got == {3: reference[0], 5: reference[1], 7: reference[2]}


def test_registered_and_validated_by_place():
    assert isinstance(create_assignor("striped"), StripedReplicaAssignor)
    cluster = ClusterView.of([(b, f"r{b % 3}") for b in range(9)], fenced={4})
    got = place(StripedReplicaAssignor(), "t", range(30), 3, cluster, rng=random.Random(1))
    check_placement(got, cluster, 3, range(30), fenced_never_lead=True)


def test_raise_replication_factor_keeps_current_replicas():
    cluster = ClusterView.of([(b, f"r{b % 3}") for b in range(9)])
    current = {0: [0, 1], 1: [4, 5]}
    grown = cluster.with_assignment("t", current)
    got = place(StripedReplicaAssignor(), "t", [0, 1, 2], 3, grown, rng=random.Random(2))
    check_placement(got, cluster, 3, [0, 1, 2], current=current, rack_spread=True)


def test_lowering_replication_factor_is_refused():
    grown = ClusterView.of([(b, None) for b in range(4)]).with_assignment("t", {0: [0, 1, 2]})
    with pytest.raises(InvalidReplicationFactorError, match="would not be an increase"):
        place(StripedReplicaAssignor(), "t", [0], 2, grown, rng=random.Random(0))


@st.composite
def fenced_clusters(draw):
    n = draw(st.integers(1, 12))
    n_racks = draw(st.integers(1, 4))
    racks = draw(st.lists(st.sampled_from([None] + [f"r{i}" for i in range(n_racks)]), min_size=n, max_size=n))
    fenced = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    if all(fenced):
        fenced[draw(st.integers(0, n - 1))] = False
    cluster = ClusterView.of(list(zip(range(n), racks, strict=True)), fenced={b for b in range(n) if fenced[b]})
    return cluster, draw(st.integers(1, n)), draw(st.integers(1, 30))


@settings(max_examples=150)
@given(fenced_clusters(), st.integers(0, 2**32))
def test_fenced_brokers_never_lead_and_are_used_last(case, seed):
    cluster, rf, n_partitions = case
    got = place(StripedReplicaAssignor(), "t", range(n_partitions), rf, cluster, rng=random.Random(seed))
    check_placement(got, cluster, rf, range(n_partitions), fenced_never_lead=True)
    unfenced = len(cluster.unfenced_ids)
    if len({b.rack for b in cluster.brokers}) == 1 and rf <= unfenced:
        # one rack: its unfenced list serves every replica before the fenced list is touched
        assert all(not set(r) & cluster.fenced for r in got.values())


@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 40), st.integers(0, 2**32), st.data())
def test_even_racks_without_fencing_spread_over_racks(n_racks, per_rack, n_partitions, seed, data):
    cluster = ClusterView.of([(b, f"r{b % n_racks}") for b in range(n_racks * per_rack)])
    rf = data.draw(st.integers(1, n_racks))
    got = place(StripedReplicaAssignor(), "t", range(n_partitions), rf, cluster, rng=random.Random(seed))
    check_placement(got, cluster, rf, range(n_partitions), rack_spread=True)
