"""Memoized placements: small answers computed and validated once per distinct draw.

Goals
    A server answering thousands of small requests over one cluster (automation creating
    topics of the same shape) should not recompute, revalidate and re-encode the same
    placement every time, while every request still gets its own random draws, exactly as
    without the memo.

Constraints
    - The plug-in interface does not grow: an assignor takes part only if it also is a
      :class:`MemoizableAssignor` (an optional capability, declared by inheriting it). For
      the others, which are never asked to draw, and for requests an assignor's ``draw``
      declines, nothing changes.
    - A hit returns exactly what :func:`kafka_replica_assignor.assignors.base.place` would have returned with the
      same ``rng`` state (the property tests compare both paths draw for draw).
    - An entry is validated by :func:`validate_assignment` when it is computed; the key holds
      the exact broker layout it was validated against, so a hit needs no new check.
    - Bounded: only placements of at most ``max_replicas`` replicas, at most ``max_entries``
      entries (oldest evicted first). Entries are read-only; callers must not mutate them.
    - Fenced brokers: the draws are made on the view the framework places on
      (:func:`kafka_replica_assignor.assignors.fencing.assignment_view`: the unfenced brokers); a request
      they are too few for (the framework's fallback) is placed the ordinary way.

Algorithm
    For a :class:`MemoizableAssignor`, ``key = assignor.draw(...)``; on a miss,
    ``assignor.assign_drawn(key, ...)`` inside the framework of every placement (the shared
    request checks, then validation: :func:`kafka_replica_assignor.assignors.base.framework`), then the entry is
    stored. Other layers may attach derived data (the encoded response) to an
    entry through :meth:`MemoEntry.derived`.

Example
    Six brokers, 12 partitions, RF 3 under the default assignor: Kafka's two draws give 36
    possible answers, so after 36 distinct draws every request is a dictionary lookup.
"""

from __future__ import annotations

import abc
import random
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from .base import ANONYMOUS, PlacementSpec, ReplicaAssignor, framework
from .fencing import assignment_view
from .model import Assignment, ClusterView

__all__ = ["MemoEntry", "MemoizableAssignor", "PlacementMemo"]


class MemoizableAssignor:
    """The optional capability the memo uses: an assignor whose answer is a pure function of
    a few random draws and a small part of its input.

    A :class:`ReplicaAssignor` declares it by also inheriting this class
    (``class MyAssignor(ReplicaAssignor, MemoizableAssignor)``) and implementing both methods;
    a plug-in that does not is placed the ordinary way and never asked to draw.

    A plain class, not an ``abc.ABC``: the memo checks it with ``isinstance`` on every
    small request, and against an ABC that check runs Python code (about 1% of such a
    request's instructions, ``bench/request_cost.py --callgrind``). mypy still refuses a
    subclass that leaves a method out; at run time a stub left in place is harmless
    (``draw`` declines, an answer from ``assign_drawn`` is validated and refused).
    """

    @abc.abstractmethod
    def draw(
        self,
        topic_name: str | None,
        partitions: Sequence[int],
        replication_factor: int,
        cluster: ClusterView,
        *,
        rng: random.Random,
    ) -> Hashable | None:
        """Make this request's random draws and return a key its answer is a pure function of.

        The key holds everything the answer depends on; ``assign_drawn(key, ...)`` must
        return exactly what ``assign_replicas_to_brokers`` would have returned with the same
        ``rng``. Return None, *without drawing*, where that does not hold: the request is
        then placed the ordinary way, with the ``rng`` untouched.
        """

    @abc.abstractmethod
    def assign_drawn(
        self,
        key: Hashable,
        topic_name: str | None,
        partitions: Sequence[int],
        replication_factor: int,
        cluster: ClusterView,
    ) -> Mapping[int, Sequence[int]]:
        """The answer for a key returned by :meth:`draw` (only called for such keys)."""


class MemoEntry:
    """One validated placement, and data derived from it by other layers (read-only)."""

    __slots__ = ("assignment", "_derived")

    def __init__(self, assignment: Assignment) -> None:
        self.assignment = assignment
        self._derived: dict[Hashable, Any] = {}

    def derived(self, key: Hashable, make: Callable[[Assignment], Any]) -> Any:
        """``make(assignment)``, computed once per ``key`` (e.g. the encoded body per version)."""
        value = self._derived.get(key)
        if value is None:
            value = self._derived[key] = make(self.assignment)
        return value


class PlacementMemo:
    """A bounded memo of validated placements, keyed by the assignor's draws."""

    def __init__(self, max_entries: int = 4096, max_replicas: int = 1024) -> None:
        self.max_entries = max_entries
        self.max_replicas = max_replicas
        self._entries: dict[tuple[MemoizableAssignor, Hashable], MemoEntry] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def place(
        self,
        assignor: ReplicaAssignor,
        spec: PlacementSpec,
        cluster: ClusterView,
        principal: str = ANONYMOUS,
        *,
        rng: random.Random,
    ) -> MemoEntry | None:
        """The entry for this request, or None when it must be placed the ordinary way.

        None is returned before any draw is made, so the caller can still call
        :func:`kafka_replica_assignor.assignors.base.place` with the same ``rng`` and get the same answer; always
        for an assignor that is not a :class:`MemoizableAssignor`. A new entry goes through
        the same framework as :func:`kafka_replica_assignor.assignors.base.place` (:func:`kafka_replica_assignor.assignors.base.framework`).
        """
        partitions, replication_factor = spec.partitions, spec.replication_factor
        if (self.max_entries <= 0 or len(partitions) * replication_factor > self.max_replicas
                or not isinstance(assignor, MemoizableAssignor)):
            return None
        view = assignment_view(cluster, replication_factor)  # where the framework places it
        if view is None:  # too few unfenced brokers: the framework's fallback, the ordinary way
            return None
        draw = assignor.draw(spec.topic_name, partitions, replication_factor, view, rng=rng)
        if draw is None:
            return None
        key = (assignor, draw)
        entry = self._entries.get(key)
        if entry is not None:
            self.hits += 1
            return entry
        self.misses += 1
        # the framework places on the same view the draw was made on (assignment_view's)
        entry = MemoEntry(framework(assignor, spec, cluster, lambda ids, rf, placed_on: assignor.assign_drawn(
            draw, spec.topic_name, ids, rf, placed_on)))
        entries = self._entries
        while len(entries) >= self.max_entries:
            entries.pop(next(iter(entries)), None)
        entries[key] = entry
        return entry
