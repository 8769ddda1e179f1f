"""Property tests of the pure balance planner: every mode keeps the shared invariants
(``plan_invariants``), reaches its targets where they are reachable, and is deterministic and
idempotent. Small random clusters: dead and unknown brokers, placeholders, flat racks and rack
trees, partition sizes (exponential) and broker capacities. Every plan comes from the one entry
point, :func:`kafka_replica_assignor.planner.solving.planning.make_plan` (``tests/planning.py``)."""

from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.goals.replica_counts import band
from kafka_replica_assignor.planner.replica_repair import repair as assignors_repair
from kafka_replica_assignor.planner.report.outputs import reassignment_json
from kafka_replica_assignor.planner.request import PlanError, Scope
from kafka_replica_assignor.planner.solving.planning import make_plan
from tests.planning import plan_of, request_of
from tests.property.plan_invariants import check_plan

FAST = settings(max_examples=120)

RACKS = {
    "none": lambda i: None,
    "flat": lambda i: f"r{i % 3}",
    "uneven": lambda i: "r0" if i % 4 == 0 else f"r{1 + i % 2}",
    "tree": lambda i: f"/dc{i % 2}/rack{i % 3}",
}


@st.composite
def clusters(draw, *, dead: bool = True, racks: tuple[str, ...] = tuple(RACKS),
             sized: bool = False) -> ClusterSnapshot:
    n = draw(st.integers(1, 8))
    layout = RACKS[draw(st.sampled_from(racks))]
    alive = [True] * n
    if dead and n > 1:
        for i in draw(st.sets(st.integers(0, n - 1), max_size=2)):
            alive[i] = False
    brokers = tuple(BrokerEntry(i + 1, layout(i), alive[i]) for i in range(n))
    pool = [b.id for b in brokers] + ([n + 5, -1, -2] if dead else [])
    topics = draw(st.integers(1, 3))
    parts = []
    for t in range(topics):
        for p in range(draw(st.integers(0, 8))):
            rf = draw(st.integers(1, min(4, n)))
            reps = draw(st.lists(st.sampled_from(pool), min_size=rf, max_size=rf, unique=True))
            size = None
            if sized:   # roughly exponential: many small partitions, a few large ones
                size = draw(st.sampled_from([1, 2, 3, 5, 8, 13, 40, 100, 400]))
            parts.append(PartitionEntry(f"t{t}", p, tuple(reps), size_bytes=size))
    return ClusterSnapshot(brokers, tuple(parts))


