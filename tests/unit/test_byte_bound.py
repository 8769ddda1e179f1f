"""The bytes-moved lower bound of :mod:`kafka_replica_assignor.planner.solving.bound`: never above an optimum, never below
the planner's other bounds, strictly tighter where diversity moves must be paid back."""

from __future__ import annotations

import json
import os
from random import Random

import pytest

from bench.exact_optimum import generate
from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.goals.order import REPLICA_PHASES, goals_for
from kafka_replica_assignor.planner.goals.replica_bytes import BOUND_KEY, bounds_that_hold
from kafka_replica_assignor.planner.plan import Plan, Working
from kafka_replica_assignor.planner.racks import RackTree
from kafka_replica_assignor.planner.report.plan_report import render_report
from kafka_replica_assignor.planner.request import PlanError, RequestError, Scope
from kafka_replica_assignor.planner.solving.bound import MARGIN, ByteBound, Program, byte_lower_bound
from kafka_replica_assignor.planner.solving.planning import make_plan
from tests.planning import plan_of, request_of
from tests.unit.test_planner_exact import after_lists, brute_force, moved, off_targets

DATA = os.path.join(os.path.dirname(__file__), "data", "exact_optima.json")
OLD = ("bytes_moved_lower_bound", "diversity_bytes_needed")
TARGETS = ("diversity", "topics", "counts", "bytes")
"""The goals' keys of the targets, in the goals' order (the bound keeps them in that order)."""


def bound(snap: ClusterSnapshot, threshold: int, scope: Scope | None = None) -> ByteBound | None:
    work = Working(snap, scope)
    request = request_of("replica", threshold=threshold, scope=scope)
    return byte_lower_bound(work, goals_for(work, request, ("lists", *REPLICA_PHASES)))


def old_bounds(plan: Plan, kept: tuple[str, ...] = TARGETS) -> int:
    """The per-broker and per-partition bytes bounds the heuristic recorded on ``plan``; the
    per-broker one (the byte band's) only when the program kept the byte band (``kept``): it
    is a bound of the plans within the band, and there may be none."""
    return max(plan.bound(k) or 0 for k in OLD if k != OLD[0] or "bytes" in kept)


def old_bound(snap: ClusterSnapshot, threshold: int) -> int:
    return old_bounds(plan_of(snap, "replica", threshold=threshold))


def test_never_above_the_stored_optima():
    with open(DATA) as f:
        stored = [c for c in json.load(f) if c["metric"] == "bytes_moved"]
    assert stored
    for case in stored:
        snap = ClusterSnapshot.from_dict(case["snapshot"])
        found = bound(snap, case["threshold"])
        assert found is not None and found.kept == TARGETS
        assert found.bytes <= case["optimum"], case["seed"]
        assert found.bytes >= old_bound(snap, case["threshold"]) * (1 - 2 * MARGIN), case["seed"]


@pytest.mark.parametrize("seed", range(0, 60, 3))
def test_never_above_a_plan_meeting_every_target_nor_below_the_old_bounds(seed):
    snap, threshold = generate(seed)
    found = bound(snap, threshold)
    if found is None:
        assert not any(p.size_bytes for p in snap.partitions)
        return
    try:
        plan = plan_of(snap, "replica", threshold=threshold)
    except (RequestError, PlanError):
        return      # refused (capacity): nothing to compare with
    assert found.bytes >= old_bounds(plan, found.kept) * (1 - 2 * MARGIN)
    lists = after_lists(plan, snap)
    off = off_targets(snap, lists, threshold)
    assert off is not None
    if all(not far for key, far in zip(TARGETS, off, strict=True) if key in found.kept):
        assert found.bytes <= moved(snap, lists)[0]


def tiny(seed: int) -> tuple[ClusterSnapshot, int]:
    """4-5 brokers in two racks, 4-5 sized partitions of RF 1-2, one dead broker sometimes."""
    rng = Random(seed)
    n = rng.randint(4, 5)
    dead = rng.choice((None, None, n))
    brokers = tuple(BrokerEntry(b, f"r{b % 2}", b != dead, None, None, None) for b in range(1, n + 1))
    parts = tuple(PartitionEntry("t", p, tuple(rng.sample(range(1, n + 1), rng.choice((1, 2, 2)))), None, None,
                                 rng.randint(1, 100)) for p in range(rng.randint(4, 5)))
    return ClusterSnapshot(brokers, parts), rng.choice((10, 20, 50))


SCOPES = [None, Scope(exclude_brokers=(1,)), Scope(add_brokers=(2, 3)), Scope(topics="u")]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("scope", SCOPES, ids=["all", "exclude", "add", "topics"])
def test_never_above_the_enumerated_optimum(seed, scope):
    snap, threshold = tiny(seed)
    found = bound(snap, threshold, scope)
    try:
        optimum, _ = brute_force(snap, threshold, scope)
    except AssertionError:      # no plan meets every target: nothing to bound
        return
    assert found is not None and found.kept == TARGETS     # none found out of reach wrongly
    assert found.bytes <= optimum


