"""The invariants every balance plan keeps, as one reusable checker.

``plan_violations(plan, ...)`` returns a list of human-readable violations (empty when the plan
is sound); ``check_plan`` asserts there are none. The checker is independent of the planner's
goals: every figure is recomputed here from the plan's snapshots. Checked:

- the moves replay: applying ``plan.moves`` to ``plan.before`` gives exactly ``plan.after``;
- the same partitions, each with its replication factor;
- no broker twice in a partition;
- every changed partition lives on alive, non-removed brokers; a partition that still has a
  replica elsewhere is unchanged and either could not be repaired (fewer brokers that may take
  a replica than replicas to place) or the move budget ran out;
- removed brokers (``removed``, the old ``forgotten``, and ``scope.remove_brokers``): no replica
  is left on them;
- rack diversity of the usable replicas never drops, at any level of the rack tree;
- budgets: replica moves <= ``max_moves``; leader changes (not counting partitions whose leader
  was not usable, nor those a demoted broker had to give up) <= ``max_leader_changes``;
- ``data_moves=False`` (leader balance): every replica set is unchanged;
- optional bands: every usable broker's replica / preferred-leader count inside ``[lo, hi]``;
  ``byte_band``: every usable broker's bytes inside ``[lo, hi]``;
- capacity: no usable broker above its ``capacity_bytes`` after the plan;
- rack diversity repaired (``diversity=True``): every fully usable partition spans
  ``min(replicas, groups)`` groups at every level after the plan;
- topic caps (``topic_caps=True``): every (topic, node of the rack tree) is within its static
  cap (:func:`static_topic_caps`, recomputed here from the cluster), or holds no more replicas of the
  topic than before;
- the scope (``scope``): out-of-scope partitions keep their lists, order included; excluded
  brokers neither give nor take; with added brokers, no replica arrives on any other broker,
  repairs included; no demoted broker is first in a partition with an alive, non-demoted
  replica;
- lower bounds: without a move budget, the plan's replica moves and bytes moved are at least
  its recorded bounds, and the LP bound ``bytes_moved_lp_bound:<targets>`` holds for a plan
  meeting the targets it names.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
from kafka_replica_assignor.planner.plan import MoveKind, Plan
from kafka_replica_assignor.planner.racks import RackTree
from kafka_replica_assignor.planner.request import Scope


def _replay(plan: Plan) -> list[str]:
    lists = {(p.topic, p.partition): list(p.replicas) for p in plan.before.partitions}
    errors = []
    for n, m in enumerate(plan.moves):
        reps = lists.get((m.topic, m.partition))
        where = f"move {n} ({m.kind} {m.topic}-{m.partition} {m.source}->{m.destination})"
        if reps is None:
            errors.append(f"{where}: unknown partition")
            continue
        if m.kind is MoveKind.LEADER:
            if not reps or reps[0] != m.source or m.destination not in reps:
                errors.append(f"{where}: does not match replicas {reps}")
                continue
            reps.remove(m.destination)
            reps.insert(0, m.destination)
        else:
            if m.source not in reps or m.destination in reps:
                errors.append(f"{where}: does not match replicas {reps}")
                continue
            reps[reps.index(m.source)] = m.destination
    after = {(p.topic, p.partition): list(p.replicas) for p in plan.after.partitions}
    if lists != after:
        bad = sorted(k for k in after if after[k] != lists.get(k))[:5]
        errors.append(f"replaying the moves does not give the plan's result, e.g. {bad}")
    return errors


Node = tuple[str, int]


def _tree(snapshot: ClusterSnapshot) -> RackTree:
    """The cluster's rack tree (every broker of the snapshot, as the planner reads racks)."""
    return RackTree.of({b.id: b.rack for b in snapshot.brokers})


def _chain(tree: RackTree, b: int) -> list[Node]:
    """The nodes from the root down to broker ``b``: ``("root", 0)``, ``("r", key)`` per level,
    ``("b", b)``."""
    return [("root", 0), *(("r", k) for k in tree.keys.get(b, ())), ("b", b)]


