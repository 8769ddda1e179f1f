"""KRaft's ``StripedReplicaPlacer``, exactly, behind the plug-in interface.

Goals (soft, in priority order)
    1. Spread the replicas of each partition across racks.
    2. Spread replicas across brokers, and avoid giving every partition the same replica set.
    3. Prefer unfenced brokers; fenced ones are used only when a rack has no unfenced broker
       left in the current round.

Constraints (hard)
    - No broker twice in one partition, so the replication factor is at most the number of
      brokers (fenced included).
    - The leader (first replica) is never a fenced broker.
    - Errors are Kafka's :class:`InvalidReplicationFactorError` messages, checked in Kafka's
      order: ``"Invalid replication factor {rf}: the replication factor must be positive."``,
      then ``"All brokers are currently fenced."``, then ``"The target replication factor of
      {rf} cannot be reached because only {n} broker(s) are registered."`` (:class:`RackList`
      itself checks the last two the other way round, as Kafka's does). These are the placer's
      own checks, kept with Kafka's words; the request-level rules (the replication factor of
      existing partitions only raised, their replicas on known brokers) are
      :mod:`kafka_replica_assignor.assignors.validate`'s, checked once by :func:`kafka_replica_assignor.assignors.base.place`.
    - Random draws come only from the injected ``rng`` (``rng.randrange(n)``, Java's
      ``nextInt(n)``) and :func:`java_shuffle`, in Kafka's order, so
      :class:`kafka_replica_assignor.assignors.java_random.JavaRandom` seeded like Kafka's ``java.util.Random`` gives
      Kafka's placements byte for byte (``tests/oracle`` compares them with Kafka's own code).

Algorithm
    A :class:`RackList` is built *afresh for every call* (so every call re-randomises):

    - brokers are grouped by rack (``None`` is a rack of its own), each :class:`Rack` holding
      a sorted :class:`BrokerList` of fenced and one of unfenced brokers;
    - the racks are initialised in Java ``HashMap`` iteration order (:func:`java_hash_order`),
      fenced list first: each non-empty list draws a random start ``offset``;
    - the rack names are sorted (``None`` first, then Java string order) and the rack list
      draws its own random ``offset``.

    A :class:`BrokerList` hands out each of its brokers once per *epoch*, starting one place
    further on every new epoch. For each partition, :meth:`RackList.place`:

    - when as many partitions as there are unfenced brokers have been placed since the last
      shuffle (and there is more than one unfenced broker), shuffles the rack names, then
      every rack's fenced and unfenced lists, and resets the epoch to 0;
    - takes the leader from the first rack, from ``offset`` on, that still has an unfenced
      broker in this epoch;
    - walks the racks round-robin from ``offset`` for the followers, skipping the leader's rack
      on its first visit only, taking unfenced brokers before fenced ones;
    - then advances the epoch and the offset by one.

    Partitions are placed in increasing id order. Partitions that already exist (their
    replication factor is being raised) keep their replicas as a prefix; after the new
    partitions are placed, each gets the striped order of *all* brokers for one more
    ``place`` and the missing replicas are taken from it, racks without a replica first
    (:func:`kafka_replica_assignor.assignors.default.extend_replicas`). Kafka's controller never raises a
    replication factor itself; this is our extension.

Example
    Racks A, B and C with three brokers each and every offset 0 give the "stripes"::

        partition 1: A0, B0, C0
        partition 2: B1, C1, A1
        partition 3: C2, A2, B2
"""

from __future__ import annotations

import random
from collections.abc import Iterable, MutableSequence, Sequence
from dataclasses import dataclass
from typing import TypeVar

from .base import ANONYMOUS, ReplicaAssignor
from .default import extend_replicas, java_string_key
from .errors import InvalidReplicationFactorError
from .model import Assignment, ClusterView

__all__ = [
    "BrokerList",
    "Rack",
    "RackList",
    "StripedReplicaAssignor",
    "UsableBroker",
    "java_hash_order",
    "java_shuffle",
]


@dataclass(frozen=True, slots=True)
class UsableBroker:
    """Kafka's ``UsableBroker``: a broker the controller may place on."""

    id: int
    rack: str | None = None
    fenced: bool = False


_T = TypeVar("_T")