def tiny_tree(seed: int) -> tuple[ClusterSnapshot, int, Scope | None]:
    """4-5 brokers in one or two rack levels, capacities sometimes, RF 1-3, any threshold."""
    rng = Random(seed)
    n = rng.randint(4, 5)
    dead = rng.choice((None, None, n, 1))
    two = rng.random() < 0.5
    cap = rng.choice((None, None, 250))
    brokers = tuple(BrokerEntry(b, f"/d{b % 2}/r{b % 3}" if two else f"r{b % 2}", b != dead, None, None, cap)
                    for b in range(1, n + 1))
    parts = tuple(PartitionEntry(rng.choice("tu"), p, tuple(rng.sample(range(1, n + 1), rng.choice((1, 2, 2, 3)))),
                                 None, None, rng.randint(1, 100)) for p in range(rng.randint(3, 5)))
    return ClusterSnapshot(brokers, parts), rng.choice((0, 10, 20, 50)), rng.choice(SCOPES)


@pytest.mark.parametrize("seed", [12, 19, 25, 26, 27, 30, 32, 35, 37, 41, 43, 50])
def test_never_above_the_enumerated_optimum_with_levels_and_capacities(seed):
    snap, threshold, scope = tiny_tree(seed)
    found = bound(snap, threshold, scope)
    optimum, _ = brute_force(snap, threshold, scope)
    assert found is not None and found.kept == TARGETS
    assert found.bytes <= optimum


def test_diversity_moves_paid_back_make_it_strictly_tighter():
    # racks a = {1, 2}, b = {3, 4}; x-0 lacks rack b, each broker holds 100 bytes (band [90, 110]):
    # one replica of x-0 leaves rack a, and 100 bytes must come back to the broker it left
    brokers = tuple(BrokerEntry(b, "a" if b < 3 else "b", True, None, None, None) for b in (1, 2, 3, 4))
    parts = (PartitionEntry("x", 0, (1, 2), None, None, 100), PartitionEntry("y", 0, (3,), None, None, 100),
             PartitionEntry("y", 1, (4,), None, None, 100))
    snap = ClusterSnapshot(brokers, parts)
    assert old_bound(snap, 10) == 100
    found = bound(snap, 10)
    assert found is not None and found.bytes > 100 and found.kept == TARGETS
    assert found.bytes <= brute_force(snap, 10)[0] == 200
    request = request_of("replica", threshold=10)
    plan = make_plan(snap, request)
    assert plan.bound(f"{BOUND_KEY}:diversity,topics,counts,bytes") == found.bytes
    report = render_report(plan, request)
    assert f">= {found.bytes} (LP, threshold 10%, no budget)" in report
    assert "a linear program over brokers (HiGHS)" in report


def test_nothing_sized_gives_no_bound():
    brokers = tuple(BrokerEntry(b, None, True, None, None, None) for b in (1, 2))
    snap = ClusterSnapshot(brokers, (PartitionEntry("t", 0, (1,), None, None, None),))
    assert bound(snap, 10) is None
    assert RackTree.of({1: None, 2: None}).depth == 0


def test_a_partitions_only_replica_in_a_rack_that_leaves_must_be_replaced_there():
    # racks a = {1, 2}, b = {3, 4}; broker 1 holds 350 bytes (band [225, 275]), every replica on
    # it its partition's only one in rack a: whatever leaves broker 1 comes back into rack a.
    # Without that row the program let broker 1's bytes go to rack b while rack b's went to
    # broker 2, and gave 324; the enumerated optimum is 350.
    brokers = tuple(BrokerEntry(b, "a" if b < 3 else "b", True, None, None, None) for b in (1, 2, 3, 4))
    parts = (PartitionEntry("t", 0, (1, 3), None, None, 150), PartitionEntry("t", 1, (1, 3), None, None, 100),
             PartitionEntry("u", 2, (3, 1), None, None, 100), PartitionEntry("t", 3, (3, 4), None, None, 150))
    snap = ClusterSnapshot(brokers, parts)
    found = bound(snap, 10)
    assert found is not None and found.bytes >= 349
    assert found.bytes <= brute_force(snap, 10)[0] == 350