@st.composite
def sized_clusters(draw) -> ClusterSnapshot:
    """Larger sized clusters without dead brokers; some brokers with a generous capacity."""
    n = draw(st.integers(2, 9))
    layout = RACKS[draw(st.sampled_from(tuple(RACKS)))]
    rnd = random.Random(draw(st.integers(0, 10**6)))
    parts = []
    for t in range(draw(st.integers(1, 4))):
        rf = rnd.randint(1, min(3, n))
        for p in range(rnd.randint(1, 30)):
            reps = tuple(rnd.sample(range(1, n + 1), rf))
            parts.append(PartitionEntry(f"t{t}", p, reps, size_bytes=1 + int(rnd.expovariate(1 / 50))))
    total = sum(p.size_bytes or 0 for p in parts for _ in p.replicas)
    capped = draw(st.sets(st.integers(1, n), max_size=2))
    brokers = tuple(BrokerEntry(i, layout(i - 1), capacity_bytes=2 * total // n + 400 if i in capped else None)
                    for i in range(1, n + 1))
    return ClusterSnapshot(brokers, tuple(parts))


def usable(snap: ClusterSnapshot) -> list[int]:
    return [b.id for b in snap.brokers if b.alive]


def fully_repairable(snap: ClusterSnapshot) -> bool:
    n = len(usable(snap))
    return all(len(p.replicas) <= n for p in snap.partitions)


def shuffled(snap: ClusterSnapshot, seed: int) -> ClusterSnapshot:
    """The same cluster listed in another order (partitions and brokers)."""
    rnd = random.Random(seed)
    parts, brokers = list(snap.partitions), list(snap.brokers)
    rnd.shuffle(parts)
    rnd.shuffle(brokers)
    return ClusterSnapshot(tuple(brokers), tuple(parts))


@FAST
@given(clusters())
def test_repair_keeps_invariants_and_is_idempotent(snap):
    plan = plan_of(snap, "repair")
    check_plan(plan)
    again = plan_of(plan.after, "repair")
    assert again.moves == ()
    assert all(m.kind == "repair" for m in plan.moves)
    # one algorithm: the CLI's entry point, keeping nothing, makes the same choices
    shared = assignors_repair(snap)
    before = {(p.topic, p.partition): p.replicas for p in snap.partitions}
    changed = {(p.topic, p.partition): p.replicas for p in plan.after.partitions
               if p.replicas != before[(p.topic, p.partition)]}
    assert dict(shared.assignments) == changed
    assert len(shared.replacements) == plan.repairs


@FAST
@given(clusters())
def test_leader_balance_only_reorders_and_is_idempotent(snap):
    plan = plan_of(snap, "leader")
    check_plan(plan, data_moves=False)
    assert plan_of(plan.after, "leader").moves == ()
    # never less even than before: sum of squares of leader counts does not grow
    ok = set(usable(snap))

    def squares(s):
        c = Counter(p.replicas[0] for p in s.partitions if p.replicas[0] in ok)
        return sum(v * v for v in c.values())

    if all(p.replicas[0] in ok for p in snap.partitions):
        assert squares(plan.after) <= squares(snap)


@FAST
@given(clusters(), st.sampled_from([0, 10, 25]))
def test_replica_balance_keeps_invariants(snap, threshold):
    plan = plan_of(snap, "replica", threshold=threshold)
    check_plan(plan)


def replica_band(snap: ClusterSnapshot, threshold: int) -> tuple[int, int]:
    total = sum(len(p.replicas) for p in snap.partitions)
    return band(total, len(usable(snap)), Fraction(threshold, 100))


@FAST
@given(clusters(racks=("none",)), st.sampled_from([0, 10, 30]))
def test_replica_balance_without_racks_reaches_the_band(snap, threshold):
    plan = plan_of(snap, "replica", threshold=threshold)
    if not usable(snap) or not fully_repairable(snap):
        check_plan(plan)
        return
    check_plan(plan, replica_band=replica_band(snap, threshold))


@FAST
@given(clusters(dead=False, racks=("none",)), st.sampled_from([0, 10, 30]))
def test_replica_balance_without_racks_makes_the_fewest_moves(snap, threshold):
    plan = plan_of(snap, "replica", threshold=threshold)
    lo, hi = replica_band(snap, threshold)
    check_plan(plan, replica_band=(lo, hi))
    counts = Counter(b for p in snap.partitions for b in p.replicas)
    over = sum(max(0, counts[b] - hi) for b in usable(snap))
    under = sum(max(0, lo - counts[b]) for b in usable(snap))
    assert plan.bound("replica_moves_tight_bound") == max(over, under)
    # the lower bound is reached, plus at most one move per replica above its topic's cap
    # (ceil(topic replicas / brokers) + 1 per broker): topic evenness comes before fewer moves
    n = len(usable(snap))
    per_topic = Counter((p.topic, b) for p in snap.partitions for b in p.replicas)
    total = Counter(p.topic for p in snap.partitions for _ in p.replicas)
    excess = sum(max(0, c - (-(-total[t] // n) + 1)) for (t, _), c in per_topic.items())
    assert max(over, under) <= plan.replica_moves <= max(over, under) + excess


@FAST
@given(clusters(dead=False, racks=("flat", "tree", "uneven")))
def test_replica_balance_with_racks_is_idempotent(snap):
    plan = plan_of(snap, "replica", threshold=0)
    check_plan(plan)
    assert plan_of(plan.after, "replica", threshold=0).moves == ()


@FAST
@given(clusters(), st.integers(0, 6), st.integers(0, 6))
def test_cluster_balance_respects_budgets(snap, max_moves, max_leader_changes):
    plan = plan_of(snap, "cluster", threshold=0, max_moves=max_moves, max_leader_changes=max_leader_changes)
    check_plan(plan, max_moves=max_moves, max_leader_changes=max_leader_changes)


@FAST
@given(clusters())
def test_cluster_balance_is_idempotent_and_deterministic(snap):
    plan = plan_of(snap, "cluster", threshold=0)
    check_plan(plan)
    assert plan_of(plan.after, "cluster", threshold=0).moves == ()
    other = plan_of(shuffled(snap, 7), "cluster", threshold=0)
    assert reassignment_json(other.changed()) == reassignment_json(plan.changed())
    assert other.moves == plan.moves and other.after == plan.after


@FAST
@given(sized_clusters(), st.sampled_from([0, 10, 25]))
def test_sized_replica_balance_reaches_every_objective_or_says_why(snap, threshold):
    plan = plan_of(snap, "replica", threshold=threshold)
    notes = " ".join(plan.notes)
    bands = {}
    if "replicas, outside the band" not in notes:
        bands["replica_band"] = (plan.bound("replicas_band_lo"), plan.bound("replicas_band_hi"))
    if "bytes, outside the band" not in notes:
        bands["byte_band"] = (plan.bound("bytes_band_lo"), plan.bound("bytes_band_hi"))
    # topic caps, capacity, the recorded lower bounds and diversity repaired are checked here
    check_plan(plan, topic_caps="above the topic's cap" not in notes,
               diversity="lack rack diversity" not in notes, **bands)
    assert plan_of(plan.after, "replica", threshold=threshold).moves == ()


@FAST
@given(sized_clusters())
def test_sized_cluster_balance_is_deterministic_and_idempotent(snap):
    plan = plan_of(snap, "cluster", threshold=10)
    check_plan(plan)
    assert plan_of(plan.after, "cluster", threshold=10).moves == ()
    again = plan_of(snap, "cluster", threshold=10)
    assert again.moves == plan.moves and again.after == plan.after
    other = plan_of(shuffled(snap, 3), "cluster", threshold=10)
    assert reassignment_json(other.changed()) == reassignment_json(plan.changed())
    assert other.moves == plan.moves and other.after == plan.after


@FAST
@given(clusters(sized=True), st.sampled_from([0, 10]))
def test_sized_balance_with_dead_brokers_keeps_invariants(snap, threshold):
    plan = plan_of(snap, "cluster", threshold=threshold)
    check_plan(plan)


ROLES = {"leader": ("demote",), "replica": ("exclude", "add", "remove"), "repair": ("exclude", "add", "remove"),
         "cluster": ("exclude", "add", "remove", "demote")}
"""The broker options each mode takes (the others it refuses)."""


@st.composite
def scopes(draw, snap: ClusterSnapshot, mode: str) -> Scope:
    """A scope ``mode`` takes: each broker in one role at most, at most two brokers a role;
    added and excluded brokers alive, at least one alive broker not removed."""
    alive = {b.id for b in snap.brokers if b.alive}
    topics = sorted({p.topic for p in snap.partitions})
    picked: dict[str, list[int]] = {role: [] for role in ("exclude", "add", "remove", "demote")}
    for b in sorted(b.id for b in snap.brokers):
        roles = [r for r in ROLES[mode] if b in alive or r not in ("exclude", "add")]
        role = draw(st.sampled_from([None, None, *roles]))
        if role is not None and len(picked[role]) < 2:
            picked[role].append(b)
    if alive <= set(picked["remove"]):     # a request removing every alive broker is refused
        picked["remove"] = [b for b in picked["remove"] if b not in alive] if alive else []
    return Scope(
        topics=draw(st.one_of(st.none(), st.sampled_from(topics))) if topics else None,
        exclude_topics=draw(st.one_of(st.none(), st.sampled_from(topics))) if topics else None,
        exclude_brokers=tuple(picked["exclude"]), add_brokers=tuple(picked["add"]),
        remove_brokers=tuple(picked["remove"]), demote_brokers=tuple(picked["demote"]))


def broken_promises(snap: ClusterSnapshot, scope: Scope, mode: str) -> list[str]:
    """The promises of the request no plan can keep, found independently of the planner: a
    partition that must stay on a removed broker (out of scope, or fewer brokers that may take
    a replica than replicas to repair), or that a demoted broker must keep leading (out of
    scope, or a replica on a broker that is not usable that the mode cannot repair)."""
    gone = set(scope.remove_brokers)
    ok = {b.id for b in snap.brokers if b.alive and b.id not in gone}
    takers = ok - set(scope.exclude_brokers)
    if scope.add_brokers:
        takers &= set(scope.add_brokers)
    frozen = scope.frozen(snap)
    demoted = set(scope.demote_brokers)
    out = []
    for i, p in enumerate(snap.partitions):
        lost = [b for b in p.replicas if b not in ok]
        repairable = i not in frozen and mode != "leader" and len(takers - set(p.replicas)) >= len(lost)
        if gone.intersection(p.replicas) and not repairable:
            out.append(f"{p.topic}-{p.partition} stays on a removed broker")
        if p.replicas[0] in demoted and any(b in ok and b not in demoted for b in p.replicas) and (
                i in frozen or (lost and not repairable)):
            out.append(f"{p.topic}-{p.partition} stays led by a demoted broker")
    return out


@FAST
@given(st.data(), st.sampled_from(["replica", "cluster", "leader", "repair"]))
def test_every_mode_keeps_its_scope_and_is_deterministic(data, mode):
    keeps_its_scope(data, mode, exact=False)


@settings(max_examples=40, deadline=None)
@given(st.data(), st.sampled_from(["replica", "cluster"]))
def test_every_mode_keeps_its_scope_on_the_exact_path(data, mode):
    keeps_its_scope(data, mode, exact=True)


def keeps_its_scope(data: st.DataObject, mode: str, *, exact: bool) -> None:
    """The scope's promises hold on the path, or the plan is refused exactly when an
    independent check finds one out of reach; the same request twice gives the same plan; its
    result planned again moves nothing."""
    snap = data.draw(clusters())
    scope = data.draw(scopes(snap, mode))
    request = request_of(mode, scope=scope, exact=exact)
    broken = broken_promises(snap, scope, mode)
    try:
        plan = make_plan(snap, request)
    except PlanError:       # a promise of the request out of reach: refused, not planned around
        assert broken, "PlanError although every promise of the request can be kept"
        return
    assert not broken, f"a plan although {broken[0]}"
    check_plan(plan, scope=scope, data_moves=mode != "leader")
    assert make_plan(snap, request) == plan
    assert make_plan(plan.after, request).moves == ()
