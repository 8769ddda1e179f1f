"""Kafka's classic assignment: seed 001's Javadoc, Kafka's own tests, continuation.

Expected values come from Kafka's Javadoc and tests (AdminUtilsTest, AdminRackAwareTest,
AddPartitionsTest, RackAwareAutoTopicCreationTest, TopicCommandTest) or are derived by
hand from the algorithm; scenarios that Kafka runs with a random start are run here for
every (start index, shift) pair.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest

from kafka_replica_assignor.assignors import (
    BrokerMetadata,
    ClusterView,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    ReplicaAssignorError,
    create_assignor,
    place,
)
from kafka_replica_assignor.assignors.default import (
    MIXED_RACKS_MESSAGE,
    DefaultReplicaAssignor,
    assign_replicas_to_brokers,
    extend_replicas,
    rack_alternated_broker_list,
)
from tests.property.invariants import check_placement, leader_counts, replica_counts

JAVADOC_RACKS = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
R6 = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}


class ScriptedRandom:
    """A stand-in for ``random.Random`` that returns scripted draws and records the bounds."""

    def __init__(self, *draws: int) -> None:
        self.draws = list(draws)
        self.bounds: list[int] = []

    def randrange(self, n: int) -> int:
        self.bounds.append(n)
        if not self.draws:
            raise AssertionError(f"unexpected random draw randrange({n})")
        value = self.draws.pop(0)
        assert 0 <= value < n
        return value


def brokers_of(rack_map: dict[int, str | None]) -> list[BrokerMetadata]:
    """Kafka's ``toBrokerMetadata``: the map's order (ids ascending for these small maps)."""
    return [BrokerMetadata(b, r) for b, r in rack_map.items()]


def every_start(n: int):
    """Every (start index, shift) pair Kafka's random draws can produce for ``n`` brokers."""
    return [ScriptedRandom(start, shift) for start in range(n) for shift in range(n)]


