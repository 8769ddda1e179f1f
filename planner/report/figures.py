"""The figures of a snapshot that the report and the charts show, computed with numpy.

A fast path beside :func:`kafka_replica_assignor.planner.report.cluster_report.describe` (the plain path, which also lists every
misplaced replica and partition by name): :func:`figures` counts the same things in a few
array passes over the flattened replica lists, so a report of 150,000 partitions does not
walk them partition by partition in Python, twice per chart. ``tests/unit/test_planner_figures.py``
checks that both paths agree.

Counted, per known broker: replicas, preferred leaders, bytes (``size_bytes`` of its replicas;
unsized partitions weigh 0); per unknown broker id (not in the snapshot, not a placeholder):
replicas and leaders; per node of the rack tree of the alive brokers: alive brokers, replicas,
leaders; the spreads of :func:`kafka_replica_assignor.planner.report.cluster_report.spread`; partitions lacking rack diversity at some
level; replicas on dead brokers, on unknown brokers, placeholders; the worst topic's excess over
its cap on one eligible broker (the topic-spread goal's own figure,
:func:`kafka_replica_assignor.planner.goals.topic_spread.worst_excess`); the partitions with more replicas than there
are alive brokers (they make the ideal band unreachable).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np
import numpy.typing as npt

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
from kafka_replica_assignor.planner.goals.rack_diversity import lacking
from kafka_replica_assignor.planner.goals.topic_spread import worst_excess
from kafka_replica_assignor.planner.plan import Plan
from kafka_replica_assignor.planner.racks import RackTree
from kafka_replica_assignor.planner.report.cluster_report import BrokerState, RackState, Spread, rack_totals, spread

__all__ = ["Figures", "figures", "plan_figures"]

Ints = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Figures:
    """What the report and the charts need of one snapshot (see the module doc)."""

    brokers: tuple[BrokerState, ...]          # known brokers, by id
    unknown_brokers: tuple[BrokerState, ...]  # ids >= 0 that hold replicas but are not listed
    racks: tuple[RackState, ...]              # by (level, name)
    partitions: int
    replicas: int
    replicas_spread: Spread
    leaders_spread: Spread
    not_diverse: int
    on_dead: int
    on_unknown: int
    placeholders: int
    topic_excess: int   # max over topics and alive brokers of the replicas on it minus its cap (module doc)
    sized: bool         # some partition has a size
    wider_than_alive: int = 0   # partitions with more replicas than there are alive brokers

    @property
    def misplaced(self) -> int:
        """Replicas that cannot serve: on dead or unknown brokers, or placeholders."""
        return self.on_dead + self.on_unknown + self.placeholders


def _flatten(snapshot: ClusterSnapshot) -> tuple[Ints, Ints, Ints, Ints]:
    """``(rf, flat replicas, sizes, topic index)``, one entry per partition (``flat``: per replica)."""
    parts = snapshot.partitions
    n = len(parts)
    rf = np.fromiter((len(p.replicas) for p in parts), dtype=np.int64, count=n)
    flat = np.fromiter(chain.from_iterable(p.replicas for p in parts), dtype=np.int64, count=int(rf.sum()))
    sizes = np.fromiter((p.size_bytes or 0 for p in parts), dtype=np.int64, count=n)
    codes: dict[str, int] = {}
    topic = np.fromiter((codes.setdefault(p.topic, len(codes)) for p in parts), dtype=np.int64, count=n)
    return rf, flat, sizes, topic


def _patched(before: ClusterSnapshot, after: ClusterSnapshot,
             columns: tuple[Ints, Ints, Ints, Ints]) -> tuple[Ints, Ints, Ints, Ints]:
    """The columns of ``after`` from those of ``before``: only the partitions whose entry is
    not shared (a plan's ``after`` shares the unchanged ones) are read again."""
    rf, flat, sizes, topic = columns
    pairs = zip(before.partitions, after.partitions, strict=True)
    changed = [(i, a.replicas) for i, (b, a) in enumerate(pairs) if a is not b]
    if any(len(reps) != rf[i] for i, reps in changed):
        return _flatten(after)
    flat = flat.copy()
    starts = (np.cumsum(rf) - rf).tolist()
    for i, reps in changed:
        flat[starts[i]:starts[i] + len(reps)] = reps
    return rf, flat, sizes, topic


def plan_figures(plan: Plan, removed: frozenset[int] = frozenset()) -> tuple[Figures, Figures]:
    """The figures of a plan's ``before`` and ``after``, reading the partitions once;
    ``removed``: the brokers the plan empties (out of the topic caps' brokers)."""
    columns = _flatten(plan.before)
    after = columns if plan.after is plan.before else _patched(plan.before, plan.after, columns)
    return _figures(plan.before, columns, removed), _figures(plan.after, after, removed)


def figures(snapshot: ClusterSnapshot) -> Figures:
    """The figures of ``snapshot`` (module doc)."""
    return _figures(snapshot, _flatten(snapshot))


def _figures(snapshot: ClusterSnapshot, columns: tuple[Ints, Ints, Ints, Ints],
             removed: frozenset[int] = frozenset()) -> Figures:
    rf, flat, sizes, topic = columns
    n_parts = len(rf)
    starts = np.cumsum(rf) - rf
    owner = np.repeat(np.arange(n_parts, dtype=np.int64), rf)     # partition of each replica
    known = sorted(snapshot.brokers, key=lambda b: b.id)
    known_ids = np.array([b.id for b in known], dtype=np.int64)
    ids = np.union1d(known_ids, flat)                              # every id, sorted
    pos = np.searchsorted(ids, flat)                               # id position of each replica
    m = len(ids)
    is_known = np.zeros(m, dtype=bool)
    is_known[np.searchsorted(ids, known_ids)] = True
    is_alive = np.zeros(m, dtype=bool)
    alive_ids = np.array([b.id for b in known if b.alive], dtype=np.int64)
    is_alive[np.searchsorted(ids, alive_ids)] = True

    replicas = np.bincount(pos, minlength=m)
    lead_pos = pos[starts] if n_parts else np.zeros(0, dtype=np.int64)
    leaders = np.bincount(lead_pos, minlength=m)
    weights = np.repeat(sizes, rf)
    byte_sum = np.zeros(m, dtype=np.int64)
    np.add.at(byte_sum, pos, weights)

    alive_replica = is_alive[pos]
    known_replica = is_known[pos]
    placeholders = int(np.count_nonzero(flat < 0))
    on_unknown = int(np.count_nonzero(~known_replica & (flat >= 0)))
    on_dead = int(np.count_nonzero(known_replica & ~alive_replica))

    brokers = tuple(
        BrokerState(b.id, b.rack, b.alive, int(replicas[k]), int(leaders[k]), int(byte_sum[k]), b.capacity_bytes)
        for b, k in zip(known, np.searchsorted(ids, known_ids).tolist(), strict=True))
    unknown = tuple(
        BrokerState(int(ids[k]), None, False, int(replicas[k]), int(leaders[k]))
        for k in np.flatnonzero(~is_known & (ids >= 0)).tolist())

    alive_pos = np.searchsorted(ids, alive_ids)
    n_alive = len(alive_ids)
    leadable = int(np.count_nonzero(np.bincount(owner[alive_replica], minlength=n_parts)))
    total = int(rf.sum())
    rep_counts = replicas[alive_pos].tolist()
    rep_spread = spread(rep_counts, total, n_alive)
    lead_spread = spread(leaders[alive_pos].tolist(), leadable, n_alive)

    tree = RackTree.of({b.id: b.rack for b in known if b.alive})
    not_diverse = lacking(snapshot)

    return Figures(
        brokers=brokers,
        unknown_brokers=unknown,
        racks=rack_totals(tree, brokers),
        partitions=n_parts,
        replicas=total,
        replicas_spread=rep_spread,
        leaders_spread=lead_spread,
        not_diverse=not_diverse,
        on_dead=on_dead,
        on_unknown=on_unknown,
        placeholders=placeholders,
        topic_excess=worst_excess(snapshot, removed),
        sized=bool(np.any(sizes)),
        wider_than_alive=int(np.count_nonzero(rf > n_alive)),
    )
