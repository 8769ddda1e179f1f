"""The exact path of replica balance (kafka_replica_assignor.planner.solving.exact) and the report's figures, on small
hand-made clusters whose optimum is found here by enumerating every plan."""

from __future__ import annotations

import json
import os
import statistics
from fractions import Fraction
from itertools import combinations, product

import pytest

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.bands import byte_band
from kafka_replica_assignor.planner.plan import Scope, Working
from kafka_replica_assignor.planner.racks import RackTree
from kafka_replica_assignor.planner.report.figures import plan_figures
from kafka_replica_assignor.planner.report.plan_report import render_report
from kafka_replica_assignor.planner.settings import PlanSettings
from kafka_replica_assignor.planner.solving.exact import distances, targets_of
from kafka_replica_assignor.planner.solving.modes import make_plan
from kafka_replica_assignor.planner.solving.replica_balance import balance_replicas, replica_balance

DATA = os.path.join(os.path.dirname(__file__), "data", "exact_optima.json")


def moved(snap: ClusterSnapshot, lists: list[list[int]] | tuple[tuple[int, ...], ...]) -> tuple[int, int]:
    """(bytes moved, replica moves) from ``snap`` to ``lists``."""
    data = moves = 0
    for p, reps in zip(snap.partitions, lists, strict=True):
        came = len(set(reps) - set(p.replicas))
        moves += came
        data += came * (p.size_bytes or 0)
    return data, moves


def brute_force(snap: ClusterSnapshot, threshold: int, scope: Scope | None = None) -> tuple[int, int]:
    """The fewest (bytes, replica moves) of any plan meeting every target, by enumeration; out
    of ``scope`` partitions and brokers keep their replicas."""
    eligible = sorted(b.id for b in snap.brokers if b.alive)
    tree = RackTree.of({b.id: b.rack for b in snap.brokers})
    targets = targets_of(snap, eligible, Fraction(threshold, 100))
    capacity = {b.id: b.capacity_bytes for b in snap.brokers if b.alive and b.capacity_bytes is not None}
    scope = scope or Scope()
    frozen, excluded, takers = scope.frozen(snap), set(scope.exclude_brokers), set(scope.add_brokers)
    choices = [[p.replicas] if i in frozen else
               [c for c in combinations(eligible, len(p.replicas)) if set(c) & excluded == set(p.replicas) & excluded
                and (not takers or set(c) - set(p.replicas) <= takers)]
               for i, p in enumerate(snap.partitions)]
    best: tuple[int, int] | None = None
    for lists in product(*choices):
        if distances(snap, lists, eligible, tree, targets, capacity) == (0, 0, 0, 0):
            cost = moved(snap, lists)
            best = cost if best is None or cost < best else best
    assert best is not None, "no plan meets every target"
    return best


def after_lists(plan) -> list[list[int]]:  # type: ignore[no-untyped-def]
    return [list(p.replicas) for p in plan.after.partitions]


def heuristic(snap: ClusterSnapshot, threshold: int) -> list[list[int]]:
    work = Working(snap)
    balance_replicas(work, threshold=threshold)
    return [list(r) for r in work.replicas]


# a new broker (4) in rack b, sizes that make the smallest moves the wrong ones: the two-replica
# moves onto broker 4 must leave every broker in the byte band
RACKED = ClusterSnapshot(
    (BrokerEntry(1, "a"), BrokerEntry(2, "a"), BrokerEntry(3, "b"), BrokerEntry(4, "b")),
    (PartitionEntry("x", 0, (1, 3), size_bytes=70), PartitionEntry("x", 1, (2, 3), size_bytes=40),
     PartitionEntry("x", 2, (3, 1), size_bytes=30), PartitionEntry("y", 0, (1, 3), size_bytes=20),
     PartitionEntry("y", 1, (2, 3), size_bytes=10), PartitionEntry("y", 2, (3, 2), size_bytes=5)))
# a dead broker (3) and a new one (5), no racks, no sizes
DEAD_AND_NEW = ClusterSnapshot(
    (BrokerEntry(1), BrokerEntry(2), BrokerEntry(3, alive=False), BrokerEntry(4), BrokerEntry(5)),
    (PartitionEntry("x", 0, (1, 3)), PartitionEntry("x", 1, (3, 2)), PartitionEntry("x", 2, (1, 2)),
     PartitionEntry("x", 3, (2, 4)), PartitionEntry("y", 0, (1, 4)), PartitionEntry("y", 1, (4, 1))))
