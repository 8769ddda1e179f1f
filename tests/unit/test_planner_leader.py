"""Leader balance: exact optimum checked by brute force on small clusters, both the fast path
(greedy + certificate) and the min-cost flow; notes, baseline and budget."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest

from assignors.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from planner.leader_balance import leader_balance
from tests.property.plan_invariants import check_plan


def snapshot(partitions, brokers=None, dead=()):
    ids = brokers or sorted({b for r in partitions for b in r if b >= 0})
    return ClusterSnapshot(
        tuple(BrokerEntry(b, None, b not in dead) for b in ids),
        tuple(PartitionEntry("t", i, tuple(r)) for i, r in enumerate(partitions)),
    )


def brute_force(snap: ClusterSnapshot) -> tuple[int, int]:
    """(sum of squared leader counts, leader changes), lexicographically smallest, over every
    choice of leader among each reorderable partition's replicas."""
    alive = {b.id for b in snap.brokers if b.alive}
    fixed = Counter()
    choices, firsts = [], []
    for p in snap.partitions:
        if alive.issuperset(p.replicas):
            choices.append(p.replicas)
            firsts.append(p.replicas[0])
        elif p.replicas[0] in alive:
            fixed[p.replicas[0]] += 1
    best = None
    for combo in itertools.product(*choices):
        counts = fixed.copy()
        counts.update(combo)
        key = (sum(c * c for c in counts.values()), sum(a != b for a, b in zip(combo, firsts)))
        best = key if best is None or key < best else best
    return best


def measured(plan) -> tuple[int, int]:
    alive = {b.id for b in plan.before.brokers if b.alive}
    counts = Counter(p.replicas[0] for p in plan.after.partitions if p.replicas[0] in alive)
    return sum(c * c for c in counts.values()), plan.leader_changes


def random_cluster(rng: random.Random) -> ClusterSnapshot:
    n = rng.randint(2, 5)
    parts = []
    for _ in range(rng.randint(1, 8)):
        rf = rng.randint(1, min(3, n))
        reps = rng.sample(range(n), rf)
        if rng.random() < 0.5:
            reps.sort()            # skew: the lowest id leads
        parts.append(reps)
    dead = {n - 1} if rng.random() < 0.2 else set()
    return snapshot(parts, list(range(n)), dead)


@pytest.mark.parametrize("exact", [False, True], ids=["fast-path", "min-cost-flow"])
def test_leader_balance_matches_brute_force(exact):
    rng = random.Random(2024)
    for _ in range(250):
        snap = random_cluster(rng)
        plan = leader_balance(snap, exact=exact)
        check_plan(plan, data_moves=False)
        assert measured(plan) == brute_force(snap), snap


def test_docstring_example_two_changes():
    snap = snapshot([[1, 2], [1, 3], [1, 2], [2, 3], [1, 3], [3, 1]])
    plan = leader_balance(snap)
    assert plan.leader_changes == 2
    assert Counter(p.replicas[0] for p in plan.after.partitions) == {1: 2, 2: 2, 3: 2}
    assert plan.bound("leader_changes_optimum") == 2
    assert {m.kind for m in plan.moves} == {"leader"}
    # reordering keeps the followers' order
    for before, after in zip(snap.partitions, plan.after.partitions):
        assert [b for b in after.replicas if b != after.replicas[0]] == \
            [b for b in before.replicas if b != after.replicas[0]]


def test_unreachable_band_is_explained_and_others_are_even():
    # broker 4 holds no replica: band [3, 3] over 4 brokers is out of reach; 1-3 share 12
    parts = [[1, 2], [1, 3], [2, 3]] * 4
    snap = snapshot(parts, [1, 2, 3, 4])
    plan = leader_balance(snap)
    counts = Counter(p.replicas[0] for p in plan.after.partitions)
    assert counts == {1: 4, 2: 4, 3: 4}
    assert any("not reachable" in n and "4" in n for n in plan.notes)
    assert plan.leader_changes == brute_force(snap)[1]


def test_budget_caps_changes_and_baseline_prices_against_the_input():
    parts = [[1, 2, 3]] * 9
    snap = snapshot(parts)
    plan = leader_balance(snap, max_leader_changes=2)
    check_plan(plan, data_moves=False, max_leader_changes=2)
    assert plan.leader_changes == 2
    # with a baseline whose leaders are 2, the partitions already led by 2 are free
    moved = ClusterSnapshot(snap.brokers, tuple(
        PartitionEntry("t", i, (2, 1, 3)) if i < 3 else p for i, p in enumerate(snap.partitions)))
    plan = leader_balance(moved, baseline=snapshot([[2, 1, 3]] * 9))
    assert Counter(p.replicas[0] for p in plan.after.partitions) == {1: 3, 2: 3, 3: 3}


def test_partitions_on_dead_brokers_keep_their_order():
    snap = snapshot([[1, 9], [1, 2], [1, 2], [1, 2]], [1, 2])
    plan = leader_balance(snap)
    assert plan.after.partitions[0].replicas == (1, 9)
    assert any("repair them first" in n for n in plan.notes)
    check_plan(plan, data_moves=False)