def topic_counts(snapshot: ClusterSnapshot, usable: set[int], tree: RackTree) -> Counter[tuple[str, Node]]:
    """Replicas per (topic, node): node ``("b", id)`` a broker, ``("r", key)`` a rack node,
    ``("root", 0)`` the whole cluster; fully usable partitions only."""
    out: Counter[tuple[str, Node]] = Counter()
    for p in snapshot.partitions:
        if not usable.issuperset(p.replicas):
            continue
        for b in p.replicas:
            for node in _chain(tree, b):
                out[(p.topic, node)] += 1
    return out


def static_topic_caps(snapshot: ClusterSnapshot, usable: set[int], tree: RackTree) -> dict[tuple[str, Node], int]:
    """The static topic caps of ``planner/goals/topic_spread.py``'s doc, recomputed here:
    ``cap(t, g) = E(t, g) + 1``; ``E(t, root) = R_t`` (every replica of the topic); the shares of
    a node's children split the node's share in proportion to their usable brokers, each child
    within ``[low, high]`` (``low``: for a rack, the topic's partitions that can be repaired with
    at least as many replicas as there are groups at its level; ``high``: the most its
    partitions that can be repaired may put in one group with full diversity, one each when
    ``r <= G`` and ``r - G + 1`` else, a broker being a group of the deepest level), a child held
    at a bound leaving the rest to the others, each share rounded up. Keyed by (topic, node) for
    every node with a usable broker under it."""
    members: Counter[Node] = Counter()
    parent: dict[Node, Node] = {}
    level: dict[Node, int] = {}
    for b in sorted(usable):
        chain = _chain(tree, b)
        for depth, node in enumerate(chain):
            members[node] += 1
            level[node] = depth
            if depth:
                parent[node] = chain[depth - 1]
    groups = [*tree.groups(usable), len(usable)]
    total: Counter[str] = Counter()
    low: Counter[tuple[str, int]] = Counter()
    high: Counter[tuple[str, int]] = Counter()
    for p in snapshot.partitions:
        rf = len(p.replicas)
        total[p.topic] += rf
        if rf <= len(usable):
            for depth, g in enumerate(groups, 1):
                if rf >= g and depth <= tree.depth:
                    low[(p.topic, depth)] += 1
                high[(p.topic, depth)] += 1 if rf <= g else rf - g + 1
    children: dict[Node, list[Node]] = {}
    for node, up in parent.items():
        children.setdefault(up, []).append(node)
    top_down = sorted(members, key=lambda node: (level[node], node))
    caps: dict[tuple[str, Node], int] = {}
    for topic in sorted(total):
        share: dict[Node, int] = {("root", 0): total[topic]}
        for up in top_down:
            kids = children.get(up, [])
            if kids:
                lv = level[kids[0]]
                share.update(_water_fill(share[up], {c: members[c] for c in kids},
                                         low[(topic, lv)] if lv <= tree.depth else 0, high[(topic, lv)]))
        for node, value in share.items():
            caps[(topic, node)] = value + 1
    return caps


