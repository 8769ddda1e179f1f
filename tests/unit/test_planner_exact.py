"""The exact path of replica balance (kafka_replica_assignor.planner.solving.exact) and the report's figures, on small
hand-made clusters whose optimum is found here by enumerating every plan.

The targets an enumerated plan must meet are recomputed here from the goals' module docs
(:func:`off_targets`), sharing no code with the planner."""

from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Sequence
from fractions import Fraction
from itertools import combinations, product

import pytest

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.goals.replica_bytes import byte_band
from kafka_replica_assignor.planner.plan import Plan
from kafka_replica_assignor.planner.racks import RackTree
from kafka_replica_assignor.planner.report.figures import plan_figures
from kafka_replica_assignor.planner.report.plan_report import render_report
from kafka_replica_assignor.planner.request import PlanError, RequestError, Scope
from kafka_replica_assignor.planner.solving.planning import make_plan
from tests.planning import plan_of, request_of
from tests.property.plan_invariants import static_topic_caps, topic_counts

DATA = os.path.join(os.path.dirname(__file__), "data", "exact_optima.json")


def moved(snap: ClusterSnapshot, lists: Sequence[Sequence[int]]) -> tuple[int, int]:
    """(bytes moved, replica moves) from ``snap`` to ``lists``."""
    data = moves = 0
    for p, reps in zip(snap.partitions, lists, strict=True):
        came = len(set(reps) - set(p.replicas))
        moves += came
        data += came * (p.size_bytes or 0)
    return data, moves


def off_targets(snap: ClusterSnapshot, lists: Sequence[Sequence[int]],
                threshold: float) -> tuple[int, int, int, int] | None:
    """How far ``lists`` (every partition's replicas after a plan) are from each target, in the
    goals' order: groups lacking (full rack diversity, per level), replicas above the topic caps,
    replicas outside the count band, bytes outside the byte band (0: met). None when a hard rule
    breaks: a duplicate, a replica off the eligible (alive) brokers, a capacity
    exceeded. Written from the goals' module docs, sharing no code with them:

    - count band (replica_counts): ``avg = replicas / brokers``, ``hi = max(ceil(avg),
      floor(avg * (1 + t)))``, ``lo = max(0, min(floor(avg), ceil(avg * (1 - t))))``;
    - byte band (replica_bytes): ``[ceil(mean * (1 - t)), floor(mean * (1 + t))]``, ``[floor(mean),
      ceil(mean)]`` when that holds no whole number, the top at least the largest partition and
      at most a broker's capacity;
    - topic caps (topic_spread): ``cap(t, g) = E(t, g) + 1``, ``E(t, root) = R_t``, ``E(t, g) =
      max(ceil(E(t, parent) * m_g / m_parent), S_t(g))``, ``S_t(g)`` (rack nodes) the topic's
      partitions with at least as many replicas as there are groups at ``g``'s level.
    """
    eligible = sorted(b.id for b in snap.brokers if b.alive)
    eset = set(eligible)
    n = len(eligible)
    tree = RackTree.of({b.id: b.rack for b in snap.brokers})
    depth = tree.depth
    groups = [len({tree.keys[b][lv] for b in eligible}) for lv in range(depth)]
    capacity = {b.id: b.capacity_bytes for b in snap.brokers if b.id in eset and b.capacity_bytes is not None}
    counts = dict.fromkeys(eligible, 0)
    sizes = dict.fromkeys(eligible, 0)
    lacking = 0
    for p, reps in zip(snap.partitions, lists, strict=True):
        if len(reps) != len(p.replicas) or len(set(reps)) != len(reps) or not eset.issuperset(reps):
            return None
        for b in reps:
            counts[b] += 1
            sizes[b] += p.size_bytes or 0
        if len(reps) > 1:
            for lv in range(depth):
                lacking += max(0, min(len(reps), groups[lv]) - len({tree.keys[b][lv] for b in reps}))
    if any(sizes[b] > limit for b, limit in capacity.items()):
        return None
    t = Fraction(threshold) / 100
    avg = Fraction(sum(counts.values()), n)
    hi = max(math.ceil(avg), math.floor(avg * (1 + t)))
    lo = max(0, min(math.floor(avg), math.ceil(avg * (1 - t))))
    off_counts = sum(max(0, c - hi, lo - c) for c in counts.values())
    off_bytes = 0
    if any(p.size_bytes is not None for p in snap.partitions):
        mean = Fraction(sum(sizes.values()), n)
        blo, bhi = math.ceil(mean * (1 - t)), math.floor(mean * (1 + t))
        if blo > bhi:
            blo, bhi = math.floor(mean), math.ceil(mean)
        bhi = max(bhi, max(p.size_bytes or 0 for p in snap.partitions))
        off_bytes = sum(max(0, s - min(bhi, capacity.get(b, bhi)), max(0, blo) - s) for b, s in sizes.items())
    return lacking, topic_excess(snap, lists, eligible, tree), off_counts, off_bytes


