"""The fewer-moves goal (kafka_replica_assignor.planner.goals.fewer_moves): it undoes what the other goals did not
need, never at the cost of a figure they reached, and the same way on every run."""

from __future__ import annotations

from random import Random

import pytest

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.goals import order
from kafka_replica_assignor.planner.goals.fewer_moves import FewerMovesGoal
from kafka_replica_assignor.planner.goals.model import Model
from kafka_replica_assignor.planner.request import PlanError, RequestError
from tests.planning import plan_of, request_of
from tests.unit.test_planner_exact import after_lists, off_targets
from tests.unit.test_planner_goals import model_of as goals_model
from tests.unit.test_planner_goals import random_cluster


def model_of(snap: ClusterSnapshot, threshold: int = 10) -> tuple[Model, FewerMovesGoal]:
    """The model of ``snap`` with the replica goals prepared, and its fewer-moves goal."""
    _, model, goals = goals_model(snap, request_of("replica", threshold=threshold))
    goal = next(g for g in goals if isinstance(g, FewerMovesGoal))
    return model, goal


def bytes_moved(snap: ClusterSnapshot, lists: list[list[int]]) -> int:
    return sum((p.size_bytes or 0) * len(set(r) - set(p.replicas)) for p, r in zip(snap.partitions, lists, strict=True))


def rotation() -> ClusterSnapshot:
    # brokers 1-4, no racks, 100 bytes each of a-0 and b-0 on 1, c-0 on 2, d-0 on 3
    brokers = tuple(BrokerEntry(b, None, True, None, None, None) for b in (1, 2, 3, 4))
    parts = (PartitionEntry("a", 0, (1,), None, None, 100), PartitionEntry("b", 0, (1,), None, None, 100),
             PartitionEntry("c", 0, (2,), None, None, 100), PartitionEntry("d", 0, (3,), None, None, 100))
    return ClusterSnapshot(brokers, parts)


def rotated(snap: ClusterSnapshot) -> tuple[Model, FewerMovesGoal]:
    # a-0 to the empty broker 4 is needed; b-0 1 -> 2, c-0 2 -> 3, d-0 3 -> 1 is a rotation that
    # keeps every band (one replica and 100 bytes per broker) and moves 300 bytes for nothing
    m, goal = model_of(snap)
    assert (m.lo, m.hi) == (1, 1)
    for i, x, y in ((0, 1, 4), (1, 1, 2), (2, 2, 3), (3, 3, 1)):
        m.do_move(i, x, y)
    assert bytes_moved(snap, m.reps) == 400
    return m, goal


def test_the_rotation_of_the_module_doc_is_undone():
    # no single undo keeps the count band [1, 1]; the relaxation takes the three undos, made
    # together
    snap = rotation()
    m, goal = rotated(snap)
    assert goal.greedy() == 0            # each undo alone puts two replicas on a broker
    goal.optimize()
    assert bytes_moved(snap, m.reps) == 100
    assert m.reps == [[4], [1], [2], [3]]
    assert any("fewer moves: undos saved 300 bytes" in n and "HiGHS" in n for n in m.work.notes)


def test_moves_that_only_hold_together_are_made_together():
    snap = rotation()
    m, goal = rotated(snap)
    assert goal.together([(1, 2, 1), (2, 3, 2), (3, 1, 3)]) == 300
    assert m.reps == [[4], [1], [2], [3]]


def test_a_needless_move_is_undone_by_the_greedy_stage():
    # threshold 50: every broker in both bands before and after; moving c-0
    # from 2 to 4 was not needed once a-0 went to 4
    snap = rotation()
    m, goal = model_of(snap, 50)
    for i, x, y in ((0, 1, 4), (2, 2, 4)):
        m.do_move(i, x, y)
    assert goal.greedy() == 100
    assert bytes_moved(snap, m.reps) == 100


def test_a_solver_choice_that_breaks_a_figure_is_refused_and_undone():
    # from the rotation, undoing b-0 and c-0 alone (not d-0) puts two replicas on broker 1: the
    # count band's distance grows, so the goal keeps neither and leaves the lists as they were
    snap = rotation()
    m, goal = rotated(snap)
    lists = [list(r) for r in m.reps]
    assert goal.together([(1, 2, 1), (2, 3, 2)]) == 0
    assert m.reps == lists


def lists_of(snap: ClusterSnapshot, threshold: int) -> list[list[int]]:
    """The replica lists of the heuristic's plan, in ``snap``'s partition order."""
    return after_lists(plan_of(snap, "replica", threshold=threshold), snap)


def without_goal(monkeypatch: pytest.MonkeyPatch, snap: ClusterSnapshot, threshold: int) -> list[list[int]]:
    """The heuristic's plan with the fewer-moves goal left out of the goals' order."""
    with monkeypatch.context() as mp:
        mp.setattr(order, "GOALS", tuple(g for g in order.GOALS if g is not FewerMovesGoal))
        return lists_of(snap, threshold)


@pytest.mark.parametrize("seed", range(16))
def test_never_more_bytes_nor_a_worse_target_and_the_same_on_every_run(seed, monkeypatch):
    rng = Random(seed)
    snap = random_cluster(rng)
    threshold = rng.choice((0, 10, 20))
    try:
        before = without_goal(monkeypatch, snap, threshold)
    except (RequestError, PlanError):       # refused (capacity): nothing to undo
        with pytest.raises((RequestError, PlanError)):
            lists_of(snap, threshold)
        return
    after = lists_of(snap, threshold)
    assert after == lists_of(snap, threshold)
    assert bytes_moved(snap, after) <= bytes_moved(snap, before)
    far_before = off_targets(snap, before, threshold)
    far_after = off_targets(snap, after, threshold)
    assert far_before is not None and far_after is not None     # capacities are checked on every plan
    assert all(a <= b for a, b in zip(far_after, far_before, strict=True)), (far_before, far_after)


def test_it_moves_fewer_bytes_on_some_random_clusters(monkeypatch):
    # not a no-op: on these seeds the goals' plan moved bytes that the undos take back
    fewer = 0
    for seed in (2, 3, 6, 14, 17, 21):
        rng = Random(seed)
        snap = random_cluster(rng)
        threshold = rng.choice((0, 10, 20))
        before = without_goal(monkeypatch, snap, threshold)
        after = lists_of(snap, threshold)
        fewer += bytes_moved(snap, after) < bytes_moved(snap, before)
    assert fewer >= 5