def _water_fill(total: int, weight: dict[Node, int], low: int, high: int) -> dict[Node, int]:
    """``total`` over the nodes of ``weight`` in proportion, rounded up, each in ``[low, high]``:
    nodes pushed outside are held at the bound, and the rest is shared again among the others."""
    held: dict[Node, int] = {}
    while True:
        others = sorted(n for n in weight if n not in held)
        mass = sum(weight[n] for n in others)
        if not others or not mass:
            return held
        rest = max(0, total - sum(held.values()))
        even = {n: -(-rest * weight[n] // mass) for n in others}
        outside = {n: (low if v < low else high) for n, v in even.items() if v < low or v > high}
        if not outside:
            return {**held, **even}
        held.update(outside)


def topic_cap_violations(plan: Plan, usable: set[int], tree: RackTree) -> list[str]:
    """Every (topic, node) above its static cap (:func:`static_topic_caps`) that holds more of the
    topic than before the plan."""
    after = topic_counts(plan.after, usable, tree)
    before = topic_counts(plan.before, usable, tree)
    caps = static_topic_caps(plan.before, usable, tree)
    errors = []
    for (topic, node), count in sorted(after.items()):
        if node[0] == "root":
            continue
        cap = caps[(topic, node)]
        if count > cap and count > before[(topic, node)]:
            errors.append(f"topic {topic}: {count} replicas on {node}, cap {cap}, "
                          f"{before[(topic, node)]} before")
    return errors


def _takers(usable: set[int], scope: Scope) -> set[int]:
    """The brokers that may take a replica: usable, not excluded, added ones only when given."""
    takers = usable - set(scope.exclude_brokers)
    if scope.add_brokers:
        takers &= set(scope.add_brokers)
    return takers


def plan_violations(plan: Plan, *, removed: Iterable[int] = (), forgotten: Iterable[int] = (),
                    max_moves: int | None = None, max_leader_changes: int | None = None, data_moves: bool = True,
                    replica_band: tuple[int, int] | None = None,
                    leader_band: tuple[int, int] | None = None,
                    byte_band: tuple[int, int] | None = None, diversity: bool = False,
                    topic_caps: bool = False, scope: Scope | None = None) -> list[str]:
    """The violations of ``plan`` (module doc). ``removed`` (or ``forgotten``, its old name) and
    ``scope.remove_brokers`` name the removed brokers."""
    before, after = plan.before, plan.after
    scope = scope or Scope()
    gone = set(removed) | set(forgotten) | set(scope.remove_brokers)
    usable = {b.id for b in before.brokers if b.alive and b.id not in gone}
    tree = _tree(before)
    takers = _takers(usable, scope)
    frozen = {(before.partitions[i].topic, before.partitions[i].partition) for i in scope.frozen(before)}
    demoted = set(scope.demote_brokers)
    errors = _replay(plan)
    old = {(p.topic, p.partition): p.replicas for p in before.partitions}
    new = {(p.topic, p.partition): p.replicas for p in after.partitions}
    if set(old) != set(new):
        errors.append("the set of partitions changed")
        return errors
    moves = 0
    leader_changes = 0
    lacking = 0                     # partitions whose racks could span more groups after
    groups = tree.groups(usable)
    for key in sorted(old):
        a, b = old[key], new[key]
        name = f"{key[0]}-{key[1]}"
        if len(a) != len(b):
            errors.append(f"{name}: replication factor {len(a)} -> {len(b)}")
        if len(set(b)) != len(b):
            errors.append(f"{name}: a broker twice in {list(b)}")
        left = sorted(gone.intersection(b))
        if left:
            errors.append(f"{name}: replicas left on removed brokers {left}: {list(b)}")
        unusable = [x for x in b if x not in usable]
        if unusable and not left:
            lost = [x for x in a if x not in usable]
            free = takers - {x for x in a if x in usable}
            if a != b:
                errors.append(f"{name}: changed but still on unusable brokers {unusable}: {list(b)}")
            elif data_moves and key not in frozen and len(free) >= len(lost) and max_moves is None:
                errors.append(f"{name}: left on unusable brokers {unusable} though it could be repaired")
        if not data_moves and set(a) != set(b):
            errors.append(f"{name}: replicas moved {list(a)} -> {list(b)} in a leader-only plan")
        moves += len(set(b) - set(a))
        forced = a[0] in demoted and any(x in usable and x not in demoted for x in b)
        if a[0] in usable and a[0] != b[0] and not forced:
            leader_changes += 1
        da = tree.diversity(x for x in a if x in usable)
        db = tree.diversity(x for x in b if x in usable)
        for level, (x, y) in enumerate(zip(da, db, strict=True), 1):
            if y < x:
                errors.append(f"{name}: rack diversity at level {level} dropped {x} -> {y} "
                              f"({list(a)} -> {list(b)})")
        if usable.issuperset(b) and any(have < min(len(b), most) for have, most in zip(db, groups, strict=True)):
            lacking += 1
        if diversity and usable.issuperset(b) and key not in frozen:
            for level, (have, most) in enumerate(zip(db, groups, strict=True), 1):
                if have < min(len(b), most):
                    errors.append(f"{name}: rack diversity at level {level} is {have}, could be "
                                  f"{min(len(b), most)} ({list(b)})")
    if max_moves is not None and moves > max_moves:
        errors.append(f"{moves} replica moves, budget {max_moves}")
    if max_leader_changes is not None and leader_changes > max_leader_changes:
        errors.append(f"{leader_changes} leader changes, budget {max_leader_changes}")
    if moves != plan.replica_moves:
        errors.append(f"plan.replica_moves is {plan.replica_moves}, the snapshots differ by {moves}")
    sizes: Counter[int] = Counter()
    for p in after.partitions:
        for x in p.replicas:
            sizes[x] += p.size_bytes or 0
    for broker in after.brokers:
        limit = broker.capacity_bytes
        if broker.id in usable and limit is not None and sizes[broker.id] > limit:
            errors.append(f"broker {broker.id} holds {sizes[broker.id]} bytes, capacity {limit}")
    if byte_band is not None:
        lo, hi = byte_band
        outside = {x: sizes[x] for x in sorted(usable) if not lo <= sizes[x] <= hi}
        if outside:
            errors.append(f"bytes per broker outside [{lo}, {hi}]: {outside}")
    if topic_caps:
        errors += topic_cap_violations(plan, usable, tree)
    errors += _bound_violations(plan, usable, tree, old, new, moves, sizes, diverse=not lacking)
    if replica_band is not None or leader_band is not None:
        reps = Counter(x for p in after.partitions for x in p.replicas)
        leads = Counter(p.replicas[0] for p in after.partitions)
        for label, band, counts in (("replicas", replica_band, reps), ("leaders", leader_band, leads)):
            if band is None:
                continue
            lo, hi = band
            outside = {x: counts[x] for x in sorted(usable) if not lo <= counts[x] <= hi}
            if outside:
                errors.append(f"{label} per broker outside [{lo}, {hi}]: {outside}")
    return errors + _scope_violations(plan, scope, usable)


def _scope_violations(plan: Plan, scope: Scope, usable: set[int]) -> list[str]:
    """Out-of-scope partitions keep their replica lists (order included: the scope ranks before
    demotion and leader balance), excluded brokers neither give nor take, only added brokers
    take (repairs included), demoted brokers lead nothing another alive replica can."""
    errors = []
    frozen = scope.frozen(plan.before)
    added = set(scope.add_brokers)
    demoted = set(scope.demote_brokers)
    for i, (a, b) in enumerate(zip(plan.before.partitions, plan.after.partitions, strict=True)):
        name = f"{a.topic}-{a.partition}"
        if i in frozen and a.replicas != b.replicas:    # no move, no repair, no leader change
            errors.append(f"{name} is out of scope but changed: {list(a.replicas)} -> {list(b.replicas)}")
        for x in sorted(set(scope.exclude_brokers) & usable):
            if (x in a.replicas) != (x in b.replicas):
                errors.append(f"{name}: excluded broker {x} gave or took a replica")
        came = set(b.replicas) - set(a.replicas)
        if added and not came <= added:
            errors.append(f"{name}: replicas moved onto {sorted(came - added)}, not added brokers "
                          f"({list(a.replicas)} -> {list(b.replicas)})")
        if b.replicas and b.replicas[0] in demoted and any(x in usable and x not in demoted for x in b.replicas):
            errors.append(f"{name} is led by demoted broker {b.replicas[0]} ({list(b.replicas)})")
    return errors


def _bound_violations(plan: Plan, usable: set[int], tree: RackTree, old: dict[tuple[str, int], tuple[int, ...]],
                      new: dict[tuple[str, int], tuple[int, ...]], moves: int,
                      sizes: Counter[int], *, diverse: bool) -> list[str]:
    """A plan that reaches its own band (and repairs everything) does at least its bounds;
    one that leaves no partition lacking rack diversity, at least its diversity bounds."""
    if any(not usable.issuperset(r) for r in new.values()):
        return []
    errors = []
    counts = Counter(x for r in new.values() for x in r)
    size_of = {(p.topic, p.partition): p.size_bytes or 0 for p in plan.before.partitions}
    moved_bytes = sum(size_of[k] * len(set(new[k]) - set(old[k])) for k in old)
    if diverse:
        for label, value in (("diversity_repairs_needed", moves), ("diversity_bytes_needed", moved_bytes)):
            bound = plan.bound(label)
            if bound is not None and value < bound:
                errors.append(f"{label} is {bound} but the plan does {value}")
    for band, values, checks in (
        (("replicas_band_lo", "replicas_band_hi"), counts,
         (("replica_moves_lower_bound", moves), ("replica_moves_tight_bound", moves))),
        (("bytes_band_lo", "bytes_band_hi"), sizes, (("bytes_moved_lower_bound", moved_bytes),)),
    ):
        lo, hi = plan.bound(band[0]), plan.bound(band[1])
        if lo is None or hi is None or any(not lo <= values[x] <= hi for x in usable):
            continue
        for label, value in checks:
            bound = plan.bound(label)
            if bound is not None and value < bound:
                errors.append(f"{label} is {bound} but the plan does {value}")
    errors += _lp_bound_violations(plan, usable, tree, counts, sizes, moved_bytes, diverse=diverse)
    return errors


LP_BOUND = "bytes_moved_lp_bound"
"""The LP bound's key; ``bytes_moved_lp_bound:diversity,topics`` names the targets it kept."""


def _lp_bound_violations(plan: Plan, usable: set[int], tree: RackTree, counts: Counter[int], sizes: Counter[int],
                         moved_bytes: int, *, diverse: bool) -> list[str]:
    """The linear-program bound (planner/solving/bound.py) holds for every plan meeting the
    targets it kept (its key names them, in the goals' order)."""
    def within(values: Counter[int], lo_name: str, hi_name: str) -> bool:
        lo, hi = plan.bound(lo_name), plan.bound(hi_name)
        return lo is not None and hi is not None and all(lo <= values[x] <= hi for x in usable)

    meets = {"diversity": diverse, "topics": _within_broker_topic_caps(plan, usable, tree),
             "counts": within(counts, "replicas_band_lo", "replicas_band_hi"),
             "bytes": within(sizes, "bytes_band_lo", "bytes_band_hi")}
    errors = []
    for label, bound in plan.bounds:
        if label != LP_BOUND and not label.startswith(LP_BOUND + ":"):
            continue
        kept = [k for k in label.partition(":")[2].split(",") if k]
        unknown = [k for k in kept if k not in meets]
        if unknown or label == LP_BOUND:
            errors.append(f"{label}: not a key of the LP bound with its kept targets")
        elif all(meets[k] for k in kept) and bound > moved_bytes:
            errors.append(f"{label} is {bound} but the plan moves {moved_bytes} bytes")
    return errors


def _within_broker_topic_caps(plan: Plan, usable: set[int], tree: RackTree) -> bool:
    """The bound's topic target after the plan: every usable broker holds at most its static cap
    (:func:`static_topic_caps`) of replicas of each topic."""
    caps = static_topic_caps(plan.before, usable, tree)
    on = Counter((p.topic, b) for p in plan.after.partitions for b in p.replicas if b in usable)
    return all(count <= caps[(t, ("b", b))] for (t, b), count in on.items())


def check_plan(plan: Plan, **kwargs: Any) -> None:
    errors = plan_violations(plan, **kwargs)
    assert not errors, "plan violates invariants:\n" + "\n".join(errors[:20])