Node = tuple[str, int, object]
"""A node of the rack tree below the root: ``("rack", level, key)`` or ``("broker", depth, id)``."""


def rack_nodes(eligible: list[int], tree: RackTree) -> tuple[dict[int, list[Node]], dict[Node, int], dict[Node, Node]]:
    """Per eligible broker its nodes from the top level down to itself; per node its eligible
    brokers (``m_g``) and its parent (``ROOT`` for the top level)."""
    chain = {b: [("rack", lv, tree.keys[b][lv]) for lv in range(tree.depth)] + [("broker", tree.depth, b)]
             for b in eligible}
    members: dict[Node, int] = {ROOT: len(eligible)}
    parent: dict[Node, Node] = {}
    for nodes in chain.values():
        for k, node in enumerate(nodes):
            members[node] = members.get(node, 0) + 1
            parent[node] = nodes[k - 1] if k else ROOT
    return chain, members, parent


ROOT: Node = ("root", -1, None)


def topic_excess(snap: ClusterSnapshot, lists: Sequence[Sequence[int]], eligible: list[int], tree: RackTree) -> int:
    """Replicas above the static topic caps (the suite's one independent recomputation,
    :func:`tests.property.plan_invariants.static_topic_caps`), summed over topics and the nodes
    of the rack tree below the root (racks at every level, brokers)."""
    usable = set(eligible)
    after = ClusterSnapshot(snap.brokers, tuple(PartitionEntry(p.topic, p.partition, tuple(reps), size_bytes=p.size_bytes)
                                                for p, reps in zip(snap.partitions, lists, strict=True)))
    caps = static_topic_caps(snap, usable, tree)
    return sum(max(0, count - caps[key]) for key, count in topic_counts(after, usable, tree).items()
               if key[1][0] != "root")


def brute_force(snap: ClusterSnapshot, threshold: int, scope: Scope | None = None) -> tuple[int, int]:
    """The fewest (bytes, replica moves) of any plan meeting every target, by enumeration; out
    of ``scope`` partitions keep their replicas, excluded brokers neither give nor take, and
    with added brokers only they take (repairs included)."""
    eligible = sorted(b.id for b in snap.brokers if b.alive)
    scope = scope or Scope()
    frozen, excluded, takers = scope.frozen(snap), set(scope.exclude_brokers), set(scope.add_brokers)
    tree = RackTree.of({b.id: b.rack for b in snap.brokers})
    groups = [len({tree.keys[b][lv] for b in eligible}) for lv in range(tree.depth)]

    def diverse(c: tuple[int, ...]) -> bool:    # every target holds full diversity: the others cannot qualify
        return len(c) < 2 or all(len({tree.keys[b][lv] for b in c}) >= min(len(c), groups[lv])
                                 for lv in range(tree.depth))
    choices = [[p.replicas] if i in frozen else
               [c for c in combinations(eligible, len(p.replicas)) if set(c) & excluded == set(p.replicas) & excluded
                and (not takers or set(c) - set(p.replicas) <= takers) and diverse(c)]
               for i, p in enumerate(snap.partitions)]
    best: tuple[int, int] | None = None
    for lists in product(*choices):
        if off_targets(snap, lists, threshold) == (0, 0, 0, 0):
            cost = moved(snap, lists)
            best = cost if best is None or cost < best else best
    assert best is not None, "no plan meets every target"
    return best


