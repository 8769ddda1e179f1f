"""How a plan is carried out safely: batches, the time they take, what they start from.

Goals
    Let an operator run a plan in steps that no broker feels: batches of reassignments in which
    no broker takes part in more than ``K`` replica moves and no batch copies more than ``B``
    bytes, with the time each takes under ``kafka-reassign-partitions.sh --throttle``; a
    fingerprint of the replicas the plan starts from, so that it is not executed on a cluster
    that moved since (``replica-assignor verify-plan``); a rollback that Kafka can execute.

Constraints
    - Every planned partition (``Plan.changed()``) is in exactly one batch.
    - A partition's *data moves* are the brokers that join its replica set (destinations) and
      those that leave it (sources). A broker *takes part* in a move as its destination, or as
      its source when it is alive (a dead or unknown broker, or a placeholder, sends nothing).
      With ``moves_per_broker = K`` no broker takes part in more than ``K`` moves of a batch.
      One partition never involves a broker twice, so any ``K >= 1`` can be met.
    - With ``bytes_per_batch = B`` a batch copies at most ``B`` bytes (``size_bytes`` per
      replica copied; unsized partitions copy 0), except a partition larger than ``B``,
      which gets a batch of its own.
    - With ``batch_size = N`` a batch holds at most ``N`` partitions.
    - A partition whose replica set is unchanged (only reordered: a new preferred leader) copies
      nothing; in each batch such reorders come after the data moves.
    - ``rollback.json`` may only name live brokers: a partition that started on a dead or
      unknown broker or a placeholder cannot be rolled back, only repaired again.

Algorithm
    First fit in plan order (so the first moves of the plan, the repairs, go first): each
    partition goes to the first batch where it fits, new batches opened as needed. Each broker
    remembers the first batch where it still has room, so a partition starts looking at the
    latest of its brokers' first batches. Then reorders fill the first batches with room.

    The time of a batch is that of its busiest broker: the larger of the bytes it receives and
    sends, divided by the throttle (Kafka throttles each broker's inbound and outbound
    replication traffic separately at that rate). The plan's time is the sum over its batches,
    so it lies between the busiest broker's bytes over the whole plan / throttle and all bytes /
    throttle.

Example
    Brokers 1-4, ``K = 1``, partitions ``a [1,2] -> [3,2]``, ``b [1,4] -> [2,4]``,
    ``c [3,4] -> [3,1]``: ``a`` involves 1 and 3, ``b`` 1 and 2, ``c`` 4 and 1. Broker 1 takes
    part in all three, so three batches: ``a``, ``b``, ``c``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.plan import Plan

__all__ = ["Batch", "Execution", "Limits", "applied", "drift", "execution", "fingerprint", "read_replicas"]


@dataclass(frozen=True, slots=True)
class Limits:
    """What one batch may hold (``None``: no limit)."""

    batch_size: int | None = None
    moves_per_broker: int | None = None
    bytes_per_batch: int | None = None

    def __post_init__(self) -> None:
        for name in ("batch_size", "moves_per_broker", "bytes_per_batch"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name.replace('_', '-')} must be >= 1, got {value}")

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.batch_size, self.moves_per_broker, self.bytes_per_batch))


@dataclass(frozen=True, slots=True)
class Batch:
    """One step: target replica lists (data moves first, then reorders) and what it costs."""

    partitions: tuple[PartitionEntry, ...]
    replica_moves: int
    bytes: int
    inbound: Mapping[int, int] = field(repr=False)    # bytes received per broker
    outbound: Mapping[int, int] = field(repr=False)   # bytes sent per (alive) broker
    moves: Mapping[int, int] = field(repr=False)      # moves each broker takes part in

    @property
    def busiest(self) -> tuple[int | None, int]:
        """``(broker, bytes)``: the broker with the most bytes in or out, and those bytes."""
        best: tuple[int | None, int] = (None, 0)
        for side in (self.inbound, self.outbound):
            for b, w in side.items():
                if w > best[1] or (w == best[1] and best[0] is not None and b < best[0]):
                    best = (b, w)
        return best

    def seconds(self, throttle: int) -> float:
        return self.busiest[1] / throttle


@dataclass(frozen=True, slots=True)
class Execution:
    """The batches of a plan and what an operator checks before and after running them."""

    batches: tuple[Batch, ...]
    limits: Limits
    throttle: int | None
    targets: tuple[PartitionEntry, ...]       # the planned partitions as the plan leaves them
    starting: tuple[PartitionEntry, ...]      # the same partitions as they are now
    rollback: tuple[PartitionEntry, ...]      # those of them on live brokers only
    not_rollbackable: tuple[PartitionEntry, ...]
    batches_lower_bound: int

    leader_changed: tuple[PartitionEntry, ...] = ()   # of them, those with a new preferred leader

    @property
    def bytes_moved(self) -> int:
        return sum(b.bytes for b in self.batches)

    @property
    def replica_moves(self) -> int:
        return sum(b.replica_moves for b in self.batches)

    @property
    def eta_seconds(self) -> float | None:
        if self.throttle is None:
            return None
        return sum(b.seconds(self.throttle) for b in self.batches)

    @property
    def fingerprint(self) -> str:
        return fingerprint({(p.topic, p.partition): p.replicas for p in self.starting})


def fingerprint(replicas: Mapping[tuple[str, int], Sequence[int]]) -> str:
    """sha256 (hex) of the sorted lines ``topic-partition:r1,r2,...`` (each ending in a newline)."""
    lines = sorted(f"{t}-{p}:{','.join(map(str, reps))}\n" for (t, p), reps in replicas.items())
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def execution(plan: Plan, limits: Limits = Limits(), throttle: int | None = None) -> Execution:
    """Batches of ``plan`` within ``limits`` (module doc); one batch when there are none."""
    if throttle is not None and throttle < 1:
        raise ValueError(f"throttle must be >= 1 byte/s, got {throttle}")
    targets = plan.changed()
    before = {(p.topic, p.partition): p for p in plan.before.partitions} if targets else {}
    live = frozenset(b.id for b in plan.before.brokers if b.alive)
    starting = tuple(before[(p.topic, p.partition)] for p in targets)
    rollback = tuple(p for p in starting if live.issuperset(p.replicas))
    not_rollbackable = tuple(p for p in starting if not live.issuperset(p.replicas))

    data: list[tuple[PartitionEntry, list[int], list[int], int]] = []   # entry, in, out, size
    reorders: list[PartitionEntry] = []
    for old, new in zip(starting, targets, strict=True):
        came = [b for b in new.replicas if b not in old.replicas]
        if not came:
            reorders.append(new)
            continue
        went = [b for b in old.replicas if b not in new.replicas and b in live]
        data.append((new, came, went, new.size_bytes or 0))

    leader_changed = tuple(new for old, new in zip(starting, targets, strict=True)
                           if old.replicas[0] != new.replicas[0])
    packer = _Packer(limits)
    for entry, came, went, size in data:
        packer.add(entry, came, went, size)
    for entry in reorders:
        packer.add(entry, [], [], 0)
    batches = packer.batches()
    return Execution(batches, limits, throttle, targets, starting, rollback, not_rollbackable,
                     _lower_bound(limits, data, len(targets)), leader_changed)


def _lower_bound(limits: Limits, data: Sequence[tuple[PartitionEntry, list[int], list[int], int]],
                 planned: int) -> int:
    """The fewest batches any packing needs."""
    if not planned:
        return 0
    bound = 1
    if limits.batch_size:
        bound = max(bound, -(-planned // limits.batch_size))
    if limits.moves_per_broker:
        involved: dict[int, int] = {}
        for _, came, went, _ in data:
            for b in (*came, *went):
                involved[b] = involved.get(b, 0) + 1
        bound = max(bound, -(-max(involved.values(), default=0) // limits.moves_per_broker))
    if limits.bytes_per_batch:   # a partition above the limit fills a batch of its own
        cap = limits.bytes_per_batch
        copies = [w * len(came) for _, came, _, w in data]
        alone = sum(1 for c in copies if c > cap)
        bound = max(bound, alone + -(-sum(c for c in copies if c <= cap) // cap))
    return bound


class _Open:
    """A batch being filled."""

    __slots__ = ("bytes", "data", "inbound", "moves", "outbound", "reorders", "replica_moves")

    def __init__(self) -> None:
        self.data: list[PartitionEntry] = []
        self.reorders: list[PartitionEntry] = []
        self.bytes = 0
        self.replica_moves = 0
        self.inbound: dict[int, int] = {}
        self.outbound: dict[int, int] = {}
        self.moves: dict[int, int] = {}

    def size(self) -> int:
        return len(self.data) + len(self.reorders)


class _Packer:
    """First fit (module doc), with each broker's first batch that has room."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.open: list[_Open] = []
        self.first_room: dict[int, int] = {}
        self.first_free = 0            # the first batch below the batch size

    def fits(self, batch: _Open, involved: Sequence[int], copy: int) -> bool:
        lim = self.limits
        if lim.batch_size is not None and batch.size() >= lim.batch_size:
            return False
        if (lim.bytes_per_batch is not None and copy and batch.bytes
                and batch.bytes + copy > lim.bytes_per_batch):
            return False
        k = lim.moves_per_broker
        return k is None or all(batch.moves.get(b, 0) < k for b in involved)

    def add(self, entry: PartitionEntry, came: Sequence[int], went: Sequence[int], size: int) -> None:
        involved = (*came, *went)
        copy = size * len(came)
        j = max((self.first_room.get(b, 0) for b in involved), default=0)
        j = max(j, self.first_free)
        while True:
            if j == len(self.open):
                self.open.append(_Open())
            if self.fits(self.open[j], involved, copy):
                break
            j += 1
        batch = self.open[j]
        (batch.data if came else batch.reorders).append(entry)
        batch.bytes += copy
        batch.replica_moves += len(came)
        for b in came:
            batch.inbound[b] = batch.inbound.get(b, 0) + size
        for b in went:
            batch.outbound[b] = batch.outbound.get(b, 0) + size
        k = self.limits.moves_per_broker
        for b in involved:
            batch.moves[b] = batch.moves.get(b, 0) + 1
            if k is not None:
                room = self.first_room.get(b, 0)
                while room < len(self.open) and self.open[room].moves.get(b, 0) >= k:
                    room += 1
                self.first_room[b] = room
        n = self.limits.batch_size
        if n is not None:
            while self.first_free < len(self.open) and self.open[self.first_free].size() >= n:
                self.first_free += 1

    def batches(self) -> tuple[Batch, ...]:
        return tuple(
            Batch(tuple(b.data + b.reorders), b.replica_moves, b.bytes, dict(sorted(b.inbound.items())),
                  dict(sorted(b.outbound.items())), dict(sorted(b.moves.items())))
            for b in self.open)