def java_shuffle(items: MutableSequence[_T], rng: random.Random) -> None:
    """``Collections.shuffle(list, random)``: for i from size down to 2, swap(i-1, nextInt(i))."""
    for i in range(len(items), 1, -1):
        j = rng.randrange(i)
        items[i - 1], items[j] = items[j], items[i - 1]


def _java_string_hash(value: str) -> int:
    h = 0
    data = value.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def java_hash_order(racks: Sequence[str | None]) -> list[str | None]:
    """The iteration order of a ``java.util.HashMap<Optional<String>, _>`` filled in ``racks`` order.

    Distinct keys. Bucket ``(h ^ (h >>> 16)) & (capacity - 1)`` with ``h = Optional.hashCode()``
    (0 when empty, else ``String.hashCode()``); a new key goes to the end of its bucket. The
    table (16 buckets) doubles when the size passes 3/4 of it, and also when a key joins a
    bucket that already holds 8 keys while the table has fewer than 64 buckets (``treeifyBin``
    resizes instead of building a tree); a doubling splits every bucket in two, keeping the
    keys' order. Not modelled: a bucket of 9 or more keys in a table of 64 buckets or more,
    which Java turns into a red-black tree (its order then depends on the tree's root, and on
    identity hash codes when the hashes are equal); only rack names built to collide get there.
    """
    capacity = 16
    table: list[list[str | None]] = [[] for _ in range(capacity)]

    def spread(rack: str | None) -> int:
        h = 0 if rack is None else _java_string_hash(rack)
        return h ^ (h >> 16)

    def doubled(old: list[list[str | None]]) -> list[list[str | None]]:
        grown: list[list[str | None]] = [[] for _ in range(2 * len(old))]
        for bucket in old:  # every new bucket is fed by one old bucket, in its order
            for rack in bucket:
                grown[spread(rack) & (len(grown) - 1)].append(rack)
        return grown

    for size, rack in enumerate(racks, start=1):
        bucket = table[spread(rack) & (len(table) - 1)]
        bucket.append(rack)
        if len(bucket) > 8 and len(table) < 64:  # treeifyBin on a small table: a resize
            table = doubled(table)
        if size > len(table) * 3 // 4:
            table = doubled(table)
    return [rack for bucket in table for rack in bucket]


def _rack_sort_key(rack: str | None) -> tuple[bool, bytes]:
    """Kafka's ``OptionalStringComparator``: empty first, then Java string order."""
    return (rack is not None, b"" if rack is None else java_string_key(rack))


class BrokerList:
    """Brokers handed out once per epoch, one place further on at each new epoch."""

    __slots__ = ("brokers", "index", "offset", "epoch")

    def __init__(self, brokers: Iterable[int] = ()) -> None:
        self.brokers: list[int] = list(brokers)
        self.index = 0
        self.offset = 0
        self.epoch = 0

    def initialize(self, rng: random.Random) -> None:
        if self.brokers:
            self.brokers.sort()
            self.offset = rng.randrange(len(self.brokers))

    def shuffle(self, rng: random.Random) -> None:
        java_shuffle(self.brokers, rng)

    def next(self, epoch: int) -> int:
        """The next broker of this epoch, or -1 when the epoch has used them all."""
        size = len(self.brokers)
        if size == 0:
            return -1
        if self.epoch != epoch:
            self.epoch = epoch
            self.index = 0
            self.offset = (self.offset + 1) % size
        if self.index >= size:
            return -1
        broker = self.brokers[(self.index + self.offset) % size]
        self.index += 1
        return broker


class Rack:
    """A rack: its fenced and its unfenced brokers."""

    __slots__ = ("fenced", "unfenced")

    def __init__(self) -> None:
        self.fenced = BrokerList()
        self.unfenced = BrokerList()

    def initialize(self, rng: random.Random) -> None:
        self.fenced.initialize(rng)
        self.unfenced.initialize(rng)

    def shuffle(self, rng: random.Random) -> None:
        self.fenced.shuffle(rng)
        self.unfenced.shuffle(rng)

    def next_unfenced(self, epoch: int) -> int:
        return self.unfenced.next(epoch)

    def next(self, epoch: int) -> int:
        result = self.unfenced.next(epoch)
        return result if result >= 0 else self.fenced.next(epoch)


