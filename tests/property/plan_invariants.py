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
- optional bands: every usable broker's replica / preferred-leader count inside ``[lo, hi]``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from planner.plan import MoveKind, Plan
from planner.racks import RackTree


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


def plan_violations(plan: Plan, *, forgotten: Iterable[int] = (), max_moves: int | None = None,
                    max_leader_changes: int | None = None, data_moves: bool = True,
                    replica_band: tuple[int, int] | None = None,
                    leader_band: tuple[int, int] | None = None) -> list[str]:
    before, after = plan.before, plan.after
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
    if max_moves is not None and moves > max_moves:
        errors.append(f"{moves} replica moves, budget {max_moves}")
    if max_leader_changes is not None and leader_changes > max_leader_changes:
        errors.append(f"{leader_changes} leader changes, budget {max_leader_changes}")
    if moves != plan.replica_moves:
        errors.append(f"plan.replica_moves is {plan.replica_moves}, the snapshots differ by {moves}")
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


def check_plan(plan: Plan, **kwargs) -> None:
    errors = plan_violations(plan, **kwargs)
    assert not errors, "plan violates invariants:\n" + "\n".join(errors[:20])
