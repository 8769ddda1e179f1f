"""The goals of kafka_replica_assignor.planner.goals: the interface holds (the model's fast move check is the goals'
own ``accepts``), the report's targets are the goals' figures, and the findings fixed with the
split, each on a small hand-made cluster whose optimum is known."""

from __future__ import annotations

import ast
import os
from random import Random

import pytest

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.goals.goal import Goal, ReportView
from kafka_replica_assignor.planner.goals.model import Model
from kafka_replica_assignor.planner.goals.order import GOALS, REPLICA_PHASES, goals_for, targets
from kafka_replica_assignor.planner.goals.rack_diversity import RackDiversityGoal, scarce_first
from kafka_replica_assignor.planner.goals.topic_spread import TopicSpreadGoal
from kafka_replica_assignor.planner.plan import MoveKind, Working
from kafka_replica_assignor.planner.report.figures import plan_figures
from kafka_replica_assignor.planner.report.plan_report import render_report
from kafka_replica_assignor.planner.request import PlanRequest, Scope
from kafka_replica_assignor.planner.solving.planning import make_plan
from tests.planning import plan_of, request_of
from tests.property.plan_invariants import check_plan

GOALS_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "planner", "goals")


def random_cluster(rng: Random) -> ClusterSnapshot:
    """A few racks (or none), some capacities, sizes, RF 2-3, one topic crowded on broker 1."""
    n = rng.randint(4, 9)
    racks = rng.choice((None, 2, 3))
    brokers = []
    for b in range(1, n + 1):
        cap = rng.choice((None, None, rng.randint(300, 900)))
        brokers.append(BrokerEntry(b, None if racks is None else f"r{b % racks}", capacity_bytes=cap))
    parts = []
    for t in range(rng.randint(2, 4)):
        for p in range(rng.randint(3, 12)):
            rf = rng.choice((2, 3))
            reps = [1] if t == 0 else []
            reps += rng.sample([b for b in range(1, n + 1) if b not in reps], rf - len(reps))
            parts.append(PartitionEntry(f"t{t}", p, tuple(reps), size_bytes=rng.randint(1, 60)))
    return ClusterSnapshot(tuple(brokers), tuple(parts))


def model_of(snap: ClusterSnapshot, request: PlanRequest, *, leader_budget: int | None = None) -> tuple[
        Working, Model, list[Goal]]:
    """The heuristic's model of ``snap`` with the replica goals of ``request`` bound and prepared
    (their bands and targets set), before any move."""
    work = Working(snap, request.scope)
    goals = goals_for(work, request, REPLICA_PHASES)
    model = Model(work, goals, None, leader_budget, work.counts(), work.byte_counts())
    for goal in goals:
        goal.prepare()
    return work, model, goals


@pytest.mark.parametrize("seed", range(12))
def test_model_fits_is_the_conjunction_of_the_goals_accepts(seed):
    # Model.fits is the fast path of every goal's acceptance check: on every offered replica and
    # every broker, and for every rank asking, it says exactly what the goals say together: no
    # duplicate, the leader budget, every hard goal's accepts and the accepts of every goal
    # ranked before the one asking (each asked through its own method)
    rng = Random(seed)
    snap = random_cluster(rng)
    scope = (Scope(exclude_brokers=(2,)), Scope(add_brokers=(3, 4)), Scope())[seed % 3]
    leader_budget = 0 if seed % 4 == 1 else None      # 0: no leader replica may move
    work, model, goals = model_of(snap, PlanRequest("replica", threshold=10, scope=scope, exact_nodes=0),
                                  leader_budget=leader_budget)
    assert [g.key for g in goals][-5:] == ["diversity", "topics", "counts", "bytes", "moves"]
    checked = refused = by_rank = 0
    for x in work.eligible:
        for i in model.on(x):
            for y in work.eligible:
                if y == x:
                    continue
                free = y not in model.reps[i] and (model.reps[i][0] != x or leader_budget is None)
                for upto in range(len(goals) + 1):
                    expected = free and all(g.accepts(i, x, y) for r, g in enumerate(goals) if g.hard or r < upto)
                    assert model.fits(i, x, y, upto) == expected, (i, x, y, upto)
                    if model.leaf[y] in model.allowed_leaves(i, x):     # the caller looked the rack up
                        assert model.fits(i, x, y, upto, leaf_known=True) == expected, (i, x, y, upto)
                    checked += 1
                    refused += not expected
                by_rank += model.fits(i, x, y, 0) and not model.fits(i, x, y, len(goals))
    assert checked > 500 and 0 < refused < checked
    assert by_rank      # the soft goals' accepts refuse some moves the hard rules allow


