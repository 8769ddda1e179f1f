"""The planner's modes through the one entry point (:func:`make_plan`): each mode runs its own
goals, in the command line's order of modes; an option the mode ignores, and a mode without
goals, are refused (:class:`RequestError`) before planning."""

from __future__ import annotations

from collections import Counter

import pytest

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.goals.order import goals_for
from kafka_replica_assignor.planner.plan import MoveKind, Working
from kafka_replica_assignor.planner.request import MODES, PlanRequest, RequestError, Scope
from kafka_replica_assignor.planner.solving import planning
from kafka_replica_assignor.planner.solving.planning import make_plan
from tests.planning import plan_of, request_of
from tests.property.plan_invariants import check_plan

SNAPSHOT = ClusterSnapshot(brokers=(BrokerEntry(0, "a"), BrokerEntry(1, "b")),
                           partitions=(PartitionEntry("t", 0, (0, 1)), PartitionEntry("t", 1, (0, 1))))

BUSY = ClusterSnapshot(
    brokers=(*(BrokerEntry(b) for b in range(4)), BrokerEntry(4, alive=False)),
    partitions=(*(PartitionEntry("t", i, (0, 1)) for i in range(6)), PartitionEntry("t", 6, (4, 0))))
"""Broker 4 is dead (t-6 needs a repair), 0 and 1 hold every other replica (a replica band to
reach) and 0 leads six of the seven partitions (a leader band to reach)."""

REPLICA_GOALS = ["repair", "capacity", "diversity", "topics", "counts", "bytes", "moves"]


def test_the_modes_are_in_the_command_lines_order() -> None:
    assert MODES == ("leader", "replica", "cluster", "repair")


@pytest.mark.parametrize(("mode", "keys"), [
    ("leader", ["leaders"]),
    ("replica", REPLICA_GOALS),
    ("cluster", [*REPLICA_GOALS, "leaders"]),
    ("repair", ["repair"]),
])
def test_each_mode_runs_its_own_goals_in_rank_order(mode: str, keys: list[str]) -> None:
    request = request_of(mode)
    assert [g.key for g in goals_for(Working(SNAPSHOT, request.scope), request)] == keys


@pytest.mark.parametrize(("mode", "scope", "added"), [
    ("leader", Scope(topics="t", demote_brokers=(1,)), ["scope", "demote"]),
    ("replica", Scope(topics="t", exclude_brokers=(0,), add_brokers=(1,), remove_brokers=(2,)),
     ["remove", "exclude", "add", "scope"]),
    ("cluster", Scope(exclude_brokers=(0,), remove_brokers=(2,), demote_brokers=(1,)),
     ["remove", "exclude", "demote"]),
    ("repair", Scope(exclude_topics="u", add_brokers=(1,), remove_brokers=(2,)), ["remove", "add", "scope"]),
])
def test_an_option_runs_its_goal_in_the_modes_that_take_it(mode: str, scope: Scope, added: list[str]) -> None:
    snap = ClusterSnapshot(SNAPSHOT.brokers + (BrokerEntry(2, "a"),), SNAPSHOT.partitions)
    request = request_of(mode, scope=scope)
    keys = [g.key for g in goals_for(Working(snap, scope), request)]
    assert [k for k in keys if k in added] == added
    default = [g.key for g in goals_for(Working(snap), request_of(mode))]
    assert sorted(keys) == sorted(default + added)


def test_each_mode_plans_with_its_own_goals() -> None:
    # replica and repair: already balanced, nothing to repair: nothing moves; leader and
    # cluster: broker 1 takes the leadership of one of the two partitions
    for mode in MODES:
        options: dict[str, object] = {"threshold": 0} if mode in ("replica", "cluster") else {}
        if mode != "leader":
            options["max_moves"] = 5
        plan = plan_of(SNAPSHOT, mode, **options)
        moves = [(m.source, m.destination, m.kind) for m in plan.moves]
        assert moves == ([(0, 1, MoveKind.LEADER)] if mode in ("leader", "cluster") else []), mode
        assert plan.leader_changes == len(moves), mode
        assert plan == plan_of(SNAPSHOT, mode, **options), mode


def _leaders(snap: ClusterSnapshot) -> Counter[int]:
    return Counter(p.replicas[0] for p in snap.partitions)


def _replicas(snap: ClusterSnapshot) -> Counter[int]:
    return Counter(b for p in snap.partitions for b in p.replicas)


