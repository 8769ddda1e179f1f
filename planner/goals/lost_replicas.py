"""Repair: every replica on an alive, eligible broker.

Goals
    Replace placeholders and replicas on dead, unknown or removed brokers, first of all goals:
    a partition naming a broker that cannot serve is neither movable nor leadable. Distance: the
    replicas still on brokers that are not eligible.

Constraints
    - A hard rule. Partitions out of scope stay as they are, excluded brokers take no repair,
      and with ``--add-brokers`` a repair lands on an added broker (the scope's goals); the
      move budget caps the repairs first.
    - All or nothing per partition (:mod:`kafka_replica_assignor.planner.replica_repair`): a
      partition with more replicas than brokers that may take one stays as it is, noted.
    - Its moves count in every later goal's figures and bounds (``repairs_needed``).

Algorithm
    :func:`kafka_replica_assignor.planner.replica_repair.repair_lists` on the working replica
    lists before the shared model is built (the model indexes repaired partitions only). In the
    exact program: every partition holds its replication factor of eligible brokers (the
    program has columns for eligible brokers only). In the bound: the bytes leaving equal the
    bytes arriving less the bytes repaired, which arrive too.

Example
    Broker 4 dead, ``t-1 [4, 0, 2]``: its replica on 4 goes to the eligible broker of a rack
    ``t-1`` lacks holding the fewest replicas -> ``t-1 [1, 0, 2]``.
"""

from __future__ import annotations

from typing import ClassVar

import kafka_replica_assignor.planner.replica_repair as replica_repair
from kafka_replica_assignor.planner.goals.goal import BoundProgram, ExactProgram, Goal, ReportView, Target, blame, names
from kafka_replica_assignor.planner.plan import MoveKind, Working


class RepairGoal(Goal):
    """Repair the replicas that cannot serve (module doc)."""

    name = "repair"
    key = "repair"
    hard = True
    modes = frozenset({"replica", "cluster", "repair"})
    phase = "lists"
    bound_text: ClassVar[dict[str, str]] = {
        "repairs_needed": "replicas to repair (placeholders, dead, unknown or removed brokers)"}

    def optimize(self) -> int:
        return repair_working(self.work, max_moves=self.request.max_moves)

    def distance(self) -> int:
        return misplaced(self.work)

    def exact_rows(self, program: ExactProgram) -> None:
        parts = program.work.snapshot.partitions
        for i in program.parts:
            cols = program.x[i]
            program.row(len(parts[i].replicas), len(parts[i].replicas), cols, [1.0] * len(cols), "hard")

    def bound_rows(self, program: BoundProgram) -> None:
        program.repairs()

    @staticmethod
    def targets(view: ReportView) -> tuple[Target, ...]:
        before, after = view.before.misplaced, view.after.misplaced
        missed = ""
        if after:
            why = blame(view, True, "repair")
            if view.after.wider_than_alive and not (view.request.mode == "leader" or "budget" in why):
                alive = sum(b.alive for b in view.after.brokers)
                why = (f"{view.after.wider_than_alive} partition(s) have more replicas than the {alive} alive "
                       f"broker(s)")
            missed = f"replicas on dead or unknown brokers and placeholders: {after} after the plan, target 0: {why}"
        return (Target("replicas on dead or unknown brokers, placeholders", before, after, 0, not after, 1,
                       missed),)


def misplaced(work: Working) -> int:
    """Replicas of the working lists on brokers that are not eligible (and placeholders)."""
    eligible = work.eligible_set
    return sum(1 for reps in work.replicas for b in reps if b not in eligible)


def settled(work: Working) -> tuple[int, int]:
    """``(replicas, bytes)`` on eligible brokers once every partition that can be repaired is:
    the totals the bands share out (:func:`settled_replicas` per partition)."""
    hit = work.memo.get("settled")
    if isinstance(hit, tuple):
        return hit
    replicas = size = 0
    for n, p in zip(settled_replicas(work), work.snapshot.partitions, strict=True):
        replicas += n
        size += n * (p.size_bytes or 0)
    work.memo["settled"] = (replicas, size)
    return replicas, size


def settled_replicas(work: Working) -> list[int]:
    """Per partition, its replicas on eligible brokers once every partition that can be repaired
    is. A partition out of scope, or with more lost replicas than brokers that may take one and
    do not hold it (:func:`repair_working`'s rule), keeps only what it has on eligible brokers."""
    hit = work.memo.get("settled_replicas")
    if isinstance(hit, list):
        return hit
    eligible = work.eligible_set
    takers = {b for b in work.eligible if b not in work.excluded and (not work.takers or b in work.takers)}
    out = []
    for i, reps in enumerate(work.original):
        n = len(reps)
        if not eligible.issuperset(reps):
            # the repair's own rule: each lost replica goes to a broker that may take and does
            # not hold the partition yet (its replicas on brokers that may not take stay)
            lost = sum(1 for b in reps if b not in eligible)
            if i in work.frozen or lost > len(takers) - sum(1 for b in reps if b in takers):
                n -= lost
        out.append(n)
    work.memo["settled_replicas"] = out
    return out


def repair_working(work: Working, *, max_moves: int | None = None,
                   load: dict[int, int] | None = None) -> int:
    """Repair ``work`` (a rule's own scratch copy) and return the number of replacements.
    ``load`` (replicas per eligible broker, from :meth:`Working.counts`) is kept up to date.
    Out-of-scope partitions stay; excluded brokers take none; with added brokers only they take."""
    if load is None:
        load = work.counts()
    order, eligible = work.order, work.eligible
    if work.frozen or work.excluded or work.takers:
        order = [i for i in order if i not in work.frozen]
        eligible = [b for b in eligible if b not in work.excluded and (not work.takers or b in work.takers)]
        load = {b: c for b, c in load.items() if b in set(eligible)}
    keep = work.eligible_set.difference(eligible)     # eligible brokers that may not take: their replicas stay
    outcome = replica_repair.repair_lists(work.replicas, order, eligible, work.tree.keys, load,
                                          keep=keep, max_moves=max_moves)
    for i, _, old, new in outcome.changes:
        work.record(i, old, new, MoveKind.REPAIR)
    if outcome.unrepaired:
        where = "added brokers" if work.takers else "alive brokers"
        work.notes.append(
            f"{len(outcome.unrepaired)} partition(s) cannot be repaired: fewer {where} "
            f"({len(eligible)}) than replicas to place ({names(work, outcome.unrepaired)})")
    if outcome.deferred_slots:
        work.notes.append(f"move budget reached: {outcome.deferred_slots} replica(s) left to repair")
    work.bounds["repairs_needed"] = outcome.needed
    return len(outcome.changes)