@pytest.mark.parametrize("seed", range(8))
def test_racks_shut_by_a_node_at_the_topic_cap_have_no_broker_within_the_caps(seed):
    # rack diversity's searches within the topic caps leave out the racks under a node holding
    # the topic at its cap (TopicSpreadGoal.open_racks): on a three-level tree whose data
    # centres, zones and racks fill up as replicas of one topic pile in, no broker of a rack left
    # out is accepted by caps_ok, whatever the source; and some racks are left out
    rng = Random(seed)
    racks = [f"/dc{d}/zone-{z}/rack-{d}{z}{r}" for d in (1, 2) for z in "ab" for r in (0, 1)][:rng.choice((5, 8))]
    brokers = tuple(BrokerEntry(b, racks[b % len(racks)]) for b in range(3 * len(racks)))
    parts = tuple(PartitionEntry(f"t{t}", p, tuple(rng.sample(range(len(brokers)), 3)), size_bytes=rng.randint(1, 60))
                  for t in range(3) for p in range(rng.randint(4, 12)))
    work, model, _ = model_of(ClusterSnapshot(brokers, parts), PlanRequest("replica", threshold=10, exact_nodes=0))
    spread = model.goal("topics")
    assert isinstance(spread, TopicSpreadGoal)
    shut = 0
    for _ in range(40):     # replicas of t0 crowd into dc1, so its nodes reach their caps
        i = rng.choice(model.topic_parts[0])
        x = rng.choice(model.reps[i])
        into = [y for y in work.eligible if y not in model.reps[i] and racks[y % len(racks)].startswith("/dc1")]
        if into:
            model.do_move(i, x, rng.choice(into))
        for t in range(3):
            opened = spread.open_racks(t, work.eligible, list(model.leaf_members))
            for x in work.eligible:
                for leaf in set(model.leaf_members) - set(opened[x]):
                    shut += 1
                    assert not any(spread.caps_ok(t, x, y) for y in model.leaf_members[leaf] if y != x)
    assert shut


