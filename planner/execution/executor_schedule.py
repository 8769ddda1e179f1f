"""Which reassignments of a plan to start now: in-flight caps and an order, in memory.

Goals
    Keep every broker below a number of replica moves in flight while a plan runs, start the
    next move as soon as one finishes (not at batch boundaries), and start first what the
    operator asked first: partitions at or under their min ISR, the smallest, or plan order.

Constraints
    - A :class:`Reassignment` *involves* the brokers that join its replica set (destinations)
      and those that leave it (sources), as :mod:`kafka_replica_assignor.planner.execution.batches` counts them; a reorder
      (same replica set, new preferred leader) involves none.
    - With ``per_broker = K`` no broker is involved in more than ``K`` reassignments in
      flight (or its own cap, :meth:`Schedule.set_caps`, when the cap adapts); with ``concurrent = N`` at most ``N`` reassignments are in flight. Moves
      already in flight when the scheduler is made (a resumed execution) count, and may
      exceed a smaller cap: nothing new starts until they are below it.
    - With a byte budget (``bytes_per_broker = B``) a broker at its cap may still take a move
      while the bytes to copy of its moves in flight, this one included, stay within ``B``, and
      it is in fewer than ``SMALL_MOVES_MAX`` moves: small partitions are then bound by the
      throttle, not by Kafka's time per move. A broker whose moves in flight hold more than
      ``B`` (big partitions) gets no move beyond its cap: the cap stays the bound for those.
    - Every reassignment is started at most once; :meth:`Schedule.finish` frees its room.
    - Order: when :meth:`Schedule.start` starts a reassignment, every pending one before it
      in the order is blocked by a cap at that moment (greedy in order; a blocked move never
      holds back one that fits).

Algorithm
    The pending reassignments are sorted once by the order's key (ties in plan order). Each
    :meth:`Schedule.start` walks them and starts each one that fits, updating the in-flight
    counts as it goes; it stops early once the global cap is reached.

Example
    Brokers 1-4, ``K = 1``, plan order, ``a [1,2] -> [3,2]``, ``b [1,4] -> [2,4]``,
    ``c [2,4] -> [2,3]``: ``start()`` gives ``a`` (brokers 1, 3); ``b`` needs 1, ``c`` needs 3:
    both wait. ``finish(a)`` then ``start()`` gives ``b``, and ``c`` once ``a`` left broker 3,
    so both: ``[b, c]``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

__all__ = ["ORDERS", "SMALL_MOVES_MAX", "Reassignment", "Schedule", "order_key", "peak_load"]

#: moves in flight per broker, at most, beyond its cap under a byte budget (empty partitions
#: cost no bytes: the budget alone would not bound them)
SMALL_MOVES_MAX = 50

#: ``plan``: the plan's order; ``size``: smallest bytes to copy first; ``under-min-isr``:
#: partitions whose ISR is at or under their min.insync.replicas first, then plan order
ORDERS = ("plan", "size", "under-min-isr")


@dataclass(frozen=True, slots=True)
class Reassignment:
    """One partition's move from its starting replicas to its target replicas."""

    topic: str
    partition: int
    start: tuple[int, ...]
    target: tuple[int, ...]
    index: int = 0                 # position in the plan
    size_bytes: int = 0            # one replica's log size
    under_min_isr: bool = False    # ISR at or under min.insync.replicas when read

    def __post_init__(self) -> None:
        if not self.start or not self.target:
            raise ValueError(f"{self.name}: empty replica list")
        if len(set(self.target)) != len(self.target):
            raise ValueError(f"{self.name}: target lists a broker twice: {list(self.target)}")

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def destinations(self) -> tuple[int, ...]:
        return tuple(b for b in self.target if b not in self.start)

    @property
    def sources(self) -> tuple[int, ...]:
        return tuple(b for b in self.start if b not in self.target)

    @property
    def involved(self) -> tuple[int, ...]:
        return self.destinations + self.sources

    @property
    def bytes_to_copy(self) -> int:
        return self.size_bytes * len(self.destinations)


def order_key(order: str) -> Callable[[Reassignment], tuple[object, ...]]:
    if order == "plan":
        return lambda r: (r.index,)
    if order == "size":
        return lambda r: (r.bytes_to_copy, r.index)
    if order == "under-min-isr":
        return lambda r: (not r.under_min_isr, r.index)
    raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")


