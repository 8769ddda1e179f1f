"""kafka_replica_assignor.assignors.validate: the request rules (checked once, before any assignor), and the one
placement checker (the raising fast check and the list of messages agree)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import pytest

import kafka_replica_assignor.assignors
import kafka_replica_assignor.assignors.base
from kafka_replica_assignor.assignors import (
    BrokerNotAvailableError,
    ClusterView,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    ReplicaAssignor,
    ReplicaAssignorError,
    place,
)
from kafka_replica_assignor.assignors.validate import (
    check_node_ids,
    check_request,
    check_size,
    partitions_to_place,
    placement_violations,
    read_current_assignment,
    validate_assignment,
)

CLUSTER = ClusterView.of((b, None) for b in range(4))


class CountingId(int):
    """A broker id that counts every hash and equality test made on it (the work done)."""

    work = 0

    def __hash__(self) -> int:
        CountingId.work += 1
        return int.__hash__(self)

    def __eq__(self, other: object) -> bool:
        CountingId.work += 1
        return int(self) == other


def _work_for_node_ids(n: int) -> int:
    ids = [CountingId(b) for b in range(n)] + [CountingId(0)]
    CountingId.work = 0
    with pytest.raises(InvalidReplicaAssignmentError, match=r"^Duplicate broker ids in NodeId: \[0\]\.$"):
        check_node_ids(ids, set(range(n)))
    return CountingId.work


def test_node_id_checks_do_linear_work():
    # 40,000 ids once took 47 s (a count per id); four times the ids must cost about four times the work
    small, large = _work_for_node_ids(2_000), _work_for_node_ids(8_000)
    assert large < 5 * small


def test_node_id_messages_in_kafka_order():
    with pytest.raises(InvalidReplicaAssignmentError, match=r"^Duplicate broker ids in NodeId: \[1, 9\]\.$"):
        check_node_ids([9, 1, 2, 1, 9], {0, 1, 2})  # duplicates first, even of unknown ids
    with pytest.raises(BrokerNotAvailableError) as err:
        check_node_ids([2, 99, 1, 98], (0, 1, 2))
    assert err.value.message == "Broker 99 not available (and 1 more): the cluster view has brokers [0, 1, 2]."
    check_node_ids([2, 0], {0, 1, 2})


def test_size_cap():
    check_size(10, 10)
    with pytest.raises(InvalidPartitionsError, match="^Number of partitions 11 is above this server's limit of 10"):
        check_size(11, 10)


def test_current_assignment_is_read_once_each_with_distinct_brokers():
    assert read_current_assignment([(1, [2, 3]), (0, (0, 1))]) == {1: (2, 3), 0: (0, 1)}
    with pytest.raises(InvalidReplicaAssignmentError, match="^Current assignment lists partition 0 twice"):
        read_current_assignment([(0, [0, 1]), (0, [1, 2])])
    for bad in ([], [1, 1]):
        with pytest.raises(InvalidReplicaAssignmentError, match=r"partition 0 must list distinct brokers, got \["):
            read_current_assignment([(0, bad)])


def test_partitions_to_place_follows_kafkas_add_partitions_rules():
    two = {0: (0, 1), 1: (1, 2)}
    assert partitions_to_place("t", 5, 3, {}, CLUSTER) == range(5)
    assert partitions_to_place("t", -1, 3, {}, CLUSTER) == range(0)
    assert partitions_to_place("t", 5, 2, two, CLUSTER) == range(2, 5)
    assert partitions_to_place("t", 2, 3, two, CLUSTER) == range(2)
    cases = [
        ({0: (0, 1), 2: (1, 2)}, 5, 2, InvalidReplicaAssignmentError, "partition id 1 is missing"),
        ({0: (0, 1), 1: (1,)}, 5, 2, InvalidReplicaAssignmentError, r"Inconsistent replication factor .*\[1, 2\]"),
        (two, 5, 1, InvalidReplicationFactorError, "^Replication factor 1 is below the current 2 of topic 't'"),
        (two, 1, 3, InvalidPartitionsError, "Topic t currently has 2 partitions, 1 would not be an increase"),
        (two, 2, 2, InvalidPartitionsError, "2 would not be an increase"),
        ({0: (0, 9)}, 1, 3, InvalidReplicaAssignmentError, r"has replicas on brokers \[9\]"),
    ]
    for current, n, rf, error, message in cases:
        with pytest.raises(error, match=message):
            partitions_to_place("t", n, rf, current, CLUSTER)
    assert partitions_to_place("t", 3, 2, {0: (0, 9)}, CLUSTER) == range(1, 3)  # not raised: not checked


def test_request_rules_in_order():
    grown = CLUSTER.with_assignment("t", {0: [0, 1, 2], 1: [0, 9]})
    cases = [
        ([], 0, CLUSTER, InvalidPartitionsError, r"^Number of partitions must be larger than 0\.$"),
        ([0], 0, CLUSTER, InvalidReplicationFactorError, r"^Replication factor must be larger than 0\.$"),
        ([-1], 5, CLUSTER, InvalidReplicationFactorError, r"^Replication factor: 5 larger than available brokers: 4\.$"),
        ([3, -2, -1], 1, CLUSTER, InvalidPartitionsError, r"^Partition ids must not be negative, got -2\.$"),
        (range(-3, 2), 1, CLUSTER, InvalidPartitionsError, "got -3"),
        (range(2, -3, -1), 1, CLUSTER, InvalidPartitionsError, "got -2"),
        ([1, 0], 2, grown, InvalidReplicationFactorError, "^Partition 0 of topic t already has 3 replicas"),
        ([1, 2], 2, grown, ReplicaAssignorError, r"^Partition 1 of topic t: current replicas \[9\] are not available"),
    ]
    for partitions, rf, cluster, error, message in cases:
        with pytest.raises(error, match=message):
            check_request("t", partitions, rf, cluster)
    check_request("t", [2, 3], 1, grown)  # only new partitions: the current ones are not checked


class _MustNotRun(ReplicaAssignor):
    name = "must-not-run"

    def assign_replicas_to_brokers(self, topic_name, partitions, replication_factor, cluster,
                                   principal=kafka_replica_assignor.assignors.ANONYMOUS, *, rng):
        raise AssertionError("an assignor ran on an invalid request")


def test_place_checks_the_request_before_any_assignor_runs():
    grown = CLUSTER.with_assignment("t", {0: [0, 1, 2]})
    for partitions, rf, cluster in [([], 1, CLUSTER), ([0], 5, CLUSTER), ([-1], 1, CLUSTER), ([0], 2, grown)]:
        with pytest.raises((InvalidPartitionsError, InvalidReplicationFactorError)):
            place(_MustNotRun(), "t", partitions, rf, cluster, rng=random.Random(0))


def test_one_checker_behind_every_public_name():
    assert kafka_replica_assignor.assignors.validate_assignment is kafka_replica_assignor.assignors.base.validate_assignment is validate_assignment
    assert kafka_replica_assignor.assignors.check_preconditions is kafka_replica_assignor.assignors.base.check_preconditions


BROKEN: list[tuple[Mapping[int, Sequence[int]], str]] = [
    ({0: [0, 1], 1: [1]}, "partition 1: 1 replicas returned, replication factor is 2"),
    ({0: [0, 1], 1: [1, 1]}, "partition 1: duplicate broker in replicas [1, 1]"),
    ({0: [0, 9], 1: [1, 2]}, "partition 0: broker 9 is not in the cluster view"),
    ({0: [0, -1], 1: [1, 2]}, "partition 0: placeholder -1 not allowed"),
    ({0: [0, 1], 1: [1, 2.5]}, "partition 1: replicas must be integers, got [1, 2.5]"),
    ({0: [0, True], 1: [1, 2]}, "partition 0: replicas must be integers, got [0, True]"),
    ({0: [2, 3], 1: [1, 2]}, "partition 0: current replicas [0] must be kept, got [2, 3]"),
]


@pytest.mark.parametrize(("answer", "message"), BROKEN)
def test_the_raising_check_and_the_list_name_the_same_violation(answer, message):
    current = {0: (0,)}
    with pytest.raises(ReplicaAssignorError) as err:
        validate_assignment(answer, range(2), 2, CLUSTER, current)
    assert err.value.message == message
    listed = placement_violations(answer, CLUSTER, 2, range(2), current=current, keep_order=False)
    assert listed == [message]


def test_the_raising_check_keeps_its_order_across_partitions():
    # a bool passes the set checks (True == 1): the count of partition 1 is reported first
    with pytest.raises(ReplicaAssignorError, match=r"^partition 1: 1 replicas returned"):
        validate_assignment({0: [True, 2], 1: [3]}, range(2), 2, CLUSTER)
    # placeholders: the leader is checked after every partition's replicas
    with pytest.raises(ReplicaAssignorError, match=r"^partition 1: duplicate broker"):
        validate_assignment({0: [-1, 2], 1: [3, 3]}, range(2), 2, CLUSTER, allow_placeholders=True)
    with pytest.raises(ReplicaAssignorError, match=r"^partition 0: the leader may not be a placeholder$"):
        validate_assignment({0: [-1, 2], 1: [3, -1]}, range(2), 2, CLUSTER, allow_placeholders=True)
    with pytest.raises(ReplicaAssignorError, match=r"^assignor returned the wrong partition ids \(missing \[1\], "
                                                   r"unexpected \[5\]\)$"):
        validate_assignment({0: [0, 1], 5: [1, 2]}, range(2), 2, CLUSTER)


def test_the_list_reports_every_violation():
    cluster = ClusterView.of([(0, "a"), (1, "a"), (2, "b"), (3, "b")], fenced={3})
    answer = {0: [3, 0], 1: [0, 1], 2: [9, 9, 9], 4: [1, 2]}
    assert placement_violations(answer, cluster, 2, range(4), current={1: [1]}, rack_spread=True,
                                leader_skew=0, replica_skew=0) == [
        "the wrong partition ids (missing [3], unexpected [4])",
        "partition 0: fenced broker 3 leads",
        "partition 1: current replicas [1] are not a prefix of [0, 1]",
        "partition 1: [0, 1] spans 1 racks, expected 2",
        "partition 2: 3 replicas returned, replication factor is 2",
        "partition 2: duplicate broker in replicas [9, 9, 9]",
        "partition 2: broker 9 is not in the cluster view",
        "leader counts range 0..1 (more than 0 apart): {0: 1, 1: 1, 2: 0, 3: 1, 9: 1}",
        "replica counts range 1..2 (more than 0 apart): {0: 2, 1: 2, 2: 1, 3: 1}",
    ]