def _check_positive(replication_factor: int) -> None:
    if replication_factor <= 0:
        raise InvalidReplicationFactorError(
            f"Invalid replication factor {replication_factor}: the replication factor must be positive."
        )


def _check_some_unfenced(unfenced: int) -> None:
    if unfenced == 0:
        raise InvalidReplicationFactorError("All brokers are currently fenced.")


def _check_enough(replication_factor: int, total: int) -> None:
    if replication_factor > total:
        raise InvalidReplicationFactorError(
            f"The target replication factor of {replication_factor} cannot be reached "
            f"because only {total} broker(s) are registered."
        )


class RackList:
    """The racks of one placement call, with the rack offset and the iteration epoch."""

    __slots__ = ("rng", "racks", "rack_names", "hash_order", "total_brokers", "unfenced_brokers",
                 "epoch", "offset")

    def __init__(self, rng: random.Random, brokers: Iterable[UsableBroker]) -> None:
        self.rng = rng
        self.racks: dict[str | None, Rack] = {}
        total = unfenced = 0
        for broker in brokers:
            rack = self.racks.get(broker.rack)
            if rack is None:
                rack = self.racks[broker.rack] = Rack()
            if broker.fenced:
                rack.fenced.brokers.append(broker.id)
            else:
                unfenced += 1
                rack.unfenced.brokers.append(broker.id)
            total += 1
        self.hash_order = [self.racks[name] for name in java_hash_order(list(self.racks))]
        for rack in self.hash_order:
            rack.initialize(rng)
        self.rack_names: list[str | None] = sorted(self.racks, key=_rack_sort_key)
        self.total_brokers = total
        self.unfenced_brokers = unfenced
        self.epoch = 0
        self.offset = rng.randrange(len(self.rack_names)) if self.rack_names else 0

    def shuffle(self) -> None:
        java_shuffle(self.rack_names, self.rng)
        for rack in self.hash_order:
            rack.shuffle(self.rng)

    def place(self, replication_factor: int) -> list[int]:
        """The replicas of the next partition (leader first)."""
        _check_positive(replication_factor)
        _check_enough(replication_factor, self.total_brokers)
        _check_some_unfenced(self.unfenced_brokers)
        if self.epoch == self.unfenced_brokers and self.unfenced_brokers > 1:
            self.shuffle()
            self.epoch = 0
        names = self.rack_names
        n_racks = len(names)
        if self.offset == n_racks:
            self.offset = 0
        epoch = self.epoch
        racks = self.racks
        first = self.offset
        while True:
            result = racks[names[first]].next_unfenced(epoch)
            if result >= 0:
                break
            first += 1
            if first == n_racks:
                first = 0
        brokers = [result]
        index = self.offset
        for _ in range(1, replication_factor):
            result = -1
            while result < 0:
                if index == first:
                    first = -1
                else:
                    result = racks[names[index]].next(epoch)
                index += 1
                if index == n_racks:
                    index = 0
            brokers.append(result)
        self.epoch += 1
        self.offset += 1
        return brokers


class StripedReplicaAssignor(ReplicaAssignor):
    """KRaft's striped placement (see the module docstring); fenced brokers come from ``cluster.fenced``."""

    name = "striped"

    def assign_replicas_to_brokers(
        self,
        topic_name: str | None,
        partitions: Sequence[int],
        replication_factor: int,
        cluster: ClusterView,
        principal: str = ANONYMOUS,
        *,
        rng: random.Random,
    ) -> Assignment:
        usable = [UsableBroker(b.id, b.rack, b.id in cluster.fenced) for b in cluster.brokers]
        rack_list = RackList(rng, usable)
        _check_positive(replication_factor)
        _check_some_unfenced(rack_list.unfenced_brokers)
        _check_enough(replication_factor, rack_list.total_brokers)
        current = cluster.topic_assignment(topic_name)
        requested = sorted(set(partitions))
        out: Assignment = {}
        for p in requested:
            if p not in current:
                out[p] = rack_list.place(replication_factor)
        raised = [p for p in requested if p in current]
        if raised:
            rack_of = {b.id: b.rack for b in cluster.brokers} if cluster.has_racks else None
            everyone = len(usable)
            for p in raised:
                out[p] = extend_replicas(current[p], rack_list.place(everyone), replication_factor, rack_of)
        return {p: out[p] for p in requested}