def test_a_brokers_topic_cap_limits_the_repairs_it_takes(monkeypatch):
    # racks a = {1, 2}, b = {3, 4, 5}; t-0..t-2 [1, 2] all lack rack b and broker 4 is empty, so
    # without row 7 the program lands all three repairs on 4, the bytes its band asks for anyway.
    # Topic t's cap on a broker of b is 2 (an even share of 1, plus one): one repair must land on
    # 3 or 5, which then give bytes back. Row 7 sees it: 351 -> 371; the enumerated optimum is 450
    brokers = tuple(BrokerEntry(b, "a" if b < 3 else "b", True, None, None, None) for b in (1, 2, 3, 4, 5))
    parts = tuple(PartitionEntry("t", p, (1, 2), None, None, 100) for p in range(3)) + (
        PartitionEntry("u", 0, (3,), None, None, 200), PartitionEntry("u", 1, (5,), None, None, 150),
        PartitionEntry("u", 2, (5,), None, None, 150))
    snap = ClusterSnapshot(brokers, parts)
    found = bound(snap, 20)
    assert found is not None and found.kept == TARGETS
    assert found.bytes <= brute_force(snap, 20)[0] == 450
    monkeypatch.setattr(Program, "arrivals_within", lambda self, caps: None)
    without = bound(snap, 20)
    assert without is not None and without.kept == TARGETS
    assert without.bytes < found.bytes


def test_a_topics_drops_beyond_the_caps_of_the_brokers_below_the_band_land_elsewhere(monkeypatch):
    # t-0..t-4 all on broker 1 (cap 2 of t per broker): it drops at least its 3 smallest (5,
    # 20, 26). Broker 5 is empty, the only one below the band, and may hold only 2 of t: at
    # least the 5 bytes land on a broker that needs no bytes. Row 8 sees it: 59 -> 64; the
    # enumerated optimum is 68 (topic u out of scope keeps the enumeration short)
    brokers = tuple(BrokerEntry(b, None, True, None, None, None) for b in (1, 2, 3, 4, 5))
    parts = tuple(PartitionEntry("t", p, (1,), None, None, s) for p, s in enumerate((47, 5, 37, 20, 26))) + (
        PartitionEntry("u", 0, (2,), None, None, 86), PartitionEntry("u", 1, (4,), None, None, 70),
        PartitionEntry("u", 2, (3,), None, None, 84))
    snap, scope = ClusterSnapshot(brokers, parts), Scope(topics="t")
    found = bound(snap, 20, scope)
    assert found is not None and found.kept == TARGETS
    assert found.bytes <= brute_force(snap, 20, scope)[0] == 68
    monkeypatch.setattr("kafka_replica_assignor.planner.solving.bound._Topics.landing", lambda self, caps, inside: 0.0)
    without = bound(snap, 20, scope)
    assert without is not None and without.kept == TARGETS
    assert without.bytes < found.bytes


def test_a_band_the_rack_tree_cannot_hold_is_out_of_reach_and_bounds_nothing():
    # rack a has broker 1 alone, rack b brokers 2..4: full diversity puts one replica of every
    # partition of RF 2 on broker 1, far above both bands (rows 9 and 10). The program keeps
    # rack diversity and the topic caps only, and the byte band's own figure is not a bound
    # of this plan (none is within the band)
    brokers = (BrokerEntry(1, "a", True, None, None, None),) + tuple(
        BrokerEntry(b, "b", True, None, None, None) for b in (2, 3, 4))
    parts = tuple(PartitionEntry(f"t{p}", 0, (2 + p % 3, 2 + (p + 1) % 3), None, None, 10 + p) for p in range(6))
    snap = ClusterSnapshot(brokers, parts)
    found = bound(snap, 10)
    assert found is not None and found.kept == ("diversity", "topics")
    total = sum(p.size_bytes or 0 for p in parts)      # one replica of each moves to broker 1
    assert total * (1 - 2 * MARGIN) - 1 <= found.bytes <= total
    plan = plan_of(snap, "replica", threshold=10)
    assert plan.bound("bytes_moved_lower_bound") is not None
    held = bounds_that_hold(dict(plan.bounds))
    assert "bytes_moved_lower_bound" not in held and max(held.values()) <= moved(snap, after_lists(plan, snap))[0]


def test_a_partition_whose_lost_replica_an_added_broker_can_take_counts_in_the_bands():
    # broker 1 is dead; only 2 and 3 may take (added). t-0 [1, 4, 2] has one lost replica and
    # broker 3 free for it: it is repaired, so its bytes count in the bands (they counted out,
    # which put broker 4 above a band too low and the bound above the enumerated optimum)
    brokers = (BrokerEntry(1, "b", False, None, None, None), BrokerEntry(2, "a", True, None, None, 250),
               BrokerEntry(3, "c", True, None, None, None), BrokerEntry(4, "b", True, None, None, None))
    parts = (PartitionEntry("t", 0, (1, 4, 2), None, None, 16), PartitionEntry("t", 1, (3, 4), None, None, 85),
             PartitionEntry("t", 2, (2, 4, 3), None, None, 36), PartitionEntry("t", 3, (2, 3), None, None, 60),
             PartitionEntry("t", 4, (4, 2), None, None, 98))
    snap, scope = ClusterSnapshot(brokers, parts), Scope(add_brokers=(2, 3))
    found = bound(snap, 10, scope)
    assert found is not None and found.kept == TARGETS
    assert found.bytes <= brute_force(snap, 10, scope)[0] == 16