def after_lists(plan: Plan, snap: ClusterSnapshot) -> list[list[int]]:
    """The plan's replica lists in the order of ``snap``'s partitions (the plan lists them by
    (topic, partition))."""
    after = {(p.topic, p.partition): list(p.replicas) for p in plan.after.partitions}
    return [after[(p.topic, p.partition)] for p in snap.partitions]


def heuristic(snap: ClusterSnapshot, threshold: int) -> list[list[int]]:
    return after_lists(plan_of(snap, "replica", threshold=threshold), snap)


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


def test_topic_caps_of_the_checker_follow_the_module_doc():
    # the topic spread doc's example: topic x, 12 replicas, racks a (4 brokers) and b (2), RF 2,
    # one replica per rack: rack b's cap is max(ceil(12 * 2 / 6), 6) + 1 = 7, its brokers'
    # ceil(6 / 2) + 1 = 4; rack a's max(ceil(12 * 4 / 6), 6) + 1 = 9, its brokers' ceil(8 / 4) + 1 = 3
    snap = ClusterSnapshot(tuple(BrokerEntry(b, "a" if b < 5 else "b") for b in range(1, 7)),
                           tuple(PartitionEntry("x", p, (1 + p % 4, 5 + p % 2)) for p in range(6)))
    eligible = list(range(1, 7))
    tree = RackTree.of({b.id: b.rack for b in snap.brokers})
    assert topic_excess(snap, [p.replicas for p in snap.partitions], eligible, tree) == 0
    assert topic_excess(snap, [(1, 5)] * 4 + [(2, 6)] * 2, eligible, tree) == 4 - 3 + 4 - 4
    assert topic_excess(snap, [(1, 5)] * 5 + [(2, 5)], eligible, tree) == (5 - 3) + (6 - 4)


@pytest.mark.parametrize(("snap", "threshold"), [(RACKED, 10), (DEAD_AND_NEW, 10), (HOT, 20)],
                         ids=["racked", "dead-and-new", "hot"])
def test_exact_path_reaches_the_enumerated_optimum(snap, threshold):
    best = brute_force(snap, threshold)
    plan = plan_of(snap, "replica", threshold=threshold, exact=True)
    lists = after_lists(plan, snap)
    assert off_targets(snap, lists, threshold) == (0, 0, 0, 0)
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
    with pytest.raises(PlanError, match="capacity not met"):
        plan_of(snap, "replica", threshold=10)
    plan = plan_of(snap, "replica", threshold=10, exact=True)
    held = {b.id: 0 for b in snap.brokers}
    for p in plan.after.partitions:
        for b in p.replicas:
            held[b] += p.size_bytes or 0
    assert all(held[b.id] <= (b.capacity_bytes or 0) for b in snap.brokers)
    assert any(n.startswith("exact path") for n in plan.notes)


def test_exact_path_is_idempotent_and_deterministic():
    first = plan_of(RACKED, "replica", threshold=10, exact=True)
    again = plan_of(RACKED, "replica", threshold=10, exact=True)
    assert first.after.partitions == again.after.partitions and first.moves == again.moves
    second = plan_of(first.after, "replica", threshold=10, exact=True)
    assert second.replica_moves == 0


def test_followers_move_before_leaders_at_equal_cost():
    # brokers 1-3 hold 4 replicas each, a new broker 4 takes one from each: 3 moves, all followers
    snap = ClusterSnapshot(
        tuple(BrokerEntry(b) for b in (1, 2, 3, 4)),
        tuple(PartitionEntry("t", i, reps) for i, reps in enumerate(
            [(1, 2), (2, 3), (3, 1), (1, 3), (2, 1), (3, 2)])))
    plan = plan_of(snap, "replica", threshold=0, exact=True)
    assert plan.replica_moves == 3
    assert plan.leader_changes == 0