class Schedule:
    """The pending and in-flight reassignments of one execution (module doc)."""

    def __init__(self, pending: Iterable[Reassignment], *, per_broker: int | None = None,
                 concurrent: int | None = None, order: str = "plan",
                 in_flight: Iterable[Reassignment] = (), bytes_per_broker: int | None = None) -> None:
        for name, cap in (("per-broker cap", per_broker), ("concurrent cap", concurrent),
                          ("per-broker byte budget", bytes_per_broker)):
            if cap is not None and cap < 1:
                raise ValueError(f"{name} must be >= 1, got {cap}")
        self.per_broker = per_broker
        self.caps: dict[int, int] = {}       # broker -> its own cap, where one differs (adaptive)
        self.concurrent = concurrent
        self.order = order
        self._pending: list[Reassignment] = sorted(pending, key=order_key(order))
        self.in_flight: dict[tuple[str, int], Reassignment] = {}
        self.load: dict[int, int] = {}       # broker -> reassignments in flight involving it
        self.bytes_per_broker = bytes_per_broker
        self.bytes_load: dict[int, int] = {}  # broker -> bytes to copy of those
        seen = {r.key for r in self._pending}
        if len(seen) != len(self._pending):
            raise ValueError("a partition is scheduled twice")
        for r in in_flight:
            if r.key in seen or r.key in self.in_flight:
                raise ValueError(f"{r.name} is both pending and in flight")
            self._take(r)

    @property
    def pending(self) -> tuple[Reassignment, ...]:
        return tuple(self._pending)

    @property
    def done(self) -> bool:
        return not self._pending and not self.in_flight

    def fits(self, r: Reassignment) -> bool:
        """Whether ``r`` could start now without breaking a cap."""
        if self.concurrent is not None and len(self.in_flight) >= self.concurrent:
            return False
        k = self.per_broker
        if k is None:
            return True
        budget = self.bytes_per_broker
        for b in r.involved:
            load = self.load.get(b, 0)
            if load < self.caps.get(b, k):
                continue
            if (budget is None or load >= SMALL_MOVES_MAX
                    or self.bytes_load.get(b, 0) + r.bytes_to_copy > budget):
                return False
        return True

    def set_caps(self, caps: dict[int, int]) -> None:
        """Per-broker caps in place of ``per_broker`` for those brokers (new moves only: one in
        flight stays, as after a resume)."""
        if any(v < 1 for v in caps.values()):
            raise ValueError(f"a per-broker cap must be >= 1, got {caps}")
        self.caps = dict(caps)

    def start(self) -> list[Reassignment]:
        """The reassignments to submit now, in order; they count as in flight from here on."""
        started: list[Reassignment] = []
        kept: list[Reassignment] = []
        for i, r in enumerate(self._pending):
            if self.concurrent is not None and len(self.in_flight) >= self.concurrent:
                kept.extend(self._pending[i:])
                break
            if self.fits(r):
                self._take(r)
                started.append(r)
            else:
                kept.append(r)
        self._pending = kept
        return started

    def finish(self, key: tuple[str, int]) -> Reassignment:
        """Free the room of an in-flight reassignment (finished or cancelled)."""
        r = self.in_flight.pop(key)
        for b in r.involved:
            left = self.load[b] - 1
            if left:
                self.load[b] = left
                self.bytes_load[b] -= r.bytes_to_copy
            else:
                del self.load[b]
                del self.bytes_load[b]
        return r

    def put_back(self, keys: Iterable[tuple[str, int]]) -> None:
        """Return in-flight reassignments to the pending ones (their submission failed)."""
        key = order_key(self.order)
        self._pending.extend(self.finish(k) for k in keys)
        self._pending.sort(key=key)

    def drop_pending(self) -> tuple[Reassignment, ...]:
        """Give up the reassignments not started (a cancel or a stop); returns them."""
        dropped, self._pending = tuple(self._pending), []
        return dropped

    def _take(self, r: Reassignment) -> None:
        self.in_flight[r.key] = r
        for b in r.involved:
            self.load[b] = self.load.get(b, 0) + 1
            self.bytes_load[b] = self.bytes_load.get(b, 0) + r.bytes_to_copy


def peak_load(in_flight: Sequence[Reassignment]) -> dict[int, int]:
    """Reassignments in flight per broker (the figure the per-broker cap bounds)."""
    load: dict[int, int] = {}
    for r in in_flight:
        for b in r.involved:
            load[b] = load.get(b, 0) + 1
    return load