def test_leader_mode_only_reorders_replica_lists() -> None:
    plan = plan_of(BUSY, "leader")
    check_plan(plan, data_moves=False)
    assert plan.moves and {m.kind for m in plan.moves} == {MoveKind.LEADER}
    assert plan.after.partitions[6] == BUSY.partitions[6]       # a dead replica: Kafka cannot reorder it
    led = _leaders(ClusterSnapshot(BUSY.brokers, plan.after.partitions[:6]))
    assert sorted(led.values()) == [3, 3]                        # 0 and 1 share what only they hold


def test_repair_mode_only_repairs() -> None:
    plan = plan_of(BUSY, "repair")
    check_plan(plan)
    assert [(m.partition, m.source, m.kind) for m in plan.moves] == [(6, 4, MoveKind.REPAIR)]
    assert plan.after.partitions[:6] == BUSY.partitions[:6]


def test_replica_mode_repairs_and_balances_replicas_not_leaders() -> None:
    plan = plan_of(BUSY, "replica", threshold=0)
    check_plan(plan, replica_band=(3, 4))
    assert {m.kind for m in plan.moves} == {MoveKind.REPAIR, MoveKind.REPLICA}
    # no reordering: a preferred leader changes only when its replica moves away
    for p, q in zip(BUSY.partitions, plan.after.partitions, strict=True):
        assert p.replicas[0] == q.replicas[0] or p.replicas[0] not in q.replicas, (p, q)
        assert [b for b in q.replicas if b in p.replicas] == [b for b in p.replicas if b in q.replicas], (p, q)


def test_cluster_mode_balances_replicas_then_leaders() -> None:
    plan = plan_of(BUSY, "cluster", threshold=0)
    check_plan(plan, replica_band=(3, 4), leader_band=(1, 2))
    assert {MoveKind.REPAIR, MoveKind.REPLICA, MoveKind.LEADER} <= {m.kind for m in plan.moves}
    assert max(_replicas(plan.after).values()) == 4


IGNORED = [
    ("leader", {"threshold": 5}, "--threshold is ignored by --mode leader"),
    ("repair", {"threshold": 5}, "--threshold is ignored by --mode repair"),
    ("leader", {"max_moves": 3}, "--max-moves is ignored by --mode leader"),
    ("replica", {"max_leader_changes": 3}, "--max-leader-changes is ignored by --mode replica"),
    ("repair", {"max_leader_changes": 3}, "--max-leader-changes is ignored by --mode repair"),
    ("leader", {"scope": Scope(add_brokers=(1,))}, "--add-brokers is ignored by --mode leader"),
    ("leader", {"remove": (1,)}, "--remove-brokers is ignored by --mode leader"),
    ("leader", {"scope": Scope(exclude_brokers=(1,))}, "--exclude-brokers is ignored by --mode leader"),
    ("replica", {"scope": Scope(demote_brokers=(1,))}, "--demote-brokers is ignored by --mode replica"),
    ("repair", {"scope": Scope(demote_brokers=(1,))}, "--demote-brokers is ignored by --mode repair"),
]


@pytest.mark.parametrize(("mode", "options", "message"), IGNORED,
                         ids=[f"{mode}-{next(iter(options))}-{i}" for i, (mode, options, _) in enumerate(IGNORED)])
def test_an_option_the_mode_ignores_is_refused_before_planning(monkeypatch: pytest.MonkeyPatch, mode: str,
                                                                options: dict[str, object], message: str) -> None:
    def planned(*_: object) -> None:
        raise AssertionError("planned although the request is refused")

    monkeypatch.setattr(planning, "canonical", planned)
    with pytest.raises(RequestError, match=message):
        plan_of(SNAPSHOT, mode, **options)


@pytest.mark.parametrize(("mode", "options"), [
    ("replica", {"threshold": 5, "max_moves": 3, "scope": Scope(exclude_brokers=(0,), add_brokers=(1,))}),
    ("cluster", {"threshold": 5, "max_moves": 3, "max_leader_changes": 2, "scope": Scope(demote_brokers=(1,))}),
    ("leader", {"max_leader_changes": 2, "scope": Scope(demote_brokers=(1,))}),
    ("repair", {"max_moves": 3, "scope": Scope(add_brokers=(1,), exclude_brokers=(0,))}),
])
def test_the_options_a_mode_takes_are_not_refused(mode: str, options: dict[str, object]) -> None:
    assert isinstance(plan_of(SNAPSHOT, mode, **options).moves, tuple)


def test_a_refusal_is_a_value_error() -> None:
    assert issubclass(RequestError, ValueError)


def test_a_mode_without_goals_is_refused_before_planning() -> None:
    with pytest.raises(RequestError, match="mode must be one of leader, replica, cluster, repair, got 'disk'"):
        PlanRequest("disk")
    with pytest.raises(RequestError):
        make_plan(SNAPSHOT, PlanRequest("disk"))