def test_unreachable_band_is_proven_and_reported():
    # rack a has one broker: full diversity puts a replica of every partition on broker 1, 8 of
    # 16 replicas where the band allows 4, so the band is out of reach, and the notes say so
    snap = ClusterSnapshot(
        (BrokerEntry(1, "a"), BrokerEntry(2, "b"), BrokerEntry(3, "b"), BrokerEntry(4, "b")),
        tuple(PartitionEntry("t", i, (1, 2 + i % 3)) for i in range(8)))
    request = request_of("replica", threshold=10, exact=True)
    plan = make_plan(snap, request)
    assert any("replica counts cannot be reached" in n and "proven" in n for n in plan.notes), plan.notes
    report = render_report(plan, request)
    unreached = report.split("## Targets not reached")[1].split("## Notes")[0]
    assert "replicas per alive broker" in unreached and "see the notes" in unreached


def test_heuristic_notes_do_not_claim_a_proof():
    snap = ClusterSnapshot(
        (BrokerEntry(1, "a"), BrokerEntry(2, "b"), BrokerEntry(3, "b"), BrokerEntry(4, "b")),
        tuple(PartitionEntry("t", i, (1, 2 + i % 3)) for i in range(8)))
    plan = plan_of(snap, "replica", threshold=10)      # the heuristic alone
    assert plan.notes and all("proven" not in n for n in plan.notes)
    assert any("not a proof" in n for n in plan.notes)


# --- the scope: --topics, --exclude-topics, --exclude-brokers, --add-brokers ---------------

@pytest.mark.parametrize("scope", [Scope(exclude_topics="y"), Scope(topics="x"), Scope(exclude_brokers=(4,)),
                                   Scope(add_brokers=(5,))],
                         ids=["exclude-topics", "topics", "exclude-brokers", "add-brokers"])
@pytest.mark.parametrize("exact", [False, True], ids=["heuristic", "exact"])
def test_scope_is_kept_and_the_exact_path_reaches_its_optimum(scope, exact):
    snap = DEAD_AND_NEW
    plan = plan_of(snap, "replica", threshold=10, exact=exact, scope=scope)
    frozen = scope.frozen(plan.before)
    for i, (a, b) in enumerate(zip(plan.before.partitions, plan.after.partitions, strict=True)):
        if i in frozen:
            assert a.replicas == b.replicas
        for x in scope.exclude_brokers:
            assert (x in a.replicas) == (x in b.replicas)
        if scope.add_brokers:       # only added brokers take, repairs of the dead broker 3 included
            assert set(b.replicas) - set(a.replicas) <= set(scope.add_brokers)
    again = plan_of(plan.after, "replica", threshold=10, exact=exact, scope=scope)
    assert again.replica_moves == 0
    if exact:
        assert moved(snap, after_lists(plan, snap)) == brute_force(snap, 10, scope)


@pytest.mark.parametrize("mode", ["leader", "cluster"])
def test_demoted_brokers_lead_nothing_with_the_fewest_changes(mode):
    # broker 1 leads 3 partitions, each with another replica: 3 changes (the fewest), none on 1
    snap = ClusterSnapshot(tuple(BrokerEntry(b) for b in (1, 2, 3, 4)),
                           tuple(PartitionEntry("t", i, reps) for i, reps in enumerate(
                               [(1, 2), (1, 3), (1, 4), (2, 3), (3, 4), (4, 2), (2, 1), (3, 1)])))
    request = request_of(mode, scope=Scope(demote_brokers=(1,)))
    plan = make_plan(snap, request)
    assert all(p.replicas[0] != 1 for p in plan.after.partitions)
    assert "brokers 1 demoted" in render_report(plan, request)
    if mode == "leader":    # cluster mode also evens the replicas (broker 1 holds 5 of 16)
        assert plan.leader_changes == 3
        assert [set(p.replicas) for p in plan.after.partitions] == [set(p.replicas) for p in plan.before.partitions]


def test_scope_bad_regex_is_a_request_error():
    with pytest.raises(RequestError, match="topics: not a regular expression"):
        Scope(topics="x[")


# --- the report: one definition per figure ------------------------------------------------

def section(report: str, title: str) -> str:
    return report.split(f"## {title}")[1].split("\n## ")[0]


