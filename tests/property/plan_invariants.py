"""The invariants every balance plan keeps, as one reusable checker.

``plan_violations(plan, ...)`` returns a list of human-readable violations (empty when the plan
is sound); ``check_plan`` asserts there are none. Checked:

- the moves replay: applying ``plan.moves`` to ``plan.before`` gives exactly ``plan.after``;
- the same partitions, each with its replication factor;
- no broker twice in a partition;
- every changed partition lives on alive, non-forgotten brokers; a partition that still has a
  replica elsewhere is unchanged and either could not be repaired (fewer usable brokers than its
  replication factor) or the move budget ran out;
- rack diversity of the usable replicas never drops, at any level of the rack tree;
- budgets: replica moves <= ``max_moves``; leader changes (not counting partitions whose leader
  was not usable) <= ``max_leader_changes``;
- ``data_moves=False`` (leader balance): every replica set is unchanged;
- optional bands: every usable broker's replica / preferred-leader count inside ``[lo, hi]``;
  ``byte_band``: every usable broker's bytes inside ``[lo, hi]``;
- capacity: no usable broker above its ``capacity_bytes`` after the plan;
- rack diversity repaired (``diversity=True``): every fully usable partition spans
  ``min(replicas, groups)`` groups at every level after the plan;
- topic caps (``topic_caps=True``): every (topic, node of the rack tree) is within the cap of
  :mod:`kafka_replica_assignor.planner.solving.replica_balance`, recomputed here from the result, or holds no more replicas of
  the topic than before;
- lower bounds: without a move budget, the plan's replica moves and bytes moved are at least
  its recorded bounds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
from kafka_replica_assignor.planner.plan import MoveKind, Plan, Scope
from kafka_replica_assignor.planner.racks import RackTree


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


def topic_counts(snapshot: ClusterSnapshot, usable: set[int], tree: RackTree) -> Counter[tuple[str, Node]]:
    """Replicas per (topic, node): node ``("b", id)`` a broker, ``("r", key)`` a rack node,
    ``("root", 0)`` the whole cluster; fully usable partitions only."""
    out: Counter[tuple[str, Node]] = Counter()
    for p in snapshot.partitions:
        if not usable.issuperset(p.replicas):
            continue
        for b in p.replicas:
            out[(p.topic, ("root", 0))] += 1
            out[(p.topic, ("b", b))] += 1
            for key in tree.keys.get(b, ()):
                out[(p.topic, ("r", key))] += 1
    return out


def topic_cap_violations(plan: Plan, usable: set[int], tree: RackTree) -> list[str]:
    """The topic cap of :mod:`kafka_replica_assignor.planner.solving.replica_balance`, recomputed from the result."""
    after = topic_counts(plan.after, usable, tree)
    before = topic_counts(plan.before, usable, tree)
    total = Counter(p.topic for p in plan.after.partitions for _ in p.replicas)
    groups = tree.groups(usable)
    spanning: Counter[tuple[str, int]] = Counter()
    for p in plan.after.partitions:
        if usable.issuperset(p.replicas):
            for level, g in enumerate(groups, 1):
                if len(p.replicas) >= g:
                    spanning[(p.topic, level)] += 1
    members: Counter[Node] = Counter()
    parents: dict[Node, Node] = {}
    levels: dict[Node, int] = {}
    for b in usable:
        chain: list[Node] = [("root", 0), *(("r", k) for k in tree.keys.get(b, ())), ("b", b)]
        for level, node in enumerate(chain):
            members[node] += 1
            if level:
                parents[node] = chain[level - 1]
                levels[node] = level
    errors = []
    for (topic, node), count in sorted(after.items()):
        if node[0] == "root":
            continue
        m, parent = members[node], parents[node]
        cap = max(-(-total[topic] * m // members[("root", 0)]),
                  -(-after[(topic, parent)] * m // members[parent]),
                  spanning[(topic, levels[node])] if node[0] == "r" else 0) + 1
        if count > cap and count > before[(topic, node)]:
            errors.append(f"topic {topic}: {count} replicas on {node}, cap {cap}, "
                          f"{before[(topic, node)]} before")
    return errors


def plan_violations(plan: Plan, *, forgotten: Iterable[int] = (), max_moves: int | None = None,
                    max_leader_changes: int | None = None, data_moves: bool = True,
                    replica_band: tuple[int, int] | None = None,
                    leader_band: tuple[int, int] | None = None,
                    byte_band: tuple[int, int] | None = None, diversity: bool = False,
                    topic_caps: bool = False, scope: Scope | None = None) -> list[str]:
    before, after = plan.before, plan.after
    if scope is not None:       # out-of-scope partitions are left as they are, repairs included
        general = plan_violations(
            plan, forgotten=forgotten, max_moves=max_moves, max_leader_changes=max_leader_changes,
            data_moves=data_moves, replica_band=replica_band, leader_band=leader_band, byte_band=byte_band,
            diversity=diversity, topic_caps=topic_caps)
        kept = tuple(f"{before.partitions[i].topic}-{before.partitions[i].partition}:"
                     for i in scope.frozen(before))
        if scope.exclude_brokers:   # fewer brokers may take a repair than the general check counts
            general = [e for e in general if "though it could be repaired" not in e]
        return _scope_violations(plan, scope, forgotten) + [e for e in general if not e.startswith(kept)]
    forgotten = set(forgotten)
    usable = {b.id for b in before.brokers if b.alive and b.id not in forgotten}
    tree = RackTree.of({b.id: b.rack for b in before.brokers if b.id in usable})
    errors = _replay(plan)
    old = {(p.topic, p.partition): p.replicas for p in before.partitions}
    new = {(p.topic, p.partition): p.replicas for p in after.partitions}
    if set(old) != set(new):
        errors.append("the set of partitions changed")
        return errors
    moves = 0
    leader_changes = 0
    lacking = 0                     # partitions whose racks could span more groups after
    for key in sorted(old):
        a, b = old[key], new[key]
        name = f"{key[0]}-{key[1]}"
        if len(a) != len(b):
            errors.append(f"{name}: replication factor {len(a)} -> {len(b)}")
        if len(set(b)) != len(b):
            errors.append(f"{name}: a broker twice in {list(b)}")
        unusable = [x for x in b if x not in usable]
        if unusable:
            if a != b:
                errors.append(f"{name}: changed but still on unusable brokers {unusable}: {list(b)}")
            elif data_moves and len(usable) >= len(a) and max_moves is None:
                errors.append(f"{name}: left on unusable brokers {unusable} though it could be repaired")
        if not data_moves and set(a) != set(b):
            errors.append(f"{name}: replicas moved {list(a)} -> {list(b)} in a leader-only plan")
        moves += len(set(b) - set(a))
        if a[0] in usable and a[0] != b[0]:
            leader_changes += 1
        da = tree.diversity(x for x in a if x in usable)
        db = tree.diversity(x for x in b if x in usable)
        for level, (x, y) in enumerate(zip(da, db, strict=True), 1):
            if y < x:
                errors.append(f"{name}: rack diversity at level {level} dropped {x} -> {y} "
                              f"({list(a)} -> {list(b)})")
        if usable.issuperset(b) and any(have < min(len(b), most) for have, most
                                        in zip(db, tree.groups(usable), strict=True)):
            lacking += 1
        if diversity and usable.issuperset(b):
            for level, (have, most) in enumerate(zip(db, tree.groups(usable), strict=True), 1):
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
    errors += _bound_violations(plan, usable, old, new, moves, sizes, diverse=not lacking)
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
    return errors


def _scope_violations(plan: Plan, scope: Scope, forgotten: Iterable[int]) -> list[str]:
    """Out-of-scope partitions keep their replica lists (order included: the scope ranks before
    demotion and leader balance), excluded brokers neither give nor take, only added brokers take
    (repairs aside), demoted brokers lead nothing another replica can."""
    errors = []
    frozen = scope.frozen(plan.before)
    usable = {b.id for b in plan.before.brokers if b.alive and b.id not in set(forgotten)}
    for i, (a, b) in enumerate(zip(plan.before.partitions, plan.after.partitions, strict=True)):
        name = f"{a.topic}-{a.partition}"
        if i in frozen and a.replicas != b.replicas:    # no move, no repair, no leader change
            errors.append(f"{name} is out of scope but changed: {list(a.replicas)} -> {list(b.replicas)}")
        for x in set(scope.exclude_brokers) & usable:
            if (x in a.replicas) != (x in b.replicas):
                errors.append(f"{name}: excluded broker {x} gave or took a replica")
        came = set(b.replicas) - set(a.replicas)
        if scope.add_brokers and usable.issuperset(a.replicas) and not came <= set(scope.add_brokers):
            errors.append(f"{name}: replicas moved onto {sorted(came - set(scope.add_brokers))}, not added brokers")
        if i not in frozen and b.replicas and b.replicas[0] in scope.demote_brokers and usable.issuperset(b.replicas) \
                and any(x not in scope.demote_brokers for x in b.replicas):
            errors.append(f"{name} is led by demoted broker {b.replicas[0]}")
    return errors


def _bound_violations(plan: Plan, usable: set[int], old: dict[tuple[str, int], tuple[int, ...]],
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
    errors += _lp_bound_violations(plan, usable, counts, sizes, moved_bytes, diverse=diverse)
    return errors


def _lp_bound_violations(plan: Plan, usable: set[int], counts: Counter[int], sizes: Counter[int],
                         moved_bytes: int, *, diverse: bool) -> list[str]:
    """The linear-program bound (planner/solving/bound.py) holds for every plan meeting the
    targets it kept (its label names them)."""
    def within(values: Counter[int], lo_name: str, hi_name: str) -> bool:
        lo, hi = plan.bound(lo_name), plan.bound(hi_name)
        return lo is not None and hi is not None and all(lo <= values[x] <= hi for x in usable)

    counts_ok = within(counts, "replicas_band_lo", "replicas_band_hi")
    band_ok = within(sizes, "bytes_band_lo", "bytes_band_hi")
    topics_ok = _within_broker_topic_caps(plan, usable)
    meets = {"bytes_moved_lp_bound": True, "bytes_moved_lp_bound_diversity": diverse,
             "bytes_moved_lp_bound_topics_diversity": diverse and topics_ok,
             "bytes_moved_lp_bound_counts_diversity": diverse and counts_ok,
             "bytes_moved_lp_bound_counts_topics_diversity": diverse and counts_ok and topics_ok,
             "bytes_moved_lp_bound_band_counts_diversity": diverse and counts_ok and band_ok,
             "bytes_moved_lp_bound_band_counts_topics_diversity": diverse and counts_ok and band_ok and topics_ok}
    return [f"{label} is {plan.bound(label)} but the plan moves {moved_bytes} bytes"
            for label, met in meets.items() if met and (plan.bound(label) or 0) > moved_bytes]


def _within_broker_topic_caps(plan: Plan, usable: set[int]) -> bool:
    """The report's topic target after the plan: every usable broker holds at most
    ``max(ceil(R / B), ceil(R_rack / B_rack)) + 1`` replicas of each topic (``R`` the topic's
    replicas, ``R_rack`` those on usable brokers of the broker's rack)."""
    tree = RackTree.of({b.id: b.rack for b in plan.after.brokers if b.id in usable})
    leaf = {b: tree.leaf(b) for b in usable}
    total: Counter[str] = Counter()
    on: Counter[tuple[str, int]] = Counter()
    in_rack: Counter[tuple[str, int | None]] = Counter()
    for p in plan.after.partitions:
        total[p.topic] += len(p.replicas)
        for b in p.replicas:
            if b in usable:
                on[(p.topic, b)] += 1
                in_rack[(p.topic, leaf[b])] += 1
    members = Counter(leaf.values())
    for (t, b), count in on.items():
        rack = -(-in_rack[(t, leaf[b])] // members[leaf[b]]) if leaf[b] is not None else 0
        if count > max(-(-total[t] // len(usable)), rack) + 1:
            return False
    return True


def check_plan(plan: Plan, **kwargs: Any) -> None:
    errors = plan_violations(plan, **kwargs)
    assert not errors, "plan violates invariants:\n" + "\n".join(errors[:20])
