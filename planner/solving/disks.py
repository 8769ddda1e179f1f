"""Log directories (JBOD): bytes balanced across the directories of each broker, after the
inter-broker plan.

Goals
    When the input says where replicas live on disk (a snapshot's ``log_dirs``, ``--log-dirs``,
    or DescribeLogDirs of a live cluster), each broker's directories hold about the same bytes:
    every directory within its *disk band*, ``mean * (1 -+ threshold)`` of its broker's bytes
    over its broker's directories (:func:`kafka_replica_assignor.planner.goals.replica_bytes.byte_band`, the band of the brokers, one
    level down; its top is at least the largest replica on the broker, its bottom at most what
    the other directories can share beside that replica: :func:`dir_band`). Without log directory
    information, or when no broker has two directories, nothing here runs and every output
    stays as it was.

Constraints
    - The inter-broker plan is not changed: which broker holds which replica, the order of the
      replica lists, every figure of the report. This pass only chooses directories.
    - A replica that moves to another broker is placed in a directory of that broker (it has to
      be written somewhere: placing it costs no extra copy).
    - A replica that stays on its broker changes directory only while a directory of that
      broker is outside the band, and each replica at most once: an intra-broker move copies
      the replica's bytes from one disk to another of the same broker.
    - Partitions out of the plan's scope (``--topics``, ``--exclude-topics``) and brokers that
      neither give nor take (``--exclude-brokers``) get no intra-broker move; leader mode moves
      no data, so it gets none at all, and repair mode only places the replicas it repairs.
    - A replica whose directory is unknown (``null``) is not counted and not moved; a broker
      whose directories are unknown gets ``"any"`` (no preference) in Kafka's reassignment JSON.

Algorithm
    1. Each broker's directories: those its entry lists, then those its replicas name (sorted).
       Bytes per directory after the inter-broker plan, counting the replicas that stay.
    2. Replicas arriving on a broker, largest first (ties by topic, partition, broker): each
       goes to the least-loaded directory of its broker (ties: the first listed).
    3. Per broker, while a directory is outside the band (furthest out first): one above it
       gives to the emptiest directory that can take one of its replicas, one below takes from
       the fullest that can give one. Of the giving directory's replicas not moved yet, the one
       whose size is closest to half the gap between the two (and below the gap, so the spread
       shrinks) moves; no such pair for any directory outside: stop. Replicas that arrived in
       step 2 are preferred on a tie (free to move). Every move lowers the sum of squared
       directory loads and no replica moves twice, so the pass ends.
    4. Partitions whose replicas did not change but whose directories did are *intra-broker
       moves*: they go into the reassignment JSON with their unchanged replica list.

Example
    Broker 1 with ``/a`` holding ``t-0`` (60 GB) and ``t-1`` (30 GB), ``/b`` holding ``t-2``
    (10 GB), and ``u-0`` (5 GB) arriving from broker 2; threshold 10 %. Step 2: ``u-0`` goes to
    ``/b`` (10 GB, the emptier). The broker's 105 GB give a mean of 52.5 GB, a band of 45-60 GB
    (top: the largest replica, 60 GB; bottom: what ``/b`` can have beside it, 45 GB). Step 3:
    ``/a`` (90 GB) is above it, the gap to ``/b`` (15 GB) is 75 GB, and of ``/a``'s replicas
    below 75 GB ``t-1`` (30 GB) is the closest to 37.5: it moves to ``/b``. Both directories
    are in the band; the plan names ``/b`` for ``u-0`` on broker 1, and ``t-1`` is an
    intra-broker move.

    | directory | before | after |
    |---|---|---|
    | /a | 90 GB | 60 GB |
    | /b | 10 GB | 45 GB |
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, replace
from fractions import Fraction
from itertools import islice, takewhile

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.goals.replica_bytes import byte_band
from kafka_replica_assignor.planner.plan import Plan
from kafka_replica_assignor.planner.request import Scope, parse_threshold

ANY = "any"   # Kafka's reassignment JSON: no preference for this replica's directory
ROWS_SHOWN = 200


@dataclass(frozen=True, slots=True)
class DirLoad:
    """One log directory's bytes before and after the plan, and its band after it."""

    broker: int
    log_dir: str
    before: int
    after: int
    lo: int
    hi: int

    @property
    def in_band(self) -> bool:
        return self.lo <= self.after <= self.hi


@dataclass(frozen=True, slots=True)
class DiskMove:
    """A replica that stays on ``broker`` and changes directory."""

    topic: str
    partition: int
    broker: int
    source: str
    destination: str
    size: int