def test_worst_topic_above_its_cap_is_a_target_not_reached():
    # leader mode moves no replica: topic x keeps 8 replicas on broker 1 where its cap is 3
    snap = ClusterSnapshot(tuple(BrokerEntry(b) for b in (1, 2, 3, 4)),
                           tuple(PartitionEntry("x", i, (1,)) for i in range(8)))
    request = request_of("leader")
    plan = plan_of(snap, "leader")
    report = render_report(plan, request)
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
    before, _ = plan_figures(plan_of(snap, "leader"))
    assert before.topic_excess <= 0


def test_leader_ideal_is_the_same_in_summary_objectives_and_bounds():
    # broker 4 is being removed (leader mode refuses --remove-brokers: cluster mode drains it):
    # the leader rule spreads the 8 leaders over brokers 1-3 (2-3), not over the 4 alive brokers
    # (2-2); the summary, the objectives and the bounds say 2-3
    request = request_of("cluster", remove=(4,))
    snap = ClusterSnapshot(tuple(BrokerEntry(b) for b in (1, 2, 3, 4)),
                           tuple(PartitionEntry("t", i, (1 + i % 3, 1 + (i + 1) % 3)) for i in range(8)))
    plan = make_plan(snap, request)
    ideal = f"{plan.bound('leaders_floor')}-{plan.bound('leaders_ceil')}"
    assert ideal == "2-3"
    report = render_report(plan, request)
    summary_row = next(line for line in section(report, "Summary").splitlines()
                       if line.startswith("| preferred leaders per alive broker"))
    assert summary_row.split("|")[4].strip() == ideal
    objective_row = next(line for line in section(report, "Objectives").splitlines()
                         if "3. preferred leaders" in line)
    assert objective_row.split("|")[4].strip() == f"{ideal} (ideal)"


def test_leader_mode_refuses_remove_brokers():
    # the old leader-mode form of the test above: leader mode moves no replica, so it refuses
    # --remove-brokers before planning
    snap = ClusterSnapshot(tuple(BrokerEntry(b) for b in (1, 2, 3, 4)),
                           tuple(PartitionEntry("t", i, (1 + i % 3, 1 + (i + 1) % 3)) for i in range(8)))
    with pytest.raises(RequestError, match="--remove-brokers"):
        plan_of(snap, "leader", remove=(4,))


def test_byte_band_label_matches_its_values():
    snap = ClusterSnapshot(tuple(BrokerEntry(b) for b in (1, 2, 3)),
                           (PartitionEntry("t", 0, (1,), size_bytes=1000), PartitionEntry("t", 1, (2,), size_bytes=10),
                            PartitionEntry("t", 2, (3,), size_bytes=20)))
    request = request_of("replica", threshold=10)
    plan = make_plan(snap, request)
    mean = Fraction(1030, 3)
    assert plan.bound("bytes_band_lo") == -(-mean * 9 // 10)         # ceil(mean * (1 - t))
    assert plan.bound("bytes_band_hi") == max(mean * 11 // 10, 1000)  # max(floor(mean * (1 + t)), largest)
    assert (plan.bound("bytes_band_lo"), plan.bound("bytes_band_hi")) == byte_band(1030, 3, Fraction(1, 10), 1000)
    report = render_report(plan, request)
    assert "ceil(mean * (1 - threshold))" in report and "max(floor(mean * (1 + threshold)), largest partition)" in report
    assert "max(mean * threshold, largest partition)" not in report


def test_leader_change_bound_is_labelled_as_the_plans_own_in_cluster_mode():
    snap = ClusterSnapshot(tuple(BrokerEntry(b) for b in (1, 2, 3, 4)),
                           tuple(PartitionEntry("t", i, (1, 2)) for i in range(4)))
    request = request_of("cluster")
    plan = plan_of(snap, "cluster")
    report = render_report(plan, request)
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
        plan = plan_of(snap, "replica", threshold=case["threshold"], exact=True)
        lists = after_lists(plan, snap)
        data, moves = moved(snap, lists)
        value = data if case["metric"] == "bytes_moved" else moves
        assert off_targets(snap, lists, case["threshold"]) == (0, 0, 0, 0), case["seed"]
        ratios.append(value / case["optimum"] if case["optimum"] else (1.0 if value == 0 else float("inf")))
    assert max(ratios) <= 1.25, ratios
    assert statistics.median(ratios) <= 1.05, ratios
