"""The throttle values are Kafka's: the expectations of ReassignPartitionsCommand's own unit test
(testMoveMap: the same sources and destinations give the same strings)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from kafka_replica_assignor.planner.execution.executor_schedule import Reassignment
from kafka_replica_assignor.planner.execution.executor_state import ExecutionState
from kafka_replica_assignor.planner.execution.executor_throttles import (
    BROKER_RATES,
    BROKER_THROTTLES,
    ThrottleKeeper,
    throttles,
)
from kafka_replica_assignor.planner.execution.executor_throttles import (
    FOLLOWER_REPLICAS as FOLLOWER,
)
from kafka_replica_assignor.planner.execution.executor_throttles import (
    LEADER_REPLICAS as LEADER,
)


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


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[dict, dict]] = []

    def alter_configs(self, brokers: Mapping[int, Mapping[str, str | None]] = {},
                      topics: Mapping[str, Mapping[str, str | None]] = {}) -> dict[str, str]:
        self.calls.append(({b: dict(c) for b, c in brokers.items()}, {t: dict(c) for t, c in topics.items()}))
        return {}


def test_the_keeper_sends_only_changes_and_records_before_sending(tmp_path: Path) -> None:
    state = ExecutionState.new(str(tmp_path), "x")
    state.throttle = 100
    admin = Recorder()
    keeper = ThrottleKeeper(admin, state, lambda e, f: None)
    a, b = Reassignment("t", 0, (1, 2), (3, 2)), Reassignment("u", 0, (1, 4), (1, 5))
    keeper.sync([a, b])
    brokers, topics = admin.calls[-1]
    assert sorted(brokers) == [1, 2, 3, 4, 5] and brokers[1] == dict.fromkeys(BROKER_RATES, "100")
    assert topics == {"t": {LEADER: "0:1,0:2", FOLLOWER: "0:3"}, "u": {LEADER: "0:1,0:4", FOLLOWER: "0:5"}}
    assert state.throttled_brokers == {1, 2, 3, 4, 5} and state.throttled_topics == {"t", "u"}
    keeper.sync([a, b])
    assert len(admin.calls) == 1                      # nothing changed, nothing sent
    keeper.sync([b])                                   # t-0 finished: its topic is throttled no more
    assert admin.calls[-1] == ({}, {"t": {LEADER: None, FOLLOWER: None}})
    state.throttle = 200                               # a new rate reaches every broker already set
    keeper.sync([b])
    assert sorted(admin.calls[-1][0]) == [1, 2, 3, 4, 5] and admin.calls[-1][1] == {}
    keeper.remove()
    assert admin.calls[-1][0] == {n: dict.fromkeys(BROKER_THROTTLES) for n in (1, 2, 3, 4, 5)}
    assert admin.calls[-1][1] == {"t": {LEADER: None, FOLLOWER: None}, "u": {LEADER: None, FOLLOWER: None}}
    assert state.throttled_brokers == set() and ExecutionState.load(str(tmp_path)).throttled_topics == set()  # type: ignore[union-attr]