# a hot broker (1) holding most bytes, two racks, capacities
HOT = ClusterSnapshot(
    (BrokerEntry(1, "a", capacity_bytes=200), BrokerEntry(2, "a", capacity_bytes=200),
     BrokerEntry(3, "b", capacity_bytes=200), BrokerEntry(4, "b", capacity_bytes=200)),
    (PartitionEntry("x", 0, (1, 3), size_bytes=60), PartitionEntry("x", 1, (1, 4), size_bytes=50),
     PartitionEntry("x", 2, (1, 3), size_bytes=45), PartitionEntry("x", 3, (2, 4), size_bytes=10),
     PartitionEntry("y", 0, (1, 4), size_bytes=25)))


@pytest.mark.parametrize(("snap", "threshold"), [(RACKED, 10), (DEAD_AND_NEW, 10), (HOT, 20)],
                         ids=["racked", "dead-and-new", "hot"])
def test_exact_path_reaches_the_enumerated_optimum(snap, threshold):
    best = brute_force(snap, threshold)
    plan = replica_balance(snap, threshold=threshold, exact_seconds=20)
    lists = after_lists(plan)
    eligible = sorted(b.id for b in snap.brokers if b.alive)
    tree = RackTree.of({b.id: b.rack for b in snap.brokers})
    capacity = {b.id: b.capacity_bytes for b in snap.brokers if b.capacity_bytes is not None}
    assert distances(snap, lists, eligible, tree, targets_of(snap, eligible, Fraction(threshold, 100)),
                     capacity) == (0, 0, 0, 0)
    assert moved(snap, lists) == best
    assert any(n.startswith(("exact path", "heuristic path")) for n in plan.notes)
    # the heuristic alone is never better than the enumerated optimum (the enumeration is sound)
    assert moved(snap, heuristic(snap, threshold)) >= best


def test_capacity_the_heuristic_refuses_is_planned_by_the_exact_path():
    # t0-0 (168 bytes, RF 3) fits only on brokers 3, 4, 5; the heuristic's moves, swaps and
    # chains do not find the plan that exists (and a capacity under the byte band's low end
    # must not make the program call the cluster infeasible)
    snap = ClusterSnapshot(
        tuple(BrokerEntry(b, capacity_bytes=c) for b, c in ((1, 67), (2, 136), (3, 296), (4, 202), (5, 350))),
        (PartitionEntry("t0", 0, (2, 5, 1), size_bytes=168), PartitionEntry("t0", 1, (4, 1, 3), size_bytes=68),
         PartitionEntry("t0", 2, (2, 3, 4), size_bytes=45), PartitionEntry("t0", 3, (2, 3, 4), size_bytes=10)))
    with pytest.raises(ValueError, match="capacity not met"):
        replica_balance(snap, threshold=10)
    plan = replica_balance(snap, threshold=10, exact_seconds=20)
    held = {b.id: 0 for b in snap.brokers}
    for p in plan.after.partitions:
        for b in p.replicas:
            held[b] += p.size_bytes or 0
    assert all(held[b.id] <= (b.capacity_bytes or 0) for b in snap.brokers)
    assert any(n.startswith("exact path") for n in plan.notes)


def test_exact_path_is_idempotent_and_deterministic():
    first = replica_balance(RACKED, threshold=10, exact_seconds=20)
    again = replica_balance(RACKED, threshold=10, exact_seconds=20)
    assert first.after.partitions == again.after.partitions and first.moves == again.moves
    second = replica_balance(first.after, threshold=10, exact_seconds=20)
    assert second.replica_moves == 0


def test_followers_move_before_leaders_at_equal_cost():
    # brokers 1-3 hold 4 replicas each, a new broker 4 takes one from each: 3 moves, all followers
    snap = ClusterSnapshot(
        tuple(BrokerEntry(b) for b in (1, 2, 3, 4)),
        tuple(PartitionEntry("t", i, reps) for i, reps in enumerate(
            [(1, 2), (2, 3), (3, 1), (1, 3), (2, 1), (3, 2)])))
    plan = replica_balance(snap, threshold=0, exact_seconds=20)
    assert plan.replica_moves == 3
    assert plan.leader_changes == 0


def test_unreachable_band_is_proven_and_reported():
    # rack a has one broker: full diversity puts a replica of every partition on broker 1, 8 of
    # 16 replicas where the band allows 4, so the band is out of reach, and the notes say so
    snap = ClusterSnapshot(
        (BrokerEntry(1, "a"), BrokerEntry(2, "b"), BrokerEntry(3, "b"), BrokerEntry(4, "b")),
        tuple(PartitionEntry("t", i, (1, 2 + i % 3)) for i in range(8)))
    plan = replica_balance(snap, threshold=10, exact_seconds=20)
    assert any("replica band cannot be reached" in n and "proven" in n for n in plan.notes)
    report = render_report(plan, PlanSettings("replica"))
    unreached = report.split("## Targets not reached")[1].split("## Notes")[0]
    assert "replicas per alive broker" in unreached and "see the notes" in unreached


