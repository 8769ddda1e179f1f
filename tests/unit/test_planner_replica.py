"""Replica balance and cluster balance on hand-made clusters: the bound reached, racks kept,
followers first, uneven racks explained, threshold, forgotten brokers."""

from __future__ import annotations

from collections import Counter

from assignors.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from planner.cluster_balance import cluster_balance
from planner.racks import RackTree
from planner.replica_balance import replica_balance
from tests.property.plan_invariants import check_plan


def round_robin(brokers: list[BrokerEntry], partitions: int, rf: int, used: int) -> ClusterSnapshot:
    """Rack-alternating round robin over the first ``used`` brokers (the others are new)."""
    by_rack: dict[str | None, list[int]] = {}
    for b in brokers[:used]:
        by_rack.setdefault(b.rack, []).append(b.id)
    order = []
    for i in range(max(len(v) for v in by_rack.values())):
        order += [ids[i] for _, ids in sorted(by_rack.items(), key=lambda kv: str(kv[0])) if i < len(ids)]
    parts = []
    for p in range(partitions):
        first = p % len(order)
        shift = 1 + (p // len(order)) % (len(order) - 1)
        reps = [order[(first + k * shift) % len(order)] for k in range(rf)]
        if len(set(reps)) < rf:
            reps = [order[(first + k) % len(order)] for k in range(rf)]
        parts.append(PartitionEntry(f"t{p % 7}", p, tuple(reps)))
    return ClusterSnapshot(tuple(brokers), tuple(parts))


def counts(snap: ClusterSnapshot) -> Counter:
    return Counter(b for p in snap.partitions for b in p.replicas)


def test_docstring_example_three_follower_moves():
    brokers = tuple(BrokerEntry(i) for i in range(1, 5))
    parts = [(1, 2), (2, 3), (3, 1), (1, 2), (2, 3), (3, 1)]
    snap = ClusterSnapshot(brokers, tuple(PartitionEntry("t", i, r) for i, r in enumerate(parts)))
    plan = replica_balance(snap, threshold=0)
    check_plan(plan, replica_band=(3, 3))
    assert plan.replica_moves == 3
    assert plan.leader_changes == 0            # followers moved, leaders kept
    assert all(m.destination == 4 for m in plan.moves)


def test_new_brokers_in_every_rack_reach_the_lower_bound_inside_racks():
    brokers = [BrokerEntry(i, f"r{i % 3}") for i in range(24)]
    snap = round_robin(brokers, 600, 3, used=21)        # brokers 21, 22, 23 are new, one per rack
    plan = replica_balance(snap, threshold=0)
    check_plan(plan, replica_band=(75, 75))
    assert plan.replica_moves == plan.bound("replica_moves_lower_bound") == 225
    rack = {b.id: b.rack for b in brokers}
    assert all(rack[m.source] == rack[m.destination] for m in plan.moves)
    assert plan.leader_changes == 0


def test_uneven_racks_keep_diversity_and_say_why_the_band_is_missed():
    # racks a: 4 brokers, b: 4, c: 2; every partition has one replica per rack
    brokers = [BrokerEntry(i, "abc"[0 if i < 4 else 1 if i < 8 else 2]) for i in range(10)]
    parts = [PartitionEntry("t", p, (p % 4, 4 + (p * 3) % 4, 8)) for p in range(40)]
    snap = ClusterSnapshot(tuple(brokers), tuple(parts))
    plan = replica_balance(snap, threshold=0)
    check_plan(plan)
    after = counts(plan.after)
    assert after[8] == after[9] == 20          # rack c holds one replica of all 40 partitions
    assert {after[b] for b in range(8)} == {10}
    assert any("rack c" in n and "diversity" in n for n in plan.notes)
    assert plan.bound("replica_moves_bound_given_racks") == plan.replica_moves == 20


def test_rack_tree_diversity_is_kept_at_every_level():
    racks = ["/dc1/r1", "/dc1/r2", "/dc2/r1", "/dc2/r2"]
    brokers = [BrokerEntry(i, racks[i % 4]) for i in range(12)]
    snap = round_robin(brokers, 200, 2, used=8)
    tree = RackTree.of({b.id: b.rack for b in brokers})
    plan = cluster_balance(snap, threshold=0)
    check_plan(plan, replica_band=(33, 34), leader_band=(16, 17))
    for before, after in zip(snap.partitions, plan.after.partitions):
        assert all(x <= y for x, y in zip(tree.diversity(before.replicas), tree.diversity(after.replicas)))


def test_threshold_widens_the_band_and_saves_moves():
    brokers = [BrokerEntry(i) for i in range(10)]
    snap = round_robin(brokers, 300, 3, used=9)          # broker 9 is new: avg 90
    tight = replica_balance(snap, threshold=0)
    loose = replica_balance(snap, threshold=10)
    check_plan(tight, replica_band=(90, 90))
    check_plan(loose, replica_band=(81, 100))
    assert loose.replica_moves == 81 < tight.replica_moves == 90
    assert replica_balance(loose.after, threshold=10).moves == ()


def test_forgotten_broker_is_drained():
    brokers = [BrokerEntry(i) for i in range(5)]
    snap = round_robin(brokers, 50, 2, used=5)
    plan = cluster_balance(snap, threshold=0, forgotten={4})
    check_plan(plan, forgotten={4}, replica_band=(25, 25), leader_band=(12, 13))
    assert counts(plan.after)[4] == 0
    assert plan.repairs == 20


def test_cluster_balance_counts_leader_changes_against_the_input():
    brokers = [BrokerEntry(i, f"r{i % 2}") for i in range(8)]
    snap = round_robin(brokers, 160, 2, used=6)
    plan = cluster_balance(snap, threshold=0)
    check_plan(plan, replica_band=(40, 40), leader_band=(20, 20))
    changed = sum(1 for a, b in zip(snap.partitions, plan.after.partitions) if a.replicas[0] != b.replicas[0])
    assert plan.leader_changes == changed
    assert plan.bound("leader_changes_optimum") == changed
    assert cluster_balance(plan.after, threshold=0).moves == ()
