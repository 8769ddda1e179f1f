"""Replica balance and cluster balance on hand-made clusters: the bound reached, racks kept and
repaired, topics spread, bytes balanced, capacity respected, followers first, uneven racks
explained, threshold, removed brokers."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.goals.model import Model
from kafka_replica_assignor.planner.goals.topic_spread import TopicSpreadGoal
from kafka_replica_assignor.planner.plan import Plan
from kafka_replica_assignor.planner.racks import RackTree
from kafka_replica_assignor.planner.request import RequestError
from tests.planning import plan_of
from tests.property.plan_invariants import check_plan


def replica_balance(snap: ClusterSnapshot, **options: object) -> Plan:
    """The heuristic's plan of replica mode (the exact path has its own tests)."""
    return plan_of(snap, "replica", **options)


def cluster_balance(snap: ClusterSnapshot, **options: object) -> Plan:
    """The heuristic's plan of cluster mode."""
    return plan_of(snap, "cluster", **options)


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


def test_new_brokers_in_every_rack_get_the_band_and_diversity_repaired():
    brokers = [BrokerEntry(i, f"r{i % 3}") for i in range(24)]
    snap = round_robin(brokers, 600, 3, used=21)        # brokers 21, 22, 23 are new, one per rack
    plan = replica_balance(snap, threshold=0)
    # the layout leaves 360 partitions with two replicas in one rack: all are repaired
    assert plan.bound("diversity_repairs_needed") == 360
    check_plan(plan, replica_band=(75, 75), diversity=True, topic_caps=True)
    assert plan.replica_moves >= max(plan.bound("replica_moves_lower_bound"), 360)


def test_new_brokers_in_every_rack_stay_inside_racks_when_diverse():
    brokers = [BrokerEntry(i, f"r{i % 3}") for i in range(24)]
    # one replica per rack, rotating inside each rack over its first 7 brokers; every old
    # broker holds 12 replicas of each of the 7 topics
    parts = [PartitionEntry(f"t{p // 7 % 7}", p, tuple(3 * ((p + k) % 7) + k for k in range(3)))
             for p in range(588)]
    snap = ClusterSnapshot(tuple(brokers), tuple(parts))   # 21, 22, 23 (one per rack) are new
    plan = replica_balance(snap, threshold=0)
    check_plan(plan, replica_band=(73, 74), diversity=True, topic_caps=True)
    rack = {b.id: b.rack for b in brokers}
    assert all(rack[m.source] == rack[m.destination] for m in plan.moves)
    assert plan.replica_moves == plan.bound("replica_moves_tight_bound") == 219
    # rack r0 holds only leaders: its new broker's 73 replicas are leader moves, the others none
    assert plan.leader_changes == 73


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
    assert plan.replica_moves == 20            # broker 8 hands half of rack c's share to 9


def test_rack_tree_diversity_is_kept_at_every_level():
    racks = ["/dc1/r1", "/dc1/r2", "/dc2/r1", "/dc2/r2"]
    brokers = [BrokerEntry(i, racks[i % 4]) for i in range(12)]
    snap = round_robin(brokers, 200, 2, used=8)
    tree = RackTree.of({b.id: b.rack for b in brokers})
    plan = cluster_balance(snap, threshold=0)
    check_plan(plan, replica_band=(33, 34), leader_band=(16, 17))
    for before, after in zip(plan.before.partitions, plan.after.partitions, strict=True):
        assert all(x <= y for x, y in zip(tree.diversity(before.replicas), tree.diversity(after.replicas), strict=True))


def test_threshold_widens_the_band():
    brokers = [BrokerEntry(i) for i in range(10)]
    snap = round_robin(brokers, 300, 3, used=9)          # broker 9 is new: avg 90
    tight = replica_balance(snap, threshold=0)
    loose = replica_balance(snap, threshold=10)
    check_plan(tight, replica_band=(90, 90), topic_caps=True)
    check_plan(loose, replica_band=(81, 99), topic_caps=True)
    # the bound is 81 (90 at threshold 0); each topic of 43 partitions holds up to 18 replicas
    # on an old broker, above its cap of 14: evening the topics costs the moves beyond it
    assert 81 <= loose.replica_moves <= tight.replica_moves
    assert replica_balance(loose.after, threshold=10).moves == ()


