"""The throttle values are Kafka's: the expectations of ReassignPartitionsCommand's own unit test
(testMoveMap: the same sources and destinations give the same strings)."""

from __future__ import annotations

from planner.executor_schedule import Reassignment
from planner.executor_throttles import throttles


def test_the_strings_of_kafkas_move_map_test() -> None:
    moves = [
        Reassignment("foo", 0, (1, 2, 3), (1, 2, 5)),
        Reassignment("foo", 1, (4, 5, 6), (7, 8)),
        Reassignment("foo", 2, (1, 2), (3, 4)),
        Reassignment("foo", 3, (1, 2), (5, 6)),
        Reassignment("foo", 4, (1, 2), (3,)),
        Reassignment("foo", 5, (1, 2), (3, 4, 5, 6)),
        Reassignment("bar", 0, (2, 3, 4), (1, 2, 3)),
    ]
    got = throttles(moves)
    assert got.leader == {"foo": "0:1,0:2,0:3,1:4,1:5,1:6,2:1,2:2,3:1,3:2,4:1,4:2,5:1,5:2",
                          "bar": "0:2,0:3,0:4"}
    assert got.follower == {"foo": "0:5,1:7,1:8,2:3,2:4,3:5,3:6,4:3,5:3,5:4,5:5,5:6", "bar": "0:1"}
    assert got.brokers == frozenset(range(1, 9))


def test_lists_sort_as_strings_and_a_reorder_throttles_only_its_leaders() -> None:
    got = throttles([Reassignment("t", 10, (1, 2), (3, 2)), Reassignment("t", 2, (1, 2), (2, 1))])
    assert got.leader == {"t": "10:1,10:2,2:1,2:2"}
    assert got.follower == {"t": "10:3"}
    assert got.topic_configs() == {"t": {"leader.replication.throttled.replicas": "10:1,10:2,2:1,2:2",
                                         "follower.replication.throttled.replicas": "10:3"}}