def test_heuristic_notes_do_not_claim_a_proof():
    snap = ClusterSnapshot(
        (BrokerEntry(1, "a"), BrokerEntry(2, "b"), BrokerEntry(3, "b"), BrokerEntry(4, "b")),
        tuple(PartitionEntry("t", i, (1, 2 + i % 3)) for i in range(8)))
    plan = replica_balance(snap, threshold=10)      # the heuristic alone
    assert plan.notes and all("proven" not in n for n in plan.notes)
    assert any("not a proof" in n for n in plan.notes)


# --- the scope: --topics, --exclude-topics, --exclude-brokers ------------------------------

@pytest.mark.parametrize("scope", [Scope(exclude_topics="y"), Scope(topics="x"), Scope(exclude_brokers=(4,)),
                                   Scope(add_brokers=(5,))],
                         ids=["exclude-topics", "topics", "exclude-brokers", "add-brokers"])
@pytest.mark.parametrize("seconds", [0, 20], ids=["heuristic", "exact"])
def test_scope_is_kept_and_the_exact_path_reaches_its_optimum(scope, seconds):
    snap = DEAD_AND_NEW
    plan = replica_balance(snap, threshold=10, exact_seconds=seconds, scope=scope)
    frozen = scope.frozen(snap)
    for i, (a, b) in enumerate(zip(snap.partitions, plan.after.partitions, strict=True)):
        if i in frozen:
            assert a.replicas == b.replicas
        for x in scope.exclude_brokers:
            assert (x in a.replicas) == (x in b.replicas)
        if scope.add_brokers and a.replicas[0] != 3 and 3 not in a.replicas:   # broker 3 is dead: repairs
            assert set(b.replicas) - set(a.replicas) <= set(scope.add_brokers)
    again = replica_balance(plan.after, threshold=10, exact_seconds=seconds, scope=scope)
    assert again.replica_moves == 0
    if seconds:
        assert moved(snap, after_lists(plan)) == brute_force(snap, 10, scope)


@pytest.mark.parametrize("mode", ["leader", "cluster"])
def test_demoted_brokers_lead_nothing_with_the_fewest_changes(mode):
    # broker 1 leads 3 partitions, each with another replica: 3 changes (the fewest), none on 1
    snap = ClusterSnapshot(tuple(BrokerEntry(b) for b in (1, 2, 3, 4)),
                           tuple(PartitionEntry("t", i, reps) for i, reps in enumerate(
                               [(1, 2), (1, 3), (1, 4), (2, 3), (3, 4), (4, 2), (2, 1), (3, 1)])))
    settings = PlanSettings(mode, exact_seconds=0, scope=Scope(demote_brokers=(1,)))
    plan = make_plan(snap, settings)
    assert all(p.replicas[0] != 1 for p in plan.after.partitions)
    assert "brokers 1 demoted" in render_report(plan, settings)
    if mode == "leader":    # cluster mode also evens the replicas (broker 1 holds 5 of 16)
        assert plan.leader_changes == 3
        assert [set(p.replicas) for p in plan.after.partitions] == [set(p.replicas) for p in snap.partitions]


def test_scope_bad_regex_is_a_value_error():
    with pytest.raises(ValueError, match="topics: not a regular expression"):
        Scope(topics="x[")


# --- the report: one definition per figure ------------------------------------------------

def section(report: str, title: str) -> str:
    return report.split(f"## {title}")[1].split("\n## ")[0]


def test_worst_topic_above_its_cap_is_a_target_not_reached():
    # leader mode moves no replica: topic x keeps 8 replicas on broker 1 where its cap is 3
    snap = ClusterSnapshot(tuple(BrokerEntry(b) for b in (1, 2, 3, 4)),
                           tuple(PartitionEntry("x", i, (1,)) for i in range(8)))
    plan = make_plan(snap, PlanSettings("leader"))
    report = render_report(plan, PlanSettings("leader"))
    unreached = section(report, "Targets not reached")
    assert "worst topic: 5 replica(s) on one broker above its cap" in unreached
    assert "every target was reached" not in unreached
    row = next(line for line in section(report, "Objectives").splitlines() if "worst topic" in line)
    assert row.split("|")[3].strip() == "5" and row.split("|")[4].strip() == "0"


