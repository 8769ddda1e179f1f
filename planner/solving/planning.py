"""The one entry point of planning: a request and a snapshot in, a plan out.

Goals
    :func:`make_plan` turns a :class:`~kafka_replica_assignor.planner.request.PlanRequest` into a
    :class:`~kafka_replica_assignor.planner.plan.Plan` for every mode, on every path, and is what the
    command line and the fleet job call: one snapshot and one request give the same plan
    everywhere. The plan is *deterministic* (the same cluster, in any input order, gives the
    same plan on any machine at any load) and *idempotent* (planning the cluster the plan leaves
    moves nothing).

Constraints
    - The request is checked once, before planning (every goal's ``check_request``: exit 2).
    - The snapshot is put in canonical order first (partitions by topic and partition, brokers by
      id): nothing after sees the input's order.
    - With a move or leader budget there is one pass (a budget is spent once). Otherwise a pass
      is kept only when it brings the cluster closer to the goals' targets, in their order (the
      distance vector of :func:`kafka_replica_assignor.planner.solving.heuristic.measure`, :func:`closer`); a plan
      that reaches no more than the cluster as it is moves nothing.
    - The promises of the request (``--remove-brokers``, ``--demote-brokers``, capacities) are
      checked on the final plan, whichever path made it (the goals' ``final_check``: exit 1).

Algorithm
    Leader mode: the leader goals on the replica lists. Other modes, in passes (at most
    :data:`PASSES`): a pass is the heuristic (:mod:`kafka_replica_assignor.planner.solving.heuristic`) and, on small
    clusters, the exact program (:mod:`kafka_replica_assignor.planner.solving.exact`) from the cluster the last
    kept pass left. A pass that reaches every target, or does not bring the cluster closer, is
    the last: a second run on the plan's result then finds the same fixed point and moves
    nothing. Cluster mode then balances leaders against the input's leaders. Last, replicas are
    placed in log directories (:mod:`kafka_replica_assignor.planner.solving.disks`).

Example
    A cluster whose byte band cannot be reached: pass 1 moves replicas and brings the bytes
    closer; pass 2, from there, finds nothing closer and is dropped; the plan is pass 1's.
    Planning its result again: pass 1 finds nothing closer, so the plan moves nothing.
"""

from __future__ import annotations

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry, gc_paused
from kafka_replica_assignor.planner.goals.leaders import LeaderGoal
from kafka_replica_assignor.planner.goals.order import REPLICA_PHASES, check_request, goals_for
from kafka_replica_assignor.planner.plan import MoveKind, Plan, Working
from kafka_replica_assignor.planner.request import PlanRequest
from kafka_replica_assignor.planner.solving.disks import balance_disks
from kafka_replica_assignor.planner.solving.exact import SOFT_GAP, improve
from kafka_replica_assignor.planner.solving.heuristic import balance

PASSES = 4
"""Passes of the replica goals at most (a pass that brings nothing closer ends them sooner)."""

CLOSER = SOFT_GAP
"""A pass brings the cluster closer when it reaches a target the cluster misses, or, missing the
same targets, lowers the first distance that differs by at least this share of it (and 1):
passes that only chase a sliver of an unreachable band are not worth a pass each (the exact
program stops bringing such a band closer at the same share)."""


def make_plan(snapshot: ClusterSnapshot, request: PlanRequest) -> Plan:
    """The plan ``request`` asks for (module doc)."""
    check_request(request, snapshot)
    snapshot = canonical(snapshot)
    with gc_paused():
        if request.mode == "leader":
            work = Working(snapshot, request.scope)
        else:
            work = replicas(snapshot, request)
        if request.mode in ("leader", "cluster"):
            leaders(work, request, snapshot if request.mode == "cluster" else None)
        for goal in goals_for(work, request):
            goal.final_check()
        plan = work.plan()
    if request.mode == "leader":    # no data moves, so no directory changes either
        return plan
    return balance_disks(plan, threshold=request.percent, scope=request.scope, intra=request.mode != "repair")