def topic_counts(snap: ClusterSnapshot) -> Counter:
    return Counter((p.topic, b) for p in snap.partitions for b in p.replicas)


def test_new_brokers_get_every_topic_not_whole_topics():
    # finding 1: topics a and b, 12 partitions of RF 2 each on brokers 0-3; 4 and 5 are new.
    # Giving in (topic, partition) order hands the new brokers all of topic a.
    brokers = tuple(BrokerEntry(i) for i in range(6))
    parts = [PartitionEntry(t, p, (p % 4, (p + 1 + p // 4) % 4)) for t in "ab" for p in range(12)]
    snap = ClusterSnapshot(brokers, tuple(parts))
    plan = replica_balance(snap, threshold=0)
    check_plan(plan, replica_band=(8, 8), topic_caps=True)
    assert plan.replica_moves == plan.bound("replica_moves_lower_bound") == 16
    after = topic_counts(plan.after)
    assert max(after.values()) <= 24 // 6 + 1            # ceil(24 / 6) + 1 of a topic per broker
    assert after[("a", 4)] == after[("b", 4)] == after[("a", 5)] == after[("b", 5)] == 4


def test_disk_skew_is_evened_by_swaps():
    # finding 2: counts are even (10 each) but bytes are 300, 100 and 200
    brokers = tuple(BrokerEntry(i) for i in (1, 2, 3))
    sizes = {1: 30, 2: 10, 3: 20}
    parts = [PartitionEntry("t", 10 * b + p, (b,), size_bytes=sizes[b]) for b in (1, 2, 3) for p in range(10)]
    snap = ClusterSnapshot(brokers, tuple(parts))
    plan = replica_balance(snap, threshold=10)
    # the strict band mean * (1 -+ 10%) = [180, 220] (the largest partition, 30, is inside it);
    # counts [9, 11]
    assert (plan.bound("bytes_band_lo"), plan.bound("bytes_band_hi")) == (180, 220)
    check_plan(plan, replica_band=(9, 11), byte_band=(180, 220))
    assert all({m.source, m.destination} == {1, 2} for m in plan.moves)   # broker 3 is in band
    assert replica_balance(plan.after, threshold=10).moves == ()


def test_partitions_with_two_replicas_in_one_rack_are_repaired():
    # finding 3: racks a (0, 1), b (2, 3), c (4, 5); partitions 0-5 keep both replicas in rack
    # a or b; moving each one's follower to rack c balances every broker at 4
    brokers = tuple(BrokerEntry(i, "abc"[i // 2]) for i in range(6))
    reps = [(0, 1), (1, 0), (2, 3), (3, 2), (0, 1), (3, 2),
            (4, 1), (5, 2), (0, 2), (1, 3), (1, 2), (0, 3)]
    snap = ClusterSnapshot(brokers, tuple(PartitionEntry("t", p, r) for p, r in enumerate(reps)))
    plan = replica_balance(snap, threshold=0)
    assert plan.bound("diversity_repairs_needed") == 6
    check_plan(plan, replica_band=(4, 4), diversity=True)
    assert plan.replica_moves == 6                        # one follower per doubled partition
    assert plan.leader_changes == 0


def test_capacity_is_never_exceeded():
    brokers = (BrokerEntry(1), BrokerEntry(2), BrokerEntry(3, capacity_bytes=50))
    parts = [PartitionEntry("t", p, (1 + p % 2,), size_bytes=10 * (1 + p % 3)) for p in range(12)]
    snap = ClusterSnapshot(brokers, tuple(parts))
    plan = replica_balance(snap, threshold=0)
    check_plan(plan, replica_band=(4, 4))


def test_capacity_smaller_than_what_must_stay_is_an_error():
    brokers = (BrokerEntry(1, capacity_bytes=10), BrokerEntry(2, capacity_bytes=10))
    snap = ClusterSnapshot(brokers, (PartitionEntry("t", 0, (1, 2), size_bytes=30),))
    with pytest.raises(RequestError, match="capacity infeasible"):
        replica_balance(snap)


def test_capacity_excess_leaves_by_a_swap_onto_a_bigger_disk():
    # broker 1 holds a partition larger than its disk; only broker 4 (150) can hold it, and
    # only by giving back what it holds (room 60): the swap evens no pair and leaves the byte
    # band, which is soft, to keep the capacity, which is hard (once "capacity infeasible")
    brokers = (BrokerEntry(1, capacity_bytes=100), BrokerEntry(2, capacity_bytes=100),
               BrokerEntry(3, capacity_bytes=100), BrokerEntry(4, capacity_bytes=150))
    sizes = {("big", 0): (1, 110), ("t", 0): (4, 60), ("t", 1): (4, 30),
             ("t", 2): (2, 40), ("t", 3): (2, 30), ("t", 4): (3, 40), ("t", 5): (3, 30)}
    snap = ClusterSnapshot(brokers, tuple(PartitionEntry(t, p, (b,), size_bytes=w)
                                          for (t, p), (b, w) in sizes.items()))
    plan = replica_balance(snap, threshold=10)
    check_plan(plan)
    after = {(p.topic, p.partition): p.replicas for p in plan.after.partitions}
    assert after[("big", 0)] == (4,)
    held = Counter()
    for p in plan.after.partitions:
        held[p.replicas[0]] += p.size_bytes
    assert all(held[b.id] <= b.capacity_bytes for b in brokers), held


def test_capacity_excess_leaves_by_a_two_move_chain():
    # a (60 bytes) and b (60) must leave brokers 3 and 1 (1 byte each); 2 (61) and 4 (121)
    # have the room, but 4 holds a already. b goes first to 2, the roomiest, and then a has
    # nowhere to go: b moves on to 4, then a to 2 (once "capacity infeasible")
    brokers = (BrokerEntry(1, capacity_bytes=1), BrokerEntry(2, capacity_bytes=61),
               BrokerEntry(3, capacity_bytes=1), BrokerEntry(4, capacity_bytes=121))
    parts = (PartitionEntry("a", 0, (3, 4), size_bytes=60), PartitionEntry("b", 0, (1,), size_bytes=60))
    plan = replica_balance(ClusterSnapshot(brokers, parts), threshold=10)
    check_plan(plan)
    assert [p.replicas for p in plan.after.partitions] == [(2, 4), (4,)]


def test_a_rack_heavier_than_the_mean_is_evened_inside_it_in_few_moves():
    # rack a has two brokers, b and c three, every partition one replica per rack: each rack
    # holds every byte once, so a's brokers stay above the band whatever moves. Broker 0 holds
    # three fifths of a; its partner 1 fills to the band's top and then evens the pair with 0,
    # in whole transfers (once: hundreds of byte-sized swaps towards the cluster mean, 8x the
    # bytes of the bound)
    rnd = random.Random(3)
    brokers = tuple(BrokerEntry(i, r) for i, r in enumerate("aabbbccc"))
    parts = [PartitionEntry(f"t{p % 7}", p, (0 if p % 5 < 3 else 1, 2 + p % 3, 5 + p % 3),
                            size_bytes=rnd.randrange(1, 10**6)) for p in range(300)]
    snap = ClusterSnapshot(brokers, tuple(parts))
    plan = replica_balance(snap, threshold=10)
    check_plan(plan, diversity=True)
    size = {(p.topic, p.partition): p.size_bytes for p in parts}
    moved = sum(size[(m.topic, m.partition)] for m in plan.moves)
    assert moved <= plan.bound("bytes_moved_lower_bound") * 5 // 4
    held = Counter()
    for p in plan.after.partitions:
        for b in p.replicas:
            held[b] += p.size_bytes
    assert abs(held[0] - held[1]) <= max(size.values())
    assert any("rack a: broker(s) 0, 1" in note and "bytes" in note for note in plan.notes)


def test_removed_broker_is_drained():
    brokers = [BrokerEntry(i) for i in range(5)]
    snap = round_robin(brokers, 50, 2, used=5)
    plan = cluster_balance(snap, threshold=0, remove=(4,))
    check_plan(plan, removed={4}, replica_band=(25, 25), leader_band=(12, 13))
    assert counts(plan.after)[4] == 0
    assert plan.repairs == 20


def test_cluster_balance_counts_leader_changes_against_the_input():
    brokers = [BrokerEntry(i, f"r{i % 2}") for i in range(8)]
    snap = round_robin(brokers, 160, 2, used=6)
    plan = cluster_balance(snap, threshold=0)
    check_plan(plan, replica_band=(40, 40), leader_band=(20, 20))
    leader = {(p.topic, p.partition): p.replicas[0] for p in snap.partitions}   # the input, in its own order
    changed = sum(1 for p in plan.after.partitions if leader[(p.topic, p.partition)] != p.replicas[0])
    assert plan.leader_changes == changed
    assert plan.bound("leader_changes_optimum") == changed
    assert cluster_balance(plan.after, threshold=0).moves == ()


def test_module_docstring_example():
    brokers = tuple(BrokerEntry(i, "a" if i in (1, 2, 5) else "b") for i in range(1, 7))
    lists = {("x", 0): (1, 3), ("x", 1): (3, 1), ("x", 2): (2, 4), ("x", 3): (4, 2),
             ("y", 0): (1, 4), ("y", 1): (2, 1)}
    snap = ClusterSnapshot(brokers, tuple(PartitionEntry(t, p, r) for (t, p), r in lists.items()))
    plan = replica_balance(snap, threshold=0)
    check_plan(plan, replica_band=(2, 2), diversity=True, topic_caps=True)
    # the moves of the heuristic's doc (diversity y-1 1 -> 6; counts x-1 1 -> 5, x-3 2 -> 5,
    # x-2 4 -> 6); the plan lists them by (topic, partition), the order of its final lists
    assert [(m.topic, m.partition, m.source, m.destination) for m in plan.moves] == [
        ("x", 1, 1, 5), ("x", 2, 4, 6), ("x", 3, 2, 5), ("y", 1, 1, 6)]
    assert plan.leader_changes == 0


def grown_cluster(brokers: int) -> ClusterSnapshot:
    """``brokers`` brokers in 3 racks, a tenth of them new and empty; topics of 100 partitions
    of RF 3 laid out like Kafka's rack-alternating round robin with a per-topic shift (which
    puts three replicas of a topic on some brokers), sizes from a fixed seed."""
    rnd = random.Random(5)
    ids = [BrokerEntry(i, f"r{i % 3}") for i in range(brokers)]
    old = brokers - brokers // 10
    parts = []
    for t in range(5 * brokers // 3):
        start, shift = rnd.randrange(old), rnd.randrange(old)
        for p in range(100):
            first = (start + p) % old
            reps = [first]
            k = 0
            while len(reps) < 3:
                b = (first + 1 + (shift + k) % (old - 1)) % old
                k += 1
                if b % 3 not in {r % 3 for r in reps}:
                    reps.append(b)
            parts.append(PartitionEntry(f"t{t:04d}", p, tuple(reps), size_bytes=1 + int(rnd.expovariate(1e-6))))
    return ClusterSnapshot(tuple(ids), tuple(parts))


def test_work_grows_linearly_with_the_cluster(monkeypatch):
    # the operations that scale (a placement check, a receiver looked at) per run: four times
    # the brokers and partitions may cost four times the work, with room for log factors, not
    # the sixteen times of a broker scan per move
    calls = Counter()
    for owner, name in ((Model, "fits"), (TopicSpreadGoal, "caps_ok"), (Model, "load_key"),
                        (Model, "allowed_leaves")):
        original = getattr(owner, name)

        def counted(self, *args, _original=original, _name=name, **kwargs):
            calls[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(owner, name, counted)
    work = []
    for brokers in (30, 120):
        calls.clear()
        plan = replica_balance(grown_cluster(brokers), threshold=10)
        check_plan(plan, topic_caps=True, diversity=True)
        work.append((sum(calls.values()), plan.replica_moves))
    (small, small_moves), (large, large_moves) = work
    assert large_moves >= 3 * small_moves
    assert large <= 6 * small, work
