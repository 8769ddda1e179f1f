"""The per-broker cap that follows what the brokers sustain: additive increase, multiplicative decrease.

Goals
    Run as many moves at once as each broker can carry, and no more: a fixed ``K`` is either
    too low for many small partitions (per-move latency, not bytes, bounds the run) or too high
    for a broker that falls behind. Cruise Control's executor does the same with its
    concurrency adjuster: it raises the movement concurrency by a step while the brokers'
    health signals stay within limits, divides it when one is past its limit, and stops
    raising while partitions are at or under their ``min.insync.replicas``.

Constraints
    - One cap per broker, between ``floor`` and ``ceiling``, starting at the plan's ``K``;
      :class:`kafka_replica_assignor.planner.execution.executor_schedule.Schedule` applies it
      to new moves only (a move in flight is never stopped to meet a lower cap).
    - A broker is **behind** when a partition it holds is out of its ISR there (its replica
      is not in sync; the adding replicas of moves in flight do not count: they are catching
      up by design), or when one of its moves in flight has run longer than ``slow_s`` plus
      twice its bytes over the throttle. Its cap is divided by ``divide_by`` (not under the
      floor).
    - A broker **keeps up** when it is not behind, a move involving it finished since the last
      look, and every such move finished within ``fast_s`` plus its bytes over the throttle.
      Its cap rises by ``step`` (not over the ceiling), and only while no partition of the
      cluster is at or under its ``min.insync.replicas``.
    - Otherwise its cap stays. The decision is a pure function of what it is given
      (:func:`adjust`): the executor reads the ISR and the ages, this module decides.

Algorithm
    Every look (:class:`Adjuster.look`): for each broker, behind → divide; keeps up and the
    cluster whole → add; else keep. Changes are returned with their reason, to be said.

Example
    ``floor 1, ceiling 8, step 1, divide_by 2``; caps ``{1: 4, 2: 4}``; broker 1 finished two
    moves in 3 s each (``fast_s`` 10), broker 2 holds a partition out of ISR: caps become
    ``{1: 5, 2: 2}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kafka_replica_assignor.planner.execution.executor_schedule import Reassignment

__all__ = ["Adjuster", "CapBounds", "Look", "adjust"]


@dataclass(frozen=True, slots=True)
class CapBounds:
    """How the cap may move (one value, from the command line)."""

    floor: int = 1
    ceiling: int = 20
    step: int = 1
    divide_by: int = 2
    fast_s: float = 10.0          # a move finishing within this (plus its bytes at the throttle) is fast
    slow_s: float = 120.0         # a move in flight longer than this (plus twice that) is slow
    every_s: float = 2.0          # how often the executor looks

    def __post_init__(self) -> None:
        if not 1 <= self.floor <= self.ceiling:
            raise ValueError(f"the cap's floor must be 1 or more and at most its ceiling, got {self.floor}, "
                             f"{self.ceiling}")
        if self.step < 1 or self.divide_by < 2:
            raise ValueError("the cap's step must be 1 or more and its divisor 2 or more")


@dataclass(frozen=True, slots=True)
class Look:
    """What the executor saw since the last look."""

    finished: tuple[tuple[Reassignment, float], ...] = ()        # moves finished, with their seconds
    in_flight: tuple[tuple[Reassignment, float], ...] = ()       # moves in flight, with their age
    out_of_isr: frozenset[int] = frozenset()     # brokers holding a replica out of ISR (not an adding one)
    at_min_isr: int = 0                          # partitions at or under min.insync.replicas
    throttle: int | None = None


def _budget(r: Reassignment, base_s: float, factor: float, throttle: int | None) -> float:
    return base_s + (factor * r.bytes_to_copy / throttle if throttle else 0.0)


def adjust(caps: Mapping[int, int], look: Look, bounds: CapBounds) -> dict[int, tuple[int, str]]:
    """The brokers whose cap changes: ``broker -> (new cap, why)`` (module doc)."""
    behind: dict[int, str] = {b: "a replica out of ISR" for b in look.out_of_isr}
    for r, age in look.in_flight:
        if age > _budget(r, bounds.slow_s, 2.0, look.throttle):
            for b in r.involved:
                behind.setdefault(b, f"{r.name} in flight for {age:.0f} s")
    fast: dict[int, bool] = {}
    for r, took in look.finished:
        quick = took <= _budget(r, bounds.fast_s, 1.0, look.throttle)
        for b in r.involved:
            fast[b] = fast.get(b, True) and quick
    changes: dict[int, tuple[int, str]] = {}
    for b, cap in caps.items():
        if b in behind:
            new = max(bounds.floor, cap // bounds.divide_by)
            why = f"behind: {behind[b]}"
        elif fast.get(b) and not look.at_min_isr:
            new = min(bounds.ceiling, cap + bounds.step)
            why = "moves finish fast, ISR whole"
        else:
            continue
        if new != cap:
            changes[b] = (new, why)
    return changes


@dataclass
class Adjuster:
    """The caps of one execution and when they were last looked at."""

    bounds: CapBounds
    start: int
    caps: dict[int, int] = field(default_factory=dict)
    finished: list[tuple[Reassignment, float]] = field(default_factory=list)

    def cap(self, broker: int) -> int:
        return self.caps.get(broker, self.start)

    def note_finished(self, moves: Iterable[tuple[Reassignment, float]]) -> None:
        self.finished.extend(moves)

    def look(self, brokers: Iterable[int], in_flight: Iterable[tuple[Reassignment, float]],
             out_of_isr: Iterable[int], at_min_isr: int, throttle: int | None) -> dict[int, tuple[int, str]]:
        """Adjust the caps of ``brokers`` (module doc); the changes, applied."""
        caps = {b: self.cap(b) for b in brokers}
        look = Look(tuple(self.finished), tuple(in_flight), frozenset(out_of_isr), at_min_isr, throttle)
        self.finished.clear()
        changes = adjust(caps, look, self.bounds)
        for b, (new, _) in changes.items():
            self.caps[b] = new
        return changes