def test_goal_order_names_every_goal_module_once():
    # one goal class per module, each ranked once in GOALS (the order is data, in one place)
    classes = []
    for name in sorted(os.listdir(GOALS_DIR)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(GOALS_DIR, name), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        goals = [c.name for c in tree.body if isinstance(c, ast.ClassDef) and c.name.endswith("Goal")
                 and c.name != "Goal"]
        assert len(goals) <= 1, (name, goals)
        classes += goals
    assert sorted(classes) == sorted(g.__name__ for g in GOALS)
    assert len(set(GOALS)) == len(GOALS)


def test_report_targets_not_reached_are_the_goals_own_figures():
    # a move budget of 1 leaves counts off band: the report lists exactly the goals' missed targets
    brokers = tuple(BrokerEntry(b, "a" if b < 3 else "b") for b in (1, 2, 3, 4))
    parts = tuple(PartitionEntry("t", p, (1, 3), size_bytes=10) for p in range(6))
    snap = ClusterSnapshot(brokers, parts)
    request = request_of("replica", max_moves=1)
    plan = make_plan(snap, request)
    before, after = plan_figures(plan)
    goal_targets = targets(plan, request, before, after)
    missed = [t.missed for t in goal_targets if not t.reached]
    assert missed and all(m for m in missed)
    report = render_report(plan, request)
    section = report.split("## Targets not reached", 1)[1].split("## Notes", 1)[0]
    assert [line[2:] for line in section.strip().splitlines()] == missed
    for t in goal_targets:
        if t.section:
            assert f"| {t.section}. {t.label} | {t.before} | {t.after} | {t.target} |" in report
    counts = next(t for t in goal_targets if t.label == "replicas per alive broker")
    assert not counts.reached and counts.after == "0-6"      # 6, 0, 6, 0 -> one move: 6, 0, 5, 1
    assert plan.replica_moves == 1
    view = ReportView(plan, request, before, after)
    assert all(len(cls.targets(view)) <= 2 for cls in GOALS)


def test_follower_moves_before_leader_at_equal_bytes():
    # broker 1 (20 bytes, band 6-16) must give 10 bytes to broker 4: a-0's leader or b-0's
    # follower, both 10 bytes; the optimum moves the follower: 10 bytes, no leader change
    brokers = tuple(BrokerEntry(b) for b in (1, 2, 3, 4))
    parts = (PartitionEntry("a", 0, (1, 2), size_bytes=10), PartitionEntry("b", 0, (3, 1), size_bytes=10),
             PartitionEntry("c", 0, (2, 3), size_bytes=1), PartitionEntry("d", 0, (4, 2), size_bytes=1))
    plan = plan_of(ClusterSnapshot(brokers, parts), "replica", threshold=50)
    check_plan(plan)
    assert [(m.topic, m.source, m.destination) for m in plan.moves] == [("b", 1, 4)]
    assert plan.leader_changes == 0


def scoped_leader_cluster() -> ClusterSnapshot:
    """Broker 1 leads all six partitions; three are of topic ``keep``."""
    brokers = tuple(BrokerEntry(b) for b in (1, 2, 3))
    parts = (*(PartitionEntry("keep", p, (1, 2 + p % 2)) for p in range(3)),
             PartitionEntry("move", 0, (1, 2)), PartitionEntry("move", 1, (1, 3)), PartitionEntry("move", 2, (1, 2, 3)))
    return ClusterSnapshot(brokers, parts)


@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("mode", ["cluster", "leader", "replica", "repair"])
def test_topics_scope_keeps_out_of_scope_leaders_in_every_mode(mode, exact):
    # --topics move: keep-0..2 stay led by 1 (and count there); the optimum hands move-0..2 to
    # 2 and 3: 1 keeps 3 (its fixed ones), 2 and 3 lead the rest, 3 changes; the same through
    # the exact path
    snap = scoped_leader_cluster()
    request = request_of(mode, exact=exact, scope=Scope(topics="move"))
    plan = make_plan(snap, request)
    check_plan(plan, scope=Scope(topics="move"), data_moves=mode != "leader")
    kept = [p for p in plan.after.partitions if p.topic == "keep"]
    assert kept == [p for p in snap.partitions if p.topic == "keep"]
    if mode in ("cluster", "leader"):
        leaders = [p.replicas[0] for p in plan.after.partitions]
        assert leaders.count(1) == 3 and plan.leader_changes == 3
        assert sorted(leaders[3:]) == [2, 2, 3] or sorted(leaders[3:]) == [2, 3, 3]
        report = render_report(plan, request)
        assert "out-of-scope partitions changed (replicas or their order) | 0 | 0 | 0 |" in report


def test_repair_mode_honours_the_scope():
    # broker 9 is dead: t-0 is out of scope and keeps it; u-0 is repaired, not onto the
    # excluded broker 2 (the only one holding fewer replicas) but onto 3
    brokers = (BrokerEntry(1, "a"), BrokerEntry(2, "b"), BrokerEntry(3, "b"), BrokerEntry(9, "c", alive=False))
    parts = (PartitionEntry("t", 0, (9, 1)), PartitionEntry("u", 0, (9, 1)), PartitionEntry("v", 0, (3, 1)))
    snap = ClusterSnapshot(brokers, parts)
    scope = Scope(exclude_topics="t", exclude_brokers=(2,))
    plan = plan_of(snap, "repair", scope=scope)
    check_plan(plan, scope=scope)
    assert [p.replicas for p in plan.after.partitions] == [(9, 1), (3, 1), (3, 1)]
    assert [(m.topic, m.kind) for m in plan.moves] == [("u", MoveKind.REPAIR)]
    unscoped = plan_of(snap, "repair")
    assert [p.replicas for p in unscoped.after.partitions][:2] == [(2, 1), (2, 1)] or \
        unscoped.repairs == 2


def diversity_model(snap: ClusterSnapshot) -> tuple[Working, Model, RackDiversityGoal]:
    """The model of ``snap`` at threshold 10 with its goals prepared, and its rack diversity goal."""
    work, model, goals = model_of(snap, request_of("replica", threshold=10))
    goal = next(g for g in goals if isinstance(g, RackDiversityGoal))
    return work, model, goal


def test_diversity_repair_goes_where_the_byte_band_needs_bytes():
    # x-0 lacks rack b. Broker 3 holds the fewest replicas (one large), broker 4 many small
    # ones and few bytes (below the byte band): the repair lands on 4, whose missing bytes
    # must arrive anyway, not on 3, where they would be bytes the band does not ask for
    brokers = (BrokerEntry(1, rack="a"), BrokerEntry(2, rack="a"), BrokerEntry(3, rack="b"),
               BrokerEntry(4, rack="b"))
    parts = [PartitionEntry("x", 0, (1, 2), size_bytes=100)]
    parts += [PartitionEntry(f"big{k}", 0, (b,), size_bytes=400) for k, b in enumerate((1, 2, 3))]
    parts += [PartitionEntry(f"tiny{k}", 0, (4,), size_bytes=10) for k in range(8)]
    work, model, goal = diversity_model(ClusterSnapshot(brokers, tuple(parts)))
    assert model.sizes[4] < model.blo <= model.sizes[3] and model.counts[3] < model.counts[4]
    goal.optimize()
    assert [(s, d) for _, s, d, _ in work.moves] == [(2, 4)]


def test_diversity_repair_without_a_broker_below_the_band_takes_the_least_loaded():
    # every broker of rack b is in the byte band: the least loaded by count takes the repair
    brokers = (BrokerEntry(1, rack="a"), BrokerEntry(2, rack="a"), BrokerEntry(3, rack="b"),
               BrokerEntry(4, rack="b"))
    parts = [PartitionEntry("x", 0, (1, 2), size_bytes=10)]
    parts += [PartitionEntry(f"big{k}", 0, (b,), size_bytes=400) for k, b in enumerate((1, 2, 3, 4))]
    parts += [PartitionEntry(f"small{k}", 0, (4,), size_bytes=1) for k in range(3)]
    work, model, goal = diversity_model(ClusterSnapshot(brokers, tuple(parts)))
    assert all(model.blo <= model.sizes[b] <= model.bhi for b in (3, 4))
    goal.optimize()
    assert [(s, d) for _, s, d, _ in work.moves] == [(2, 3)]

@pytest.mark.parametrize(("hot", "source"), [(6, 1), (1, 2)])
def test_diversity_repair_moves_a_leader_only_off_a_broker_that_must_move_leaders_anyway(hot, source):
    # x-0 [1, 2] lacks rack b. Broker 1 leads it and ``hot`` partitions of 100 bytes alone. With
    # 6 it is 357 bytes above the band's top and follows nothing: only leader replicas can take
    # bytes off it, so its leader replica makes the repair (one move, no leader change the plan
    # could have spared). With 1 it is in the band: the follower on 2 moves, the leader stays
    brokers = (BrokerEntry(1, rack="a"), BrokerEntry(2, rack="a"), BrokerEntry(3, rack="b"),
               BrokerEntry(4, rack="b"))
    parts = [PartitionEntry("x", 0, (1, 2), size_bytes=10)]
    parts += [PartitionEntry(f"h{k}", 0, (1,), size_bytes=100) for k in range(hot)]
    parts += [PartitionEntry(f"n{b}", 0, (b,), size_bytes=100) for b in (2, 3, 4)]
    work, model, goal = diversity_model(ClusterSnapshot(brokers, tuple(parts)))
    assert (model.sizes[1] > model.upper(1)) is (hot == 6)
    goal.optimize()
    assert [(s, d in (3, 4)) for _, s, d, _ in work.moves] == [(source, True)]


def test_diversity_repair_moves_the_replica_whose_leaving_also_ends_the_deeper_lack():
    # x-0 [1, 3, 2] is all in dc1 and has two replicas in zone a (brokers 1 and 2). Broker 3 (zone
    # b) is the most loaded follower, but were it to leave for dc2, x-0 would still lack a zone and
    # need a second move; broker 2 (a follower in zone a) leaving fixes both levels in one move
    brokers = (BrokerEntry(1, rack="/dc1/za/r1"), BrokerEntry(2, rack="/dc1/za/r2"),
               BrokerEntry(3, rack="/dc1/zb/r3"), BrokerEntry(4, rack="/dc2/zc/r4"),
               BrokerEntry(5, rack="/dc2/zd/r5"))
    parts = [PartitionEntry("x", 0, (1, 3, 2), size_bytes=10)]
    parts += [PartitionEntry(f"load{k}", 0, (b,), size_bytes=50) for k, b in enumerate((3, 3, 3, 1, 2, 4, 5))]
    work, model, goal = diversity_model(ClusterSnapshot(brokers, tuple(parts)))
    assert model.load_key(3)[0] > max(model.load_key(1)[0], model.load_key(2)[0])
    goal.optimize()
    assert [(s, d in (4, 5)) for _, s, d, _ in work.moves] == [(2, True)]
    assert goal.distance() == 0



def test_diversity_repairs_give_a_topics_scarce_room_below_the_band_to_its_largest_partitions():
    # t-0..t-3 [1, 2] (10, 20, 30, 40 bytes) all lack rack b, whose broker 5 is empty and 252
    # bytes below the band: the repairs land there, but topic t's cap on 5 is 3. In the
    # partitions' order 5 took t-0..t-2 (60 bytes) and t-3 went to 3, bytes the band did not
    # ask for there; largest first, 5 takes t-1..t-3 (90 bytes) and only t-0 goes elsewhere
    brokers = (BrokerEntry(1, rack="a"), BrokerEntry(2, rack="a"), BrokerEntry(3, rack="b"),
               BrokerEntry(4, rack="b"), BrokerEntry(5, rack="b"))
    parts = [PartitionEntry("t", p, (1, 2), size_bytes=10 * (p + 1)) for p in range(4)]
    parts += [PartitionEntry(f"o{b}", 0, (b,), size_bytes=300) for b in (1, 2, 3, 4)]
    work, model, goal = diversity_model(ClusterSnapshot(brokers, tuple(parts)))
    spread = next(g for g in model.goals if isinstance(g, TopicSpreadGoal))
    assert spread.cap(model.topic[0], model.chain[5][-1]) == 3 and model.sizes[5] + 100 < model.blo
    goal.optimize()
    landed = sorted(work.snapshot.partitions[i].partition for i, _, d, _ in work.moves if d == 5)
    assert landed == [1, 2, 3] and model.sizes[5] == 90
    assert goal.distance() == 0 and len(work.moves) == 4


def test_diversity_repairs_keep_their_order_when_a_partition_has_another_group_to_go_to():
    # as above with a third rack c: t-0..t-3 lack both b and c, so their repairs need not take
    # broker 5's room, and they keep the partitions' order
    brokers = (BrokerEntry(1, rack="a"), BrokerEntry(2, rack="a"), BrokerEntry(3, rack="b"),
               BrokerEntry(4, rack="b"), BrokerEntry(5, rack="b"), BrokerEntry(6, rack="c"))
    parts = [PartitionEntry("t", p, (1, 2), size_bytes=10 * (p + 1)) for p in range(4)]
    parts += [PartitionEntry(f"o{b}", 0, (b,), size_bytes=300) for b in (1, 2, 3, 4, 6)]
    work, model, goal = diversity_model(ClusterSnapshot(brokers, tuple(parts)))
    spread = next(g for g in model.goals if isinstance(g, TopicSpreadGoal))
    assert model.sizes[5] < model.blo
    assert scarce_first(model, spread, model.tree.groups(work.eligible)) == list(work.order)


def test_topic_sheds_give_the_room_below_the_count_target_to_the_largest_first_sheds():
    # topic t (cap 2 per broker) is one above it on brokers 1 and 2; broker 7, below its count
    # target, may take one more of t. Broker 2's first shed (50 bytes) takes that room and
    # broker 1's (10 bytes) goes to a broker that needs no bytes; in the brokers' order it was
    # the 10 bytes on 7 and 50 bytes elsewhere
    brokers = tuple(BrokerEntry(b) for b in range(1, 8))
    parts = [PartitionEntry("t", p, (1 if p < 3 else 2,), size_bytes=s) for p, s in enumerate((10, 80, 90, 50, 80, 90))]
    parts.append(PartitionEntry("t", 6, (7,), size_bytes=5))
    parts += [PartitionEntry(f"o{b}{k}", 0, (b,), size_bytes=100) for b in (3, 4, 5, 6) for k in range(3)]
    work, model, _ = diversity_model(ClusterSnapshot(brokers, tuple(parts)))
    spread = next(g for g in model.goals if isinstance(g, TopicSpreadGoal))
    t = model.topic[0]
    assert [spread.over_cap(t, model.chain[b][-1]) for b in (1, 2, 7)] == [1, 1, -1]
    assert model.counts[7] < model.targets[7]
    spread.repair_topics()
    moved = {work.snapshot.partitions[i].partition: (s, d) for i, s, d, _ in work.moves}
    assert moved[3] == (2, 7) and moved[0][0] == 1 and moved[0][1] != 7 and len(moved) == 2
    assert spread.distance() == 0


def test_a_topic_shed_no_broker_has_room_for_is_a_swap():
    # every broker is at its capacity: broker 1's third replica of t (cap 2) can leave only
    # by a swap with a replica of another topic of the same size
    brokers = tuple(BrokerEntry(b, capacity_bytes=150) for b in range(1, 5))
    parts = [PartitionEntry("t", p, (1,), size_bytes=50) for p in range(3)]
    parts.append(PartitionEntry("t", 3, (2,), size_bytes=50))
    parts += [PartitionEntry(f"o{b}{k}", 0, (b,), size_bytes=50) for b in (2, 3, 4) for k in range(3 if b > 2 else 2)]
    work, model, _ = diversity_model(ClusterSnapshot(brokers, tuple(parts)))
    spread = next(g for g in model.goals if isinstance(g, TopicSpreadGoal))
    assert spread.over_cap(model.topic[0], model.chain[1][-1]) == 1
    spread.repair_topics()
    assert spread.distance() == 0 and len(work.moves) == 2
    (a, x, y, _), (b, y2, x2, _) = work.moves
    assert work.snapshot.partitions[a].topic == "t" and work.snapshot.partitions[b].topic != "t"
    assert (x, y) == (x2, y2) == (1, y) and all(model.sizes[k] <= 150 for k in range(1, 5))


@pytest.mark.parametrize(("hot", "fills_to_bottom"), [(1, True), (8, False)])
def test_receivers_fill_to_the_band_bottom_only_when_the_bytes_below_it_dominate(hot, fills_to_bottom):
    # broker 3 is empty; broker 1 holds ``hot`` partitions of 50 bytes. When the bytes missing below the band are at least
    # those above it, every byte a receiver takes beyond the band's bottom is a byte the bound
    # does not ask for: room() stops at the bottom; otherwise the surplus must land somewhere
    brokers = (BrokerEntry(1), BrokerEntry(2), BrokerEntry(3))
    parts = [PartitionEntry("h", p, (1,), size_bytes=50) for p in range(hot)]
    parts += [PartitionEntry("t", p, (1 + p % 2,), size_bytes=10) for p in range(10)]
    _, model, _ = diversity_model(ClusterSnapshot(brokers, tuple(parts)))
    below = sum(max(0, model.blo - s) for s in model.sizes.values())
    above = sum(max(0, s - model.bhi) for s in model.sizes.values())
    assert (below >= above) is fills_to_bottom
    top = model.blo if fills_to_bottom else model.bhi
    assert model.room(3) == top // max(1, model.targets[3])