def test_rack_forced_topic_share_is_not_an_excess():
    # rack a's single broker holds every partition of x (diversity forces it): its cap is the
    # rack's share, so a balanced plan shows no excess and no unreached topic line
    snap = ClusterSnapshot(
        (BrokerEntry(1, "a"), BrokerEntry(2, "b"), BrokerEntry(3, "b"), BrokerEntry(4, "b")),
        tuple(PartitionEntry("x", i, (1, 2 + i % 3)) for i in range(6)))
    before, _ = plan_figures(make_plan(snap, PlanSettings("leader")))
    assert before.topic_excess <= 0


def test_leader_ideal_is_the_same_in_summary_objectives_and_bounds():
    # broker 4 is being forgotten: the leader rule spreads the 8 leaders over brokers 1-3 (2-3),
    # not over the 4 alive brokers (2-2); the summary, the objectives and the bounds say 2-3
    settings = PlanSettings("leader", forgotten=(4,))
    snap = ClusterSnapshot(tuple(BrokerEntry(b) for b in (1, 2, 3, 4)),
                           tuple(PartitionEntry("t", i, (1 + i % 3, 1 + (i + 1) % 3)) for i in range(8)))
    plan = make_plan(snap, settings)
    ideal = f"{plan.bound('leaders_floor')}-{plan.bound('leaders_ceil')}"
    assert ideal == "2-3"
    report = render_report(plan, settings)
    summary_row = next(line for line in section(report, "Summary").splitlines()
                       if line.startswith("| preferred leaders per alive broker"))
    assert summary_row.split("|")[4].strip() == ideal
    objective_row = next(line for line in section(report, "Objectives").splitlines()
                         if "3. preferred leaders" in line)
    assert objective_row.split("|")[4].strip() == f"{ideal} (ideal)"


def test_byte_band_label_matches_its_values():
    snap = ClusterSnapshot(tuple(BrokerEntry(b) for b in (1, 2, 3)),
                           (PartitionEntry("t", 0, (1,), size_bytes=1000), PartitionEntry("t", 1, (2,), size_bytes=10),
                            PartitionEntry("t", 2, (3,), size_bytes=20)))
    plan = replica_balance(snap, threshold=10)
    mean = Fraction(1030, 3)
    assert plan.bound("bytes_band_lo") == -(-mean * 9 // 10)         # ceil(mean * (1 - t))
    assert plan.bound("bytes_band_hi") == max(mean * 11 // 10, 1000)  # max(floor(mean * (1 + t)), largest)
    assert (plan.bound("bytes_band_lo"), plan.bound("bytes_band_hi")) == byte_band(1030, 3, Fraction(1, 10), 1000)
    report = render_report(plan, PlanSettings("replica"))
    assert "ceil(mean * (1 - threshold))" in report and "max(floor(mean * (1 + threshold)), largest partition)" in report
    assert "max(mean * threshold, largest partition)" not in report


def test_leader_change_bound_is_labelled_as_the_plans_own_in_cluster_mode():
    snap = ClusterSnapshot(tuple(BrokerEntry(b) for b in (1, 2, 3, 4)),
                           tuple(PartitionEntry("t", i, (1, 2)) for i in range(4)))
    plan = make_plan(snap, PlanSettings("cluster", exact_seconds=0))
    report = render_report(plan, PlanSettings("cluster"))
    row = next(line for line in section(report, "Objectives").splitlines() if "4. leader changes" in line)
    assert "for the plan's own replica lists" in row


# --- the fixed subset of bench/exact_optimum.py, against its stored optima --------------------

def test_stored_optima_ratio():
    with open(DATA) as f:
        stored = json.load(f)
    assert len(stored) >= 5
    ratios = []
    for case in stored:
        snap = ClusterSnapshot.from_dict(case["snapshot"])
        plan = replica_balance(snap, threshold=case["threshold"], exact_seconds=30)   # stops once proven
        data, moves = moved(snap, after_lists(plan))
        value = data if case["metric"] == "bytes_moved" else moves
        eligible = sorted(b.id for b in snap.brokers if b.alive)
        tree = RackTree.of({b.id: b.rack for b in snap.brokers})
        capacity = {b.id: b.capacity_bytes for b in snap.brokers if b.capacity_bytes is not None}
        targets = targets_of(snap, eligible, Fraction(case["threshold"], 100))
        assert distances(snap, after_lists(plan), eligible, tree, targets, capacity) == (0, 0, 0, 0), case["seed"]
        ratios.append(value / case["optimum"] if case["optimum"] else (1.0 if value == 0 else float("inf")))
    assert max(ratios) <= 1.25, ratios
    assert statistics.median(ratios) <= 1.05, ratios