def canonical(snapshot: ClusterSnapshot) -> ClusterSnapshot:
    """``snapshot`` with partitions by (topic, partition) and brokers by id (the same value when
    it is already so)."""
    parts = snapshot.partitions
    brokers = snapshot.brokers
    keys = [(p.topic, p.partition) for p in parts]
    ids = [b.id for b in brokers]
    if keys == sorted(keys) and ids == sorted(ids):
        return snapshot
    return ClusterSnapshot(tuple(sorted(brokers, key=_broker_id)), tuple(sorted(parts, key=_partition_key)))


def _broker_id(b: BrokerEntry) -> int:
    return b.id


def _partition_key(p: PartitionEntry) -> tuple[str, int]:
    return p.topic, p.partition


def one_pass(snapshot: ClusterSnapshot, request: PlanRequest) -> Working:
    """The replica goals once on ``snapshot``: the heuristic, then on small clusters the exact
    program; the scratch copy holding the better plan."""
    work = Working(snapshot, request.scope)
    balance(work, request, goals_for(work, request, ("lists", *REPLICA_PHASES)))
    if request.mode != "repair" and request.exact:
        work = improve(work, request)
    return work


def replicas(snapshot: ClusterSnapshot, request: PlanRequest) -> Working:
    """The replica passes (module doc), as one scratch copy of ``snapshot``."""
    kept: list[Working] = []
    current = snapshot
    first: Working | None = None
    budgeted = request.max_moves is not None or request.max_leader_changes is not None
    for _ in range(1 if request.mode == "repair" or budgeted else PASSES):
        work = one_pass(current, request)
        first = first or work
        found, soft = work.memo.get("distances"), work.memo.get("soft")
        start, end = found if isinstance(found, tuple) else ((), ())
        if request.mode != "repair" and not closer(start, end, soft if isinstance(soft, tuple) else ()):
            break
        kept.append(work)
        if request.mode == "repair" or not any(end):
            break
        current = work.plan().after
    assert first is not None
    out = Working(snapshot, request.scope)
    out.bounds.update(first.bounds)
    if not kept:
        out.notes.append("no plan brings the cluster closer to a target than it is: nothing moves")
        out.notes.extend(n for n in first.notes if not n.startswith(("exact path", "heuristic path", "fewer moves")))
        return out
    last = kept[-1]
    for i, new in enumerate(last.replicas):
        if new != out.replicas[i]:
            reach(out, i, new)
    out.notes.extend(last.notes)
    if len(kept) > 1:
        out.notes.append(f"planned in {len(kept)} passes, each from the cluster the last one left, until one "
                         "reached every target or brought nothing closer")
    return out


def closer(start: tuple[int, ...], end: tuple[int, ...], soft: tuple[bool, ...]) -> bool:
    """Whether distances ``end`` are closer to the goals than ``start``: a target reached, or the
    first distance that differs lower, by at least :data:`CLOSER` of it for a soft target
    (``soft``: per distance; any step of a hard rule, a repair, counts)."""
    met_start, met_end = tuple(d > 0 for d in start), tuple(d > 0 for d in end)
    if met_end != met_start:
        return met_end < met_start
    for a, b, loose in zip(start, end, soft, strict=True):
        if a != b:
            return b < a and (not loose or a - b >= max(1, CLOSER * a))
    return False


def reach(work: Working, i: int, new: list[int]) -> None:
    """Record the moves that turn partition ``i``'s list into ``new``: each replica that left
    replaced in its slot by one that came, then the reorders (new leaders to the front)."""
    current = work.replicas[i]
    went = [b for b in current if b not in new]
    came = [b for b in new if b not in current]
    for src, dst in zip(went, came, strict=True):
        work.record(i, src, dst, MoveKind.REPLICA if src in work.eligible_set else MoveKind.REPAIR)
        current[current.index(src)] = dst
    if current == new:
        return
    for b in reversed(new):     # move-to-front, last one first
        if current[0] != b:
            work.record(i, current[0], b, MoveKind.LEADER)
        current.remove(b)
        current.insert(0, b)


def leaders(work: Working, request: PlanRequest, baseline: ClusterSnapshot | None) -> None:
    """The leader goals (demote, leaders) on ``work``'s replica lists, priced against the
    leaders of ``baseline`` (cluster mode: the input)."""
    for goal in goals_for(work, request, ("leaders",)):
        if isinstance(goal, LeaderGoal):
            goal.baseline = baseline
        goal.optimize()
