"""Leader balance (``--mode leader``): exact optimum checked by brute force on small clusters,
with the band prices (the mode's own path, :func:`make_plan`) and with the ``count^2`` prices
alone (the flow's cross-check, :func:`balance_leaders` with ``exact=True``); mixed replication
factors, topics spread, near-linear work; notes, baseline and budget."""

from __future__ import annotations

import itertools
import random
import time
from collections import Counter

import pytest

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.goals.leader_flow import balance_leaders
from kafka_replica_assignor.planner.plan import Plan, Working
from tests.planning import plan_of
from tests.property.plan_invariants import check_plan


def leader_plan(snap: ClusterSnapshot, *, exact: bool = False, max_leader_changes: int | None = None,
                baseline: ClusterSnapshot | None = None) -> Plan:
    """The leader flow alone on ``snap``: ``exact`` cancels cycles with the ``count^2`` prices
    only; ``baseline`` the snapshot whose leaders count as unchanged."""
    work = Working(snap)
    balance_leaders(work, max_leader_changes=max_leader_changes, baseline=baseline, exact=exact)
    return work.plan()


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
        key = (sum(c * c for c in counts.values()), sum(a != b for a, b in zip(combo, firsts, strict=True)))
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


@pytest.mark.parametrize("exact", [False, True], ids=["band-prices", "square-prices"])
def test_leader_balance_matches_brute_force(exact):
    rng = random.Random(2024)
    for _ in range(250):
        snap = random_cluster(rng)
        plan = leader_plan(snap, exact=True) if exact else plan_of(snap, "leader")
        check_plan(plan, data_moves=False)
        assert measured(plan) == brute_force(snap), snap


def test_docstring_example_two_changes():
    snap = snapshot([[1, 2], [1, 3], [1, 2], [2, 3], [1, 3], [3, 1]])
    plan = plan_of(snap, "leader")
    assert plan.leader_changes == 2
    assert Counter(p.replicas[0] for p in plan.after.partitions) == {1: 2, 2: 2, 3: 2}
    assert plan.bound("leader_changes_optimum") == 2
    assert {m.kind for m in plan.moves} == {"leader"}
    # reordering keeps the followers' order
    for before, after in zip(snap.partitions, plan.after.partitions, strict=True):
        assert [b for b in after.replicas if b != after.replicas[0]] == \
            [b for b in before.replicas if b != after.replicas[0]]


def test_unreachable_band_is_explained_and_others_are_even():
    # broker 4 holds no replica: band [3, 3] over 4 brokers is out of reach; 1-3 share 12
    parts = [[1, 2], [1, 3], [2, 3]] * 4
    snap = snapshot(parts, [1, 2, 3, 4])
    plan = plan_of(snap, "leader")
    counts = Counter(p.replicas[0] for p in plan.after.partitions)
    assert counts == {1: 4, 2: 4, 3: 4}
    assert any("not reachable" in n and "4" in n for n in plan.notes)
    assert plan.leader_changes == brute_force(snap)[1]


def test_budget_caps_changes_and_baseline_prices_against_the_input():
    parts = [[1, 2, 3]] * 9
    snap = snapshot(parts)
    plan = plan_of(snap, "leader", max_leader_changes=2)
    check_plan(plan, data_moves=False, max_leader_changes=2)
    assert plan.leader_changes == 2
    # with a baseline whose leaders are 2, the partitions already led by 2 are free
    moved = ClusterSnapshot(snap.brokers, tuple(
        PartitionEntry("t", i, (2, 1, 3)) if i < 3 else p for i, p in enumerate(snap.partitions)))
    plan = leader_plan(moved, baseline=snapshot([[2, 1, 3]] * 9))
    assert Counter(p.replicas[0] for p in plan.after.partitions) == {1: 3, 2: 3, 3: 3}