def check_replica_distribution(assignment, rack_map, n_brokers, n_partitions, rf,
                               verify_rack_aware=True, verify_leaders=True, verify_replicas=True):
    """Kafka's ``RackAwareTest.checkReplicaDistribution``, assertion for assertion."""
    for p, replicas in assignment.items():
        assert len(set(replicas)) == len(replicas), f"duplicate brokers in partition {p}: {replicas}"
    if verify_rack_aware:
        for p, replicas in assignment.items():
            assert len({rack_map[b] for b in replicas}) == rf, f"partition {p}: {replicas}"
    if verify_leaders:
        leaders = leader_counts(assignment, rack_map)
        assert set(leaders.values()) == {n_partitions // n_brokers}, leaders
    if verify_replicas:
        counts = replica_counts(assignment, rack_map)
        assert set(counts.values()) == {n_partitions * rf // n_brokers}, counts


# --- seed 001: the Javadoc examples ---------------------------------------------------------

def test_javadoc_rack_unaware_table():
    # The Javadoc table, per broker column: partitions whose 1st/2nd/3rd replica is there.
    table = {
        1: [["p0", "p1", "p2", "p3", "p4"], ["p5", "p6", "p7", "p8", "p9"]],
        2: [["p4", "p0", "p1", "p2", "p3"], ["p8", "p9", "p5", "p6", "p7"]],
        3: [["p3", "p4", "p0", "p1", "p2"], ["p7", "p8", "p9", "p5", "p6"]],
    }
    expected: dict[int, list[int]] = {p: [None, None, None] for p in range(10)}
    for replica_number, rows in table.items():
        for row in rows:
            for broker, name in enumerate(row):
                expected[int(name[1:])][replica_number - 1] = broker
    got = assign_replicas_to_brokers(brokers_of(dict.fromkeys(range(5))), 10, 3, fixed_start_index=0)
    assert got == expected


def test_javadoc_rack_alternated_list():
    assert rack_alternated_broker_list(JAVADOC_RACKS) == [0, 3, 1, 5, 4, 2]
    without_5 = {b: r for b, r in JAVADOC_RACKS.items() if b != 5}
    assert rack_alternated_broker_list(without_5) == [0, 3, 1, 4, 2]


def test_javadoc_nine_brokers_three_racks():
    rack_map = {b: f"rack{b // 3 + 1}" for b in range(9)}
    assert rack_alternated_broker_list(rack_map) == [0, 3, 6, 1, 4, 7, 2, 5, 8]


def test_alternated_list_ignores_input_order_and_skips_used_up_racks():
    rack_map = {9: "b", 1: "a", 7: "c", 3: "a", 5: "a"}
    assert rack_alternated_broker_list(rack_map) == [1, 9, 7, 3, 5]
    assert rack_alternated_broker_list(dict(reversed(rack_map.items()))) == [1, 9, 7, 3, 5]


def test_alternated_list_uses_java_string_order():
    # Java compares UTF-16 code units: a surrogate pair (0xD83D...) sorts before U+FFFF,
    # while Python's code point order would put U+FFFF first.
    assert rack_alternated_broker_list({0: "\uffff", 1: "\U0001F600"}) == [1, 0]


def test_javadoc_six_plus_one_partitions_rack_aware():
    # testGetRackAlternatedBrokerListAndAssignReplicasToBrokers
    got = assign_replicas_to_brokers(brokers_of(JAVADOC_RACKS), 7, 3, 0, 0)
    assert got == {0: [0, 3, 1], 1: [3, 1, 5], 2: [1, 5, 4], 3: [5, 4, 2],
                   4: [4, 2, 0], 5: [2, 0, 3], 6: [0, 4, 2]}


def test_twelve_partitions_rack_unaware_continue_with_shift():
    # derived by hand: partitions 10 and 11 follow the second shift bump
    got = assign_replicas_to_brokers(brokers_of(dict.fromkeys(range(5))), 12, 3, fixed_start_index=0)
    assert got[10] == [0, 3, 4]
    assert got[11] == [1, 4, 0]


def test_replica_counts_are_not_balanced_in_general():
    # n=8, rf=4, 4 partitions, start=shift=0 (reference 1.7)
    got = assign_replicas_to_brokers(brokers_of(dict.fromkeys(range(8))), 4, 4, fixed_start_index=0)
    assert replica_counts(got, range(8)) == {0: 1, 1: 2, 2: 3, 3: 4, 4: 3, 5: 2, 6: 1, 7: 0}


# --- validation: order, types and messages --------------------------------------------------

def test_invalid_parameters_in_kafka_order():
    # AdminUtilsTest.testAssignReplicasToBrokersWithInvalidParameters
    brokers = brokers_of({0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: None})
    with pytest.raises(InvalidPartitionsError, match=r"^Number of partitions must be larger than 0\.$"):
        assign_replicas_to_brokers(brokers, 0, 0)
    with pytest.raises(InvalidReplicationFactorError, match=r"^Replication factor must be larger than 0\.$"):
        assign_replicas_to_brokers(brokers, 10, 0)
    with pytest.raises(InvalidReplicationFactorError) as too_big:
        assign_replicas_to_brokers(brokers, 10, 6)
    assert too_big.value.message == "Replication factor: 6 larger than available brokers: 5."
    with pytest.raises(ReplicaAssignorError) as mixed:
        assign_replicas_to_brokers(brokers, 10, 5)
    assert mixed.value.message == MIXED_RACKS_MESSAGE
    assert MIXED_RACKS_MESSAGE == "Not all brokers have rack information for replica rack aware assignment."


def test_replica_assignment_rack_unaware():
    # AdminUtilsTest.testReplicaAssignment
    brokers = brokers_of(dict.fromkeys(range(5)))
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas_to_brokers(brokers, 10, 0)
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas_to_brokers(brokers, 10, 6)
    expected = {0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
                5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2]}
    assert assign_replicas_to_brokers(brokers, 10, 3, 0) == expected


def test_no_brokers():
    with pytest.raises(InvalidReplicationFactorError, match="larger than available brokers: 0"):
        assign_replicas_to_brokers([], 1, 1)


# --- random draws ---------------------------------------------------------------------------

def test_random_draws_start_index_then_shift():
    brokers = brokers_of(dict.fromkeys(range(5)))
    rng = ScriptedRandom(1, 3)  # start 1, shift 3
    assert assign_replicas_to_brokers(brokers, 2, 2, rng=rng) == {0: [1, 0], 1: [2, 1]}
    assert rng.bounds == [5, 5]
    rng = ScriptedRandom(3, 1)  # the other way round gives another answer
    assert assign_replicas_to_brokers(brokers, 2, 2, rng=rng) == {0: [3, 0], 1: [4, 1]}


def test_random_draw_bound_is_the_alternated_list_length():
    rng = ScriptedRandom(0, 0)
    got = assign_replicas_to_brokers(brokers_of(JAVADOC_RACKS), 6, 3, rng=rng)
    assert rng.bounds == [6, 6]
    assert got == assign_replicas_to_brokers(brokers_of(JAVADOC_RACKS), 6, 3, fixed_start_index=0)


def test_fixed_start_index_draws_nothing():
    assign_replicas_to_brokers(brokers_of(R6), 6, 3, fixed_start_index=4, rng=ScriptedRandom())


def test_fixed_start_index_sets_start_and_shift():
    brokers = brokers_of(dict.fromkeys(range(5)))
    assert (assign_replicas_to_brokers(brokers, 7, 3, fixed_start_index=2)
            == assign_replicas_to_brokers(brokers, 7, 3, rng=ScriptedRandom(2, 2)))


def test_without_rng_a_fresh_random_is_used():
    got = assign_replicas_to_brokers(brokers_of(R6), 12, 3)
    check_replica_distribution(got, R6, 6, 12, 3)


def test_same_seed_same_answer():
    a = assign_replicas_to_brokers(brokers_of(R6), 50, 3, rng=random.Random(42))
    b = assign_replicas_to_brokers(brokers_of(R6), 50, 3, rng=random.Random(42))
    assert a == b


def test_broker_order_is_used_as_given():
    ordered = brokers_of(dict.fromkeys(range(4)))
    shuffled = [ordered[i] for i in (2, 0, 3, 1)]
    got = assign_replicas_to_brokers(shuffled, 4, 2, fixed_start_index=0)
    assert [r[0] for r in got.values()] == [2, 0, 3, 1]


def test_single_broker():
    assert assign_replicas_to_brokers([BrokerMetadata(7)], 3, 1, rng=random.Random(0)) == {0: [7], 1: [7], 2: [7]}
    assert assign_replicas_to_brokers([BrokerMetadata(7, "r")], 2, 1, rng=random.Random(0)) == {0: [7], 1: [7]}


def test_shift_is_bumped_before_start_partition_id_without_catching_up():
    # startPartitionId 12 with 6 brokers: the shift grows once, before partition 12 itself
    brokers = brokers_of(dict.fromkeys(range(6)))
    got = assign_replicas_to_brokers(brokers, 3, 2, fixed_start_index=0, start_partition_id=12)
    # shift 1: follower offset 1 + (1 + 0) % 5 = 2
    assert got == {12: [0, 2], 13: [1, 3], 14: [2, 4]}


# --- Kafka's rack-aware scenarios (AdminRackAwareTest) --------------------------------------

def test_assignment_with_rack_aware():
    got = assign_replicas_to_brokers(brokers_of(R6), 6, 3, 2, 0)
    check_replica_distribution(got, R6, 6, 6, 3)


def test_assignment_with_rack_aware_with_random_start_index():
    for rng in every_start(6):
        check_replica_distribution(assign_replicas_to_brokers(brokers_of(R6), 6, 3, rng=rng), R6, 6, 6, 3)


def test_assignment_with_rack_aware_with_uneven_replicas():
    got = assign_replicas_to_brokers(brokers_of(R6), 13, 3, 0, 0)
    check_replica_distribution(got, R6, 6, 13, 3, verify_leaders=False, verify_replicas=False)


def test_assignment_with_rack_aware_with_uneven_racks():
    rack_map = {0: "rack1", 1: "rack1", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}
    for rng in every_start(6):
        got = assign_replicas_to_brokers(brokers_of(rack_map), 12, 3, rng=rng)
        check_replica_distribution(got, rack_map, 6, 12, 3, verify_replicas=False)


def test_assignment_with_2_replicas_rack_aware():
    for rng in every_start(6):
        check_replica_distribution(assign_replicas_to_brokers(brokers_of(R6), 12, 2, rng=rng), R6, 6, 12, 2)


def test_rack_aware_expansion():
    rack_map = {6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack3", 11: "rack1"}
    for rng in every_start(6):
        got = assign_replicas_to_brokers(brokers_of(rack_map), 12, 2, start_partition_id=12, rng=rng)
        assert sorted(got) == list(range(12, 24))
        check_replica_distribution(got, rack_map, 6, 12, 2)


def test_assignment_with_2_replicas_rack_aware_with_6_partitions():
    for rng in every_start(6):
        check_replica_distribution(assign_replicas_to_brokers(brokers_of(R6), 6, 2, rng=rng), R6, 6, 6, 2)


def test_assignment_with_2_replicas_rack_aware_with_6_partitions_and_3_brokers():
    rack_map = {0: "rack1", 1: "rack2", 4: "rack3"}
    for rng in every_start(3):
        check_replica_distribution(assign_replicas_to_brokers(brokers_of(rack_map), 3, 2, rng=rng),
                                   rack_map, 3, 3, 2)


def test_large_number_partitions_assignment():
    rack_map = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1",
                6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack1", 11: "rack3"}
    for rng in every_start(12):
        check_replica_distribution(assign_replicas_to_brokers(brokers_of(rack_map), 96, 3, rng=rng),
                                   rack_map, 12, 96, 3)


def test_more_replicas_than_racks():
    rack_map = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}
    for rng in every_start(6):
        got = assign_replicas_to_brokers(brokers_of(rack_map), 6, 5, rng=rng)
        assert [len(r) for r in got.values()] == [5] * 6
        assert all(len({rack_map[b] for b in r}) == 3 for r in got.values())


def test_less_replicas_than_racks():
    rack_map = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}
    for rng in every_start(6):
        got = assign_replicas_to_brokers(brokers_of(rack_map), 6, 2, rng=rng)
        assert [len(r) for r in got.values()] == [2] * 6
        assert all(len({rack_map[b] for b in r}) == 2 for r in got.values())