def dir_band(total: int, dirs: int, fraction: Fraction, largest: int) -> tuple[int, int]:
    """The disk band of a broker's directories: :func:`kafka_replica_assignor.planner.goals.replica_bytes.byte_band` over them,
    its bottom lowered to ``(total - largest) / (dirs - 1)`` when the largest replica leaves
    the other directories less than that to share (they cannot all hold more)."""
    lo, hi = byte_band(total, dirs, fraction, largest)
    if dirs > 1:
        lo = min(lo, (total - largest) // (dirs - 1))
    return lo, hi


def has_log_dirs(snapshot: ClusterSnapshot) -> bool:
    """Whether some broker has two log directories or more (known from the snapshot)."""
    if any(b.log_dirs is not None and len(b.log_dirs) > 1 for b in snapshot.brokers):
        return True
    if all(p.log_dirs is None for p in snapshot.partitions):
        return False
    return any(len(d) > 1 for d in broker_dirs(snapshot).values())


def broker_dirs(snapshot: ClusterSnapshot) -> dict[int, tuple[str, ...]]:
    """Each broker's directories: those it lists, then those its replicas name (sorted)."""
    seen: dict[int, set[str]] = {}
    for p in snapshot.partitions:
        if p.log_dirs is not None:
            for b, d in zip(p.replicas, p.log_dirs, strict=True):
                if d is not None:
                    seen.setdefault(b, set()).add(d)
    out: dict[int, tuple[str, ...]] = {}
    for entry in snapshot.brokers:
        listed = tuple(entry.log_dirs or ())
        extra = sorted(seen.pop(entry.id, set()) - set(listed))
        if listed or extra:
            out[entry.id] = listed + tuple(extra)
    for broker, named in seen.items():          # replicas on brokers the snapshot does not list
        out[broker] = tuple(sorted(named))
    return out


def _dirs_of(p: PartitionEntry) -> dict[int, str | None]:
    return dict(zip(p.replicas, p.log_dirs or (None,) * len(p.replicas), strict=True))


class _Broker:
    """One broker's directories during the pass: bytes each, and its replicas by size."""

    __slots__ = ("dirs", "load", "replicas")

    def __init__(self, dirs: tuple[str, ...]) -> None:
        self.dirs = dirs
        self.load = dict.fromkeys(dirs, 0)
        self.replicas: dict[str, list[tuple[int, int, int, int]]] = {d: [] for d in dirs}  # (size, free, i, slot)

    def least(self) -> str:
        return min(self.dirs, key=lambda d: (self.load[d], self.dirs.index(d)))

    def add(self, d: str, size: int, free: int, i: int, slot: int, *, keep_sorted: bool = True) -> None:
        self.load[d] += size
        if keep_sorted:
            bisect.insort(self.replicas[d], (size, free, i, slot))
        else:
            self.replicas[d].append((size, free, i, slot))


def balance_disks(plan: Plan, *, threshold: float | int | str = 10, scope: Scope | None = None,
                  intra: bool = True) -> Plan:
    """``plan`` with every replica's directory chosen (module doc); ``plan`` itself when the
    input has no log directory information."""
    before = plan.before
    if not has_log_dirs(before):
        return plan
    fraction = parse_threshold(threshold)
    scope = scope or Scope()
    state = {b: _Broker(d) for b, d in broker_dirs(before).items()}
    rows, arriving = _staying(plan, state)
    for neg, _, _, b, i, slot in sorted(arriving):
        d = state[b].least()
        rows[i][slot] = d
        state[b].add(d, -neg, 0, i, slot)
    if intra:
        frozen = scope.frozen(before)
        for b in sorted(state):
            if b not in scope.exclude_brokers:
                _even(state[b], rows, fraction, frozen)
    return _with_dirs(plan, rows, len(arriving))


def _staying(plan: Plan, state: dict[int, _Broker]) -> tuple[list[list[str | None]], list[tuple[int, str, int, int, int, int]]]:
    """Step 1: each replica's directory when it stays on its broker (counted in ``state``),
    ``None`` otherwise; and the replicas arriving on a broker with known directories
    (``(-size, topic, partition, broker, index, slot)``)."""
    rows: list[list[str | None]] = []
    arriving: list[tuple[int, str, int, int, int, int]] = []
    for i, (old, new) in enumerate(zip(plan.before.partitions, plan.after.partitions, strict=True)):
        was = _dirs_of(old)
        size = old.size_bytes or 0
        row: list[str | None] = []
        for slot, b in enumerate(new.replicas):
            d = was.get(b)
            row.append(d)
            if b in state:
                if b not in was:
                    arriving.append((-size, old.topic, old.partition, b, i, slot))
                elif d is not None and d in state[b].load:
                    state[b].add(d, size, 1, i, slot, keep_sorted=False)
        rows.append(row)
    for broker in state.values():
        for replicas in broker.replicas.values():
            replicas.sort()
    return rows, arriving


def _even(broker: _Broker, rows: list[list[str | None]], fraction: Fraction, frozen: frozenset[int]) -> int:
    """Step 3 of the module doc on one broker; the number of replicas that changed directory."""
    if len(broker.dirs) < 2:
        return 0
    total = sum(broker.load.values())
    largest = max((r[0] for rs in broker.replicas.values() for r in rs), default=0)
    lo, hi = dir_band(total, len(broker.dirs), fraction, largest)
    done: set[tuple[int, int]] = set()
    moved = 0
    while True:
        step = _next_move(broker, lo, hi, done, frozen)
        if step is None:
            return moved
        full, empty, pick = step
        size, free, i, slot = pick
        source = broker.replicas[full]
        del source[bisect.bisect_left(source, pick)]
        broker.load[full] -= size
        broker.add(empty, size, free, i, slot)
        done.add((i, slot))
        rows[i][slot] = empty
        moved += 1


def _next_move(broker: _Broker, lo: int, hi: int, done: set[tuple[int, int]],
               frozen: frozenset[int]) -> tuple[str, str, tuple[int, int, int, int]] | None:
    """``(from, to, replica)``: the next move of step 3, or None. Directories outside the band
    are taken furthest out first; one above the band gives to the emptiest directory that can
    take one of its replicas, one below takes from the fullest that can give one."""
    load = broker.load
    order = sorted(broker.dirs, key=lambda d: (load[d], broker.dirs.index(d)))
    outside = sorted((d for d in order if not lo <= load[d] <= hi),
                     key=lambda d: (-max(load[d] - hi, lo - load[d]), broker.dirs.index(d)))
    for d in outside:
        pairs = ([(d, e) for e in order if load[e] < load[d]] if load[d] > hi
                 else [(f, d) for f in reversed(order) if load[f] > load[d]])
        for full, empty in pairs:
            pick = _closest(broker.replicas[full], load[full] - load[empty], done, frozen)
            if pick is not None:
                return full, empty, pick
    return None


def _closest(replicas: list[tuple[int, int, int, int]], gap: int, done: set[tuple[int, int]],
             frozen: frozenset[int]) -> tuple[int, int, int, int] | None:
    """Of ``replicas`` (sorted by size), the one with ``0 < size < gap`` closest to ``gap / 2``,
    not moved yet and not frozen; an arriving replica (``free`` 0) first among equal sizes."""
    def usable(r: tuple[int, int, int, int]) -> bool:
        return (r[2], r[3]) not in done and r[2] not in frozen

    at = bisect.bisect_left(replicas, (gap // 2, 0, 0, 0))
    below = next((r for r in takewhile(lambda r: r[0] > 0, map(replicas.__getitem__, range(at - 1, -1, -1)))
                  if usable(r)), None)
    above = next((r for r in takewhile(lambda r: r[0] < gap, islice(replicas, at, None)) if usable(r)), None)
    found = [r for r in (below, above) if r is not None]
    return min(found, key=lambda r: (abs(2 * r[0] - gap), r[1], r[2], r[3])) if found else None


def _with_dirs(plan: Plan, rows: list[list[str | None]], placed: int) -> Plan:
    parts = list(plan.after.partitions)
    for i, (old, new) in enumerate(zip(plan.before.partitions, plan.after.partitions, strict=True)):
        row = tuple(rows[i])
        if new.replicas == old.replicas and row == (old.log_dirs or (None,) * len(old.replicas)):
            continue
        if all(d is None for d in row):
            continue
        if new is old:
            parts[i] = replace(old, leader=None, isr=None, log_dirs=row)
        else:
            parts[i] = replace(new, log_dirs=row)
    after = ClusterSnapshot(plan.after.brokers, tuple(parts))
    moves = disk_moves(Plan(plan.before, after))
    copied = sum(m.size for m in moves)
    note = (f"log directories: {placed} replica(s) moving to another broker get a target directory; "
            f"{len(moves)} intra-broker move(s) ({copied} bytes copied between directories of one broker)")
    return replace(plan, after=after, notes=(*plan.notes, note))


def disk_moves(plan: Plan) -> tuple[DiskMove, ...]:
    """The replicas that stay on their broker and change directory, in partition order."""
    out: list[DiskMove] = []
    for old, new in zip(plan.before.partitions, plan.after.partitions, strict=True):
        if new is old or new.log_dirs is None:
            continue
        was = _dirs_of(old)
        for b, d in zip(new.replicas, new.log_dirs, strict=True):
            source = was.get(b)
            if source is not None and d is not None and d != source:
                out.append(DiskMove(old.topic, old.partition, b, source, d, old.size_bytes or 0))
    return tuple(out)


def intra_only(plan: Plan) -> tuple[PartitionEntry, ...]:
    """Partitions whose replicas stay the same and whose directories change (plan order:
    topic, partition), for the reassignment JSON."""
    out = [new for old, new in zip(plan.before.partitions, plan.after.partitions, strict=True)
           if new is not old and new.replicas == old.replicas and new.log_dirs != old.log_dirs]
    return tuple(sorted(out, key=lambda p: (p.topic, p.partition)))


def _loads(snapshot: ClusterSnapshot, dirs: dict[int, tuple[str, ...]]) -> dict[tuple[int, str], int]:
    load = {(b, d): 0 for b, ds in dirs.items() for d in ds}
    for p in snapshot.partitions:
        if p.log_dirs is not None:
            for b, d in zip(p.replicas, p.log_dirs, strict=True):
                if (b, d) in load:
                    load[(b, d)] += p.size_bytes or 0   # type: ignore[index]
    return load


def dir_loads(plan: Plan, threshold: float | int | str = 10) -> tuple[DirLoad, ...]:
    """Every known directory's bytes before and after ``plan`` and its band after it."""
    dirs = broker_dirs(plan.before)
    before, after = _loads(plan.before, dirs), _loads(plan.after, dirs)
    fraction = parse_threshold(threshold)
    largest: dict[int, int] = {}
    for p in plan.after.partitions:
        for b in p.replicas:
            largest[b] = max(largest.get(b, 0), p.size_bytes or 0)
    out: list[DirLoad] = []
    for b in sorted(dirs):
        total = sum(after[(b, d)] for d in dirs[b])
        lo, hi = dir_band(total, len(dirs[b]), fraction, largest.get(b, 0))
        out.extend(DirLoad(b, d, before[(b, d)], after[(b, d)], lo, hi) for d in dirs[b])
    return tuple(out)


def report_lines(plan: Plan, threshold: float | int | str = 10) -> list[str]:
    """The report's section on log directories (none without log directory information)."""
    if not has_log_dirs(plan.before):
        return []
    loads = dir_loads(plan, threshold)
    moves = disk_moves(plan)
    fraction = parse_threshold(threshold)
    out_before = _out_of_band_before(plan, loads, fraction)
    outside = [x for x in loads if not x.in_band]
    lines = ["## Log directories", "",
             f"Disk band: per broker, `mean * (1 -+ {float(fraction * 100):g} %)` of its bytes over its "
             "directories, the top at least its largest replica, the bottom at most what the other "
             "directories can share beside it. "
             f"Directories outside it: {out_before} before, **{len(outside)}** after "
             f"(of {len(loads)}); intra-broker moves: **{len(moves)}** "
             f"({sum(m.size for m in moves)} bytes copied within brokers).", ""]
    shown: Iterable[DirLoad] = loads if len(loads) <= ROWS_SHOWN else outside[:ROWS_SHOWN]
    if len(loads) > ROWS_SHOWN:
        lines += [f"Directories outside the band after the plan ({len(outside)}; all {len(loads)} "
                  "are within it otherwise):", ""]
    lines += ["| broker | log dir | bytes before | bytes after | band after | in band |",
              "|---|---|---|---|---|---|"]
    lines += [f"| {x.broker} | {x.log_dir} | {x.before} | {x.after} | {x.lo}-{x.hi} | "
              f"{'yes' if x.in_band else 'no'} |" for x in shown]
    lines.append("")
    if outside:
        names = ", ".join(f"broker {x.broker} {x.log_dir}" for x in outside[:ROWS_SHOWN // 20])
        more = f" and {len(outside) - ROWS_SHOWN // 20} more" if len(outside) > ROWS_SHOWN // 20 else ""
        lines += [f"Not reached for {names}{more}: the pass found no replica whose move between two directories "
                  "of the broker narrows the gap between them (each replica moves at most once; a search, "
                  "not a proof that no placement reaches the band).", ""]
    return lines


def _out_of_band_before(plan: Plan, loads: tuple[DirLoad, ...], fraction: Fraction) -> int:
    """Directories outside their broker's band before the plan (the band of the bytes then)."""
    by_broker: dict[int, list[DirLoad]] = {}
    for x in loads:
        by_broker.setdefault(x.broker, []).append(x)
    largest: dict[int, int] = {}
    for p in plan.before.partitions:
        for b in p.replicas:
            largest[b] = max(largest.get(b, 0), p.size_bytes or 0)
    count = 0
    for b, xs in by_broker.items():
        lo, hi = dir_band(sum(x.before for x in xs), len(xs), fraction, largest.get(b, 0))
        count += sum(not lo <= x.before <= hi for x in xs)
    return count