def test_partitions_on_dead_brokers_keep_their_order():
    snap = snapshot([[1, 9], [1, 2], [1, 2], [1, 2]], [1, 2])
    plan = plan_of(snap, "leader")
    assert plan.after.partitions[0].replicas == (1, 9)
    assert any("repair them first" in n for n in plan.notes)
    check_plan(plan, data_moves=False)


def test_mixed_replication_factors_need_a_chain_of_changes():
    # band [1, 2]: 1 leads 5 and must give 3; 3 holds a replica of d only, which 2 leads, so 3
    # gets a leadership through a chain (d to 3, and 2 takes one of 1's): 4 changes, while the
    # counts alone (1 gives 3, 3 and 4 take 1 each) bound it by 3
    parts = [[1, 2], [1, 2], [1, 2], [2, 3], [1, 4, 2], [1, 4, 2]]
    snap = snapshot(parts)
    plan = plan_of(snap, "leader")
    check_plan(plan, data_moves=False)
    counts = Counter(p.replicas[0] for p in plan.after.partitions)
    assert counts[1] == 2 and counts[3] == 1 and sorted(counts.values()) == [1, 1, 2, 2]
    assert plan.leader_changes == 4 == brute_force(snap)[1]
    assert plan.bound("leader_changes_optimum") == 4
    assert plan.bound("leader_changes_lower_bound") == 3


def test_equal_cost_changes_spread_each_topic():
    # broker 1 leads 4 partitions of each of two topics, broker 2 none: 4 changes, 2 per topic
    snap = ClusterSnapshot(
        (BrokerEntry(1), BrokerEntry(2)),
        tuple(PartitionEntry(t, i, (1, 2)) for t in ("x", "y") for i in range(4)),
    )
    plan = plan_of(snap, "leader")
    assert plan.leader_changes == 4
    led_by_2 = Counter(p.topic for p in plan.after.partitions if p.replicas[0] == 2)
    assert led_by_2 == {"x": 2, "y": 2}


def _mixed_cluster(partitions: int, brokers: int, seed: int) -> ClusterSnapshot:
    """Mixed RF 2-3, exponential topic sizes, leaders skewed to the low broker ids."""
    rng = random.Random(seed)
    parts: list[PartitionEntry] = []
    topic = 0
    while len(parts) < partitions:
        rf = rng.choice((2, 3, 3))
        for i in range(min(200, 1 + int(rng.expovariate(1 / 30)))):
            reps = rng.sample(range(brokers), rf)
            if rng.random() < 0.6:
                reps.sort()
            parts.append(PartitionEntry(f"t{topic}", i, tuple(reps)))
        topic += 1
    return ClusterSnapshot(tuple(BrokerEntry(b) for b in range(brokers)), tuple(parts))


def test_leader_balance_work_grows_near_linearly():
    small, large = _mixed_cluster(2_000, 40, 1), _mixed_cluster(8_000, 40, 1)

    def seconds(snap: ClusterSnapshot) -> float:
        best = float("inf")
        for _ in range(2):
            start = time.process_time()
            plan = plan_of(snap, "leader")
            best = min(best, time.process_time() - start)
        assert plan.bound("leaders_floor") is not None
        return best

    # 4x the partitions: linear work is 4x; a generous margin for noise, far below 16x
    assert seconds(large) < 9 * seconds(small) + 0.05


def test_a_group_that_keeps_its_leaders_is_evened_inside():
    # 1 and 2 share six partitions with no one else: the band [1, 2] is out of reach for them,
    # so they split the six evenly (3 changes) and 5 takes one of 3's (1 change)
    parts = [[1, 2]] * 6 + [[3, 4], [4, 5], [3, 5]]
    snap = snapshot(parts)
    plan = plan_of(snap, "leader")
    check_plan(plan, data_moves=False)
    assert Counter(p.replicas[0] for p in plan.after.partitions) == {1: 3, 2: 3, 3: 1, 4: 1, 5: 1}
    assert measured(plan) == brute_force(snap) == (21, 4)
    assert any("not reachable" in n for n in plan.notes)