def read_replicas(text: str, where: str) -> dict[tuple[str, int], tuple[int, ...]]:
    """Replica lists from Kafka's reassignment JSON (version 1); ``ValueError`` naming ``where``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("partitions"), list):
        raise ValueError(f"{where}: not reassignment JSON (a 'partitions' list)")
    out: dict[tuple[str, int], tuple[int, ...]] = {}
    for n, p in enumerate(data["partitions"]):
        topic = p.get("topic") if isinstance(p, dict) else None
        part = p.get("partition") if isinstance(p, dict) else None
        reps = p.get("replicas") if isinstance(p, dict) else None
        if (not isinstance(topic, str) or not isinstance(part, int) or not isinstance(reps, list)
                or not all(isinstance(b, int) and not isinstance(b, bool) for b in reps)):
            raise ValueError(f"{where}: partitions[{n}] needs a 'topic', a 'partition' and 'replicas'")
        out[(topic, part)] = tuple(reps)
    return out


def drift(starting: Mapping[tuple[str, int], tuple[int, ...]], snapshot: ClusterSnapshot,
          targets: Mapping[tuple[str, int], tuple[int, ...]] | None = None) -> list[str]:
    """One line per planned partition whose replicas in ``snapshot`` differ from those the plan
    started from, sorted by topic and partition; empty when none drifted. With the plan's
    ``targets``, a partition at its planned replicas (order included) is no drift: the plan
    ran there, in part or in full (the rule of ``verify-plan`` and ``execute`` alike)."""
    now = {(p.topic, p.partition): p.replicas for p in snapshot.partitions}
    lines = []
    for (topic, part), reps in sorted(starting.items()):
        current = now.get((topic, part))
        if current == reps or (targets is not None and current is not None and current == targets.get((topic, part))):
            continue
        shown = "missing" if current is None else _list(current)
        lines.append(f"{topic}-{part}: planned from {_list(reps)}, now {shown}")
    return lines


def applied(targets: Mapping[tuple[str, int], tuple[int, ...]], snapshot: ClusterSnapshot) -> list[tuple[str, int]]:
    """The planned partitions already at their planned replicas (order included) in ``snapshot``."""
    now = {(p.topic, p.partition): p.replicas for p in snapshot.partitions}
    return sorted(k for k, reps in targets.items() if now.get(k) == reps)


def _list(replicas: Iterable[int]) -> str:
    return "[" + ", ".join(map(str, replicas)) + "]"