def test_single_rack():
    rack_map = dict.fromkeys(range(6), "rack1")
    for rng in every_start(6):
        got = assign_replicas_to_brokers(brokers_of(rack_map), 6, 3, rng=rng)
        assert all(len(set(r)) == 3 for r in got.values())
        assert leader_counts(got, rack_map) == dict.fromkeys(range(6), 1)


def test_skip_broker_with_replica_already_assigned():
    rack_info = {0: "a", 1: "b", 2: "c", 3: "a", 4: "a"}
    got = assign_replicas_to_brokers(brokers_of(rack_info), 6, 4, fixed_start_index=2)
    check_replica_distribution(got, rack_info, 5, 6, 4, verify_rack_aware=False,
                               verify_leaders=False, verify_replicas=False)
    # and the rack rule: every partition covers all three racks before repeating one
    assert all(len({rack_info[b] for b in r}) == 3 for r in got.values())


def test_rack_aware_auto_topic_creation():
    # RackAwareAutoTopicCreationTest: 4 brokers, racks "node / 2"
    rack_map = {b: str(b // 2) for b in range(4)}
    for rng in every_start(4):
        check_replica_distribution(assign_replicas_to_brokers(brokers_of(rack_map), 8, 2, rng=rng),
                                   rack_map, 4, 8, 2)


def test_create_alter_topic_with_rack_aware():
    # TopicCommandTest.testCreateAlterTopicWithRackAware / ReassignPartitionsCommandTest:
    # create 18 partitions, then alter to 36 (add-partitions continuation); both pass all checks.
    rack_map = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack1", 4: "rack3", 5: "rack3"}
    cluster = ClusterView.of(rack_map.items())
    assignor = DefaultReplicaAssignor()
    for rng in every_start(6):
        created = assignor.assign_replicas_to_brokers("t", range(18), 3, cluster, rng=rng)
        check_replica_distribution(created, rack_map, 6, 18, 3)
        grown = cluster.with_assignment("t", created)
        added = assignor.assign_replicas_to_brokers("t", range(18, 36), 3, grown, rng=ScriptedRandom())
        check_replica_distribution({**created, **added}, rack_map, 6, 36, 3)


# --- DefaultReplicaAssignor: new topics -----------------------------------------------------

def test_assignor_is_registered_as_default():
    assert isinstance(create_assignor("default"), DefaultReplicaAssignor)
    assert DefaultReplicaAssignor.name == "default"


def test_assignor_sorts_brokers_by_id():
    cluster = ClusterView.of([(3, "b"), (0, "a"), (2, "a"), (1, "b")])
    got = DefaultReplicaAssignor().assign_replicas_to_brokers("t", range(8), 2, cluster, rng=random.Random(5))
    sorted_brokers = [BrokerMetadata(0, "a"), BrokerMetadata(1, "b"), BrokerMetadata(2, "a"), BrokerMetadata(3, "b")]
    assert got == assign_replicas_to_brokers(sorted_brokers, 8, 2, rng=random.Random(5))


def test_assignor_new_topic_starts_at_lowest_partition():
    cluster = ClusterView.of((b, None) for b in range(6))
    got = DefaultReplicaAssignor().assign_replicas_to_brokers(None, [12, 13, 14], 2, cluster,
                                                             rng=ScriptedRandom(0, 0))
    assert got == assign_replicas_to_brokers(cluster.brokers, 3, 2, 0, 12)


def test_assignor_non_consecutive_ids_match_one_consecutive_run():
    cluster = ClusterView.of(R6.items())
    wanted = [0, 2, 5, 6, 11, 13]
    got = DefaultReplicaAssignor().assign_replicas_to_brokers("t", wanted, 3, cluster, rng=ScriptedRandom(4, 1))
    full = assign_replicas_to_brokers(cluster.brokers, 14, 3, rng=ScriptedRandom(4, 1))
    assert got == {p: full[p] for p in wanted}


def test_assignor_validation_order_and_negative_ids():
    cluster = ClusterView.of([(0, "a"), (1, None)])
    assignor = DefaultReplicaAssignor()
    with pytest.raises(InvalidPartitionsError):
        place(assignor, "t", [], 0, cluster, rng=random.Random(0))
    with pytest.raises(ReplicaAssignorError, match="Not all brokers have rack information"):
        place(assignor, "t", [0], 2, cluster, rng=random.Random(0))
    with pytest.raises(InvalidPartitionsError, match="must not be negative"):
        place(assignor, "t", [-1, 0], 1, cluster.without_racks(), rng=random.Random(0))


def test_force_simple_assignment_strips_racks():
    cluster = ClusterView.of([(0, "a"), (1, None), (2, "b")])
    got = place(DefaultReplicaAssignor(), "t", range(3), 2, cluster.without_racks(), rng=ScriptedRandom(0, 0))
    assert got == {0: [0, 1], 1: [1, 2], 2: [2, 0]}


def test_place_validates_the_default_assignors_answer():
    cluster = ClusterView.of((b, f"r{b % 3}") for b in range(9))
    got = place(DefaultReplicaAssignor(), "t", range(30), 3, cluster, rng=random.Random(3))
    check_placement(got, cluster, 3, range(30), rack_spread=True, leader_balance=True)


# --- DefaultReplicaAssignor: continuation (add partitions, raise replication factor) --------

def test_add_partitions_replica_placement_all_servers():
    # AddPartitionsTest.testReplicaPlacementAllServers: 4 brokers, {0: [2, 3, 0, 1]} grown to 7
    cluster = ClusterView.of((b, None) for b in range(4)).with_assignment("t", {0: [2, 3, 0, 1]})
    got = DefaultReplicaAssignor().assign_replicas_to_brokers("t", range(1, 7), 4, cluster, rng=ScriptedRandom())
    assert {p: r[0] for p, r in got.items()} == {1: 3, 2: 0, 3: 1, 4: 2, 5: 3, 6: 0}
    assert all(set(r) == {0, 1, 2, 3} for r in got.values())
    assert got[1] == [3, 2, 0, 1]  # by hand: start = shift = 2 (broker 2's index)


def test_add_partitions_replica_placement_partial_servers():
    # AddPartitionsTest.testReplicaPlacementPartialServers: {0: [1, 2]} grown to 3
    cluster = ClusterView.of((b, None) for b in range(4)).with_assignment("t", {0: [1, 2]})
    got = DefaultReplicaAssignor().assign_replicas_to_brokers("t", [1, 2], 2, cluster, rng=ScriptedRandom())
    assert got[1][0] == 2 and set(got[1]) == {0, 2}
    assert got[2][0] == 3 and set(got[2]) == {1, 3}


@pytest.mark.parametrize(("leader", "start"), [(7, 3), (4, 2), (0, 0), (10, 0)])
def test_add_partitions_start_index_is_first_broker_at_or_above_leader(leader, start):
    brokers = [(9, None), (0, None), (4, None), (2, None)]  # id-sorted: 0, 2, 4, 9
    cluster = ClusterView.of(brokers).with_assignment("t", {0: [leader], 1: [0], 2: [2]})
    got = DefaultReplicaAssignor().assign_replicas_to_brokers("t", [3, 4, 5], 2, cluster, rng=ScriptedRandom())
    assert got == assign_replicas_to_brokers(cluster.brokers, 3, 2, fixed_start_index=start, start_partition_id=3)


def test_add_partitions_rack_aware_uses_sorted_index_in_alternated_list():
    cluster = ClusterView.of(JAVADOC_RACKS.items()).with_assignment("t", {0: [3, 1], 1: [5, 4]})
    got = DefaultReplicaAssignor().assign_replicas_to_brokers("t", [2, 3], 2, cluster, rng=ScriptedRandom())
    # broker 3 has index 3 in [0..5]; that index is used in the alternated list [0, 3, 1, 5, 4, 2]
    assert got == assign_replicas_to_brokers(cluster.brokers, 2, 2, fixed_start_index=3, start_partition_id=2)
    assert [got[2][0], got[3][0]] == [2, 0]  # alternated[(2 + 3) % 6], alternated[(3 + 3) % 6]


def test_add_partitions_requires_partition_zero():
    cluster = ClusterView.of((b, None) for b in range(4)).with_assignment("new-topic5", {1: [0, 1]})
    with pytest.raises(ReplicaAssignorError,
                       match="^Unexpected existing replica assignment for topic 'new-topic5', "
                             "partition id 0 is missing"):
        DefaultReplicaAssignor().assign_replicas_to_brokers("new-topic5", [2], 2, cluster, rng=ScriptedRandom())


def test_raise_replication_factor_keeps_current_replicas_and_adds_new_racks():
    cluster = ClusterView.of(R6.items())
    current = {0: [0, 1], 1: [1, 3], 2: [3, 5]}
    grown = cluster.with_assignment("t", current)
    got = DefaultReplicaAssignor().assign_replicas_to_brokers("t", [0, 1, 2], 3, grown, rng=ScriptedRandom())
    check_placement(got, cluster, 3, [0, 1, 2], current=current, rack_spread=True)


def test_raise_replication_factor_takes_kafka_order_of_the_partition():
    cluster = ClusterView.of((b, None) for b in range(5))
    current = {0: [2, 0], 1: [3, 4]}
    grown = cluster.with_assignment("t", current)
    got = DefaultReplicaAssignor().assign_replicas_to_brokers("t", [0, 1], 4, grown, rng=ScriptedRandom())
    # the Kafka order of each partition for "all brokers", continuation start index 2 (leader 2)
    order = assign_replicas_to_brokers(cluster.brokers, 2, 5, fixed_start_index=2)
    for p in (0, 1):
        extra = [b for b in order[p] if b not in current[p]][:2]
        assert got[p] == current[p] + extra


def test_raise_replication_factor_and_add_partitions_together():
    cluster = ClusterView.of(R6.items())
    current = {0: [0, 1], 1: [3, 5]}
    grown = cluster.with_assignment("t", current)
    assignor = DefaultReplicaAssignor()
    got = assignor.assign_replicas_to_brokers("t", range(4), 3, grown, rng=ScriptedRandom())
    check_placement(got, cluster, 3, range(4), current=current, rack_spread=True)
    only_new = assignor.assign_replicas_to_brokers("t", [2, 3], 3, grown, rng=ScriptedRandom())
    assert {p: got[p] for p in (2, 3)} == only_new
    assert place(assignor, "t", range(4), 3, grown, rng=ScriptedRandom()) == got


def test_lowering_replication_factor_is_refused():
    grown = ClusterView.of((b, None) for b in range(4)).with_assignment("t", {0: [0, 1, 2]})
    with pytest.raises(InvalidReplicationFactorError, match="would not be an increase"):
        place(DefaultReplicaAssignor(), "t", [0], 2, grown, rng=ScriptedRandom())


def test_current_replica_on_unavailable_broker_is_refused():
    grown = ClusterView.of((b, None) for b in range(4)).with_assignment("t", {0: [0, 9]})
    with pytest.raises(ReplicaAssignorError, match=r"current replicas \[9\] are not available"):
        place(DefaultReplicaAssignor(), "t", [0], 3, grown, rng=ScriptedRandom())


def test_extend_replicas_prefers_unused_racks_then_order():
    rack_of = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c"}
    assert extend_replicas([1], [2, 3, 4, 5], 3, rack_of) == [1, 3, 5]
    assert extend_replicas([1], [2, 3, 4, 5], 5, rack_of) == [1, 3, 5, 2, 4]
    assert extend_replicas([1], [2, 3, 4, 5], 3) == [1, 2, 3]
    assert extend_replicas([1, 2], [1, 2, 3], 2, rack_of) == [1, 2]


def test_leader_counts_are_even_for_large_rack_aware_topics():
    cluster = ClusterView.of((b, f"rack-{b % 5}") for b in range(20))
    got = DefaultReplicaAssignor().assign_replicas_to_brokers("t", range(1000), 3, cluster, rng=random.Random(11))
    assert set(Counter(r[0] for r in got.values()).values()) == {50}
    assert set(replica_counts(got, range(20)).values()) == {150}


def test_every_start_helper_covers_all_pairs():
    pairs = {(rng.draws[0], rng.draws[1]) for rng in every_start(4)}
    assert pairs == set(itertools.product(range(4), repeat=2))


def test_add_partitions_requires_replicas_on_partition_zero():
    cluster = ClusterView.of((b, None) for b in range(4)).with_assignment("t", {0: [], 1: [0, 1]})
    with pytest.raises(ReplicaAssignorError, match="partition id 0 has no replicas"):
        DefaultReplicaAssignor().assign_replicas_to_brokers("t", [2], 2, cluster, rng=ScriptedRandom())
