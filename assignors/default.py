"""Kafka's classic replica assignment (``AdminUtils.assignReplicasToBrokers``), exactly.

Goals
    The same answer as Kafka for the same inputs, so operators can trust it:

    - spread the replicas evenly among brokers;
    - for the partitions led by one broker, spread their followers over the other brokers;
    - when every broker has a rack, put the replicas of a partition on different racks
      whenever possible.

Constraints
    - Validation order and messages are Kafka's: partitions > 0
      (:class:`InvalidPartitionsError`), then 0 < replication factor <= brokers
      (:class:`InvalidReplicationFactorError`), then rack information complete. The first
      three are :mod:`kafka_replica_assignor.assignors.validate`'s, checked once by :func:`kafka_replica_assignor.assignors.base.place` for
      :class:`DefaultReplicaAssignor` (which assumes valid input) and by
      :func:`assign_replicas_to_brokers` itself, Kafka's own entry point. A cluster
      where some brokers have a rack and some have none raises :class:`ReplicaAssignorError`
      with Kafka's message (KIP-660: REPLICA_ASSIGNOR_FAILED instead of Kafka's silent
      UNKNOWN_SERVER_ERROR).
    - :func:`assign_replicas_to_brokers` uses the brokers in the order given, as Kafka does;
      :class:`DefaultReplicaAssignor` sorts them by id first, as Kafka's ZooKeeper callers do.
    - Randomness comes only from the injected ``rng``: ``rng.randrange(n)`` for the start
      index, then ``rng.randrange(n)`` for the replica shift (Kafka's two ``nextInt(n)``).

Algorithm
    *Rack-unaware.* With ``L`` the broker list (``n`` brokers), ``start`` and ``shift`` either
    both ``fixed_start_index`` or two random draws, and partition ids from
    ``p = max(0, start_partition_id)`` upwards: before partition ``p`` with ``p > 0`` and
    ``p % n == 0`` the shift grows by one; the leader is ``L[(p + start) % n]`` and follower
    ``j`` (0-based) is ``L[(first + 1 + (shift + j) % (n - 1)) % n]``.

    *Rack-aware.* The brokers are first arranged in the rack-alternated list ``A``
    (:func:`rack_alternated_broker_list`); leaders go round-robin over ``A`` as above. The
    followers of a partition are found by one probe counter ``k`` per partition, probing
    ``A[(first + 1 + (shift * #racks + k) % (n - 1)) % n]`` with ``k = 0, 1, ...``: a broker
    is taken when its rack has no replica yet (or every rack has one) and it holds no replica
    yet (or every broker has one).

    *Continuation* (:class:`DefaultReplicaAssignor`, a topic that already has partitions):

    - new partition ids use Kafka's add-partitions semantics: ``fixed_start_index`` is the index,
      in the id-sorted broker list, of the first broker whose id is >= the current leader of
      partition 0 (0 when there is none); ``start_partition_id`` is the current partition
      count (or the lowest new id, if that is smaller); the replication factor is the
      requested one. Partition 0 must exist (Kafka's "partition id 0 is missing" error).
    - partitions that already exist (their replication factor is being raised) keep their
      current replicas, in order, as a prefix. The extra replicas come from the Kafka order
      of that partition: the assignment Kafka would give it with the same continuation start
      index and a replication factor of *all* brokers. Brokers already present are skipped;
      brokers on racks that hold no replica yet are taken first (as Kafka's probe does), and
      only when no unused rack is left are the skipped brokers taken, in the same order.

    Partition ids that are not consecutive are placed exactly as Kafka would place them in
    one consecutive run from the lowest id (the shift for id ``p`` is computed in closed
    form), and only the requested ids are returned.

Example
    Kafka's Javadoc: brokers ``0 -> rack1, 1 -> rack3, 2 -> rack3, 3 -> rack2, 4 -> rack2,
    5 -> rack1`` give the alternated list ``[0, 3, 1, 5, 4, 2]``; 7 partitions with
    replication factor 3 and ``fixed_start_index=0`` give::

        partition  replicas      partition  replicas
        0          [0, 3, 1]     4          [4, 2, 0]
        1          [3, 1, 5]     5          [2, 0, 3]
        2          [1, 5, 4]     6          [0, 4, 2]   (shift grew: not [0, 3, 1] again)
        3          [5, 4, 2]
"""

from __future__ import annotations

import functools
import random
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import cast

from .base import ANONYMOUS, ReplicaAssignor
from .errors import ReplicaAssignorError
from .memo import MemoizableAssignor
from .model import Assignment, BrokerMetadata, ClusterView
from .validate import check_counts

MIXED_RACKS_MESSAGE = "Not all brokers have rack information for replica rack aware assignment."

__all__ = [
    "MIXED_RACKS_MESSAGE",
    "DefaultReplicaAssignor",
    "assign_replicas_to_brokers",
    "extend_replicas",
    "java_string_key",
    "rack_alternated_broker_list",
]


def java_string_key(value: str) -> bytes:
    """A sort key giving Java's ``String.compareTo`` order (UTF-16 code units)."""
    return value.encode("utf-16-be", "surrogatepass")


def rack_alternated_broker_list(rack_by_broker: Mapping[int, str]) -> list[int]:
    """Kafka's ``getRackAlternatedBrokerList``: brokers interleaved rack by rack.

    Racks in (Java) string order, brokers sorted by id inside each rack; one broker from
    each rack per round, skipping racks that are used up. Independent of the input order.

    >>> rack_alternated_broker_list({0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"})
    [0, 3, 1, 5, 4, 2]
    """
    by_rack: dict[str, list[int]] = {}
    for broker, rack in rack_by_broker.items():
        by_rack.setdefault(rack, []).append(broker)
    columns = [sorted(by_rack[rack]) for rack in sorted(by_rack, key=java_string_key)]
    out: list[int] = []
    depth = max((len(c) for c in columns), default=0)
    for round_index in range(depth):
        for column in columns:
            if round_index < len(column):
                out.append(column[round_index])
    return out


def _rack_aware(brokers: Sequence[BrokerMetadata]) -> bool:
    """True when every broker has a rack, False when none has; Kafka's error otherwise."""
    with_rack = sum(1 for b in brokers if b.rack is not None)
    if with_rack == 0:
        return False
    if with_rack != len(brokers):
        raise ReplicaAssignorError(MIXED_RACKS_MESSAGE)
    return True


def _runs(ids: Sequence[int], n: int) -> Iterable[tuple[int, int]]:
    """Split sorted distinct ids into runs of consecutive ids with the same ``id // n``.

    Yields ``(first_id, length)``.
    """
    if isinstance(ids, range) and ids.step == 1:
        a, stop = ids.start, ids.stop
        while a < stop:
            end = min(stop, (a // n + 1) * n)
            yield a, end - a
            a = end
        return
    it = iter(ids)
    first = next(it, None)
    if first is None:
        return
    a = prev = first
    for p in it:
        if p != prev + 1 or p % n == 0:
            yield a, prev - a + 1
            a = p
        prev = p
    yield a, prev - a + 1


def _assign_unaware(
    broker_ids: list[int], ids: Sequence[int], rf: int, start: int, shift0: int, p0: int
) -> Assignment:
    n = len(broker_ids)
    nm1 = n - 1
    tripled = broker_ids * 3  # every index below is < 3n: no modulo in the hot path
    base_q = (max(p0, 1) - 1) // n
    out: Assignment = {}
    for a, length in _runs(ids, n):
        shift = shift0 + a // n - base_q
        first = (a + start) % n
        offsets = [0] + [1 + (shift + j) % nm1 for j in range(rf - 1)]
        columns = [tripled[first + o:first + o + length] for o in offsets]
        # a run stays inside one block of n ids (length <= n) and first + o + length < 3n: every
        # column holds exactly ``length`` brokers
        out.update(zip(range(a, a + length), map(list, zip(*columns, strict=True)), strict=True))
    return out


@functools.lru_cache(maxsize=32)
def _aware_layout(pairs: tuple[tuple[int, str], ...]) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """The rack-alternated list, each position's rack index, and the rack count.

    A pure function of the brokers, cached: a server answering many small requests over the
    same cluster computes it once.
    """
    rack_of = dict(pairs)
    alternated = rack_alternated_broker_list(rack_of)
    rack_index = {r: i for i, r in enumerate(sorted(set(rack_of.values()), key=java_string_key))}
    return tuple(alternated), tuple(rack_index[rack_of[b]] for b in alternated), len(rack_index)


def _assign_aware(
    alternated: tuple[int, ...], racks: tuple[int, ...], n_racks: int, ids: Sequence[int], rf: int,
    start: int, shift0: int, p0: int,
) -> Assignment:
    n = len(alternated)
    nm1 = n - 1
    brokers2 = alternated * 2  # probe positions are first + 1 .. first + n - 1 < 2n
    racks2 = racks * 2
    rack_stamp = [-1] * n_racks  # rack_stamp[r] == p: rack r already holds a replica of p
    broker_stamp = [-1] * n  # same, per position of the alternated list
    base_q = (max(p0, 1) - 1) // n
    followers = rf - 1
    simple = rf <= n_racks  # every follower needs a new rack; that also excludes repeats
    out: Assignment = {}
    for a, length in _runs(ids, n):
        shift = shift0 + a // n - base_q
        first = (a + start) % n
        k0 = (shift * n_racks) % nm1 if followers else 0
        for p in range(a, a + length):
            rack_stamp[racks[first]] = p
            row = [alternated[first]]
            if followers:
                k = k0
                need = followers
                base = first + 1
                if simple:
                    while need:
                        pos = base + k
                        k += 1
                        if k == nm1:
                            k = 0
                        r = racks2[pos]
                        if rack_stamp[r] != p:
                            rack_stamp[r] = p
                            row.append(brokers2[pos])
                            need -= 1
                else:
                    broker_stamp[first] = p
                    used_racks = 1
                    used_brokers = 1
                    while need:
                        pos = base + k
                        k += 1
                        if k == nm1:
                            k = 0
                        r = racks2[pos]
                        new_rack = rack_stamp[r] != p
                        if new_rack or used_racks == n_racks:
                            q = pos - n if pos >= n else pos
                            if broker_stamp[q] != p or used_brokers == n:
                                if new_rack:
                                    rack_stamp[r] = p
                                    used_racks += 1
                                if broker_stamp[q] != p:
                                    broker_stamp[q] = p
                                    used_brokers += 1
                                row.append(brokers2[pos])
                                need -= 1
            out[p] = row
            first += 1
            if first == n:
                first = 0
    return out


def _draw(n: int, fixed_start_index: int, rng: random.Random | None) -> tuple[int, int]:
    """(start index, initial shift): both ``fixed_start_index``, or Kafka's two draws."""
    if fixed_start_index >= 0:
        return fixed_start_index, fixed_start_index
    rng = rng if rng is not None else random.Random()
    start = rng.randrange(n)
    return start, rng.randrange(n)


def _assign(
    brokers: Sequence[BrokerMetadata], rack_aware: bool, ids: Sequence[int], rf: int,
    fixed_start_index: int, p0: int, rng: random.Random | None,
) -> Assignment:
    """The core, for validated input and sorted distinct ids >= p0 >= 0."""
    start, shift = _draw(len(brokers), fixed_start_index, rng)
    return _assign_drawn(brokers, rack_aware, ids, rf, start, shift, p0)


def _assign_drawn(
    brokers: Sequence[BrokerMetadata], rack_aware: bool, ids: Sequence[int], rf: int,
    start: int, shift: int, p0: int,
) -> Assignment:
    if rack_aware:
        order, racks, n_racks = _aware_layout(tuple((b.id, b.rack) for b in brokers))
        return _assign_aware(order, racks, n_racks, ids, rf, start, shift, p0)
    return _assign_unaware([b.id for b in brokers], ids, rf, start, shift, p0)


def assign_replicas_to_brokers(
    brokers: Sequence[BrokerMetadata],
    n_partitions: int,
    replication_factor: int,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rng: random.Random | None = None,
) -> Assignment:
    """Kafka's ``AdminUtils.assignReplicasToBrokers``, with the same semantics and errors.

    Returns ``{partition: [leader, follower, ...]}`` for partitions
    ``max(0, start_partition_id) .. + n_partitions - 1``. ``brokers`` are used in the given
    order. ``fixed_start_index >= 0`` fixes both the start index and the initial shift;
    otherwise both are drawn from ``rng`` (a fresh ``random.Random()`` when None).
    """
    brokers = list(brokers)
    check_counts(n_partitions, replication_factor, len(brokers))
    rack_aware = _rack_aware(brokers)
    p0 = max(0, start_partition_id)
    return _assign(brokers, rack_aware, range(p0, p0 + n_partitions), replication_factor,
                   fixed_start_index, p0, rng)


def _sorted_ids(partitions: Sequence[int]) -> Sequence[int]:
    """The distinct ids in increasing order, as a ``range`` when they are consecutive."""
    if isinstance(partitions, range) and partitions.step == 1:
        return partitions
    ids = sorted(set(partitions))
    if ids and ids[-1] - ids[0] + 1 == len(ids):
        return range(ids[0], ids[-1] + 1)
    return ids


def extend_replicas(
    current: Sequence[int], order: Iterable[int], replication_factor: int,
    rack_of: Mapping[int, str | None] | None = None,
) -> list[int]:
    """Keep ``current`` as a prefix and add brokers from ``order`` up to the replication factor.

    Brokers already present are skipped. With ``rack_of`` given, brokers on racks without a
    replica come first; the others are used, in ``order``, only once no unused rack is left
    among the candidates.
    """
    out = list(current)
    present = set(out)
    if rack_of is None:
        for b in order:
            if len(out) >= replication_factor:
                break
            if b not in present:
                out.append(b)
                present.add(b)
        return out
    used = {rack_of.get(b) for b in out}
    deferred: list[int] = []
    for b in order:
        if len(out) >= replication_factor:
            return out
        if b in present:
            continue
        rack = rack_of.get(b)
        if rack in used:
            deferred.append(b)
            continue
        out.append(b)
        present.add(b)
        used.add(rack)
    for b in deferred:
        if len(out) >= replication_factor:
            break
        out.append(b)
    return out


# the memo's keys (kafka_replica_assignor.assignors.memo): a broker layout is (token, rack aware, broker count); a
# draw is (layout, first partition, partition count, replication factor, start index, shift)
_Layout = tuple[object, bool, int]
_DrawKey = tuple[_Layout, int, int, int, int, int]


class DefaultReplicaAssignor(ReplicaAssignor, MemoizableAssignor):
    """Kafka's default placement behind the plug-in interface (KIP-660's DefaultReplicaAssignor).

    See the module docstring for the algorithm, continuation of existing topics and
    replication-factor increases.
    """

    name = "default"

    def __init__(self) -> None:
        # memoization (kafka_replica_assignor.assignors.memo): the layout key of the last view seen, and one token
        # per distinct broker layout, so that a key hashes in constant time
        self._last_view: tuple[ClusterView, _Layout | None] | None = None
        self._layouts: dict[tuple[tuple[int, str | None], ...], object] = {}

    def _layout_key(self, cluster: ClusterView) -> _Layout | None:
        last = self._last_view
        if last is not None and last[0] is cluster:
            return last[1]
        pairs = tuple((b.id, b.rack) for b in cluster.brokers)
        with_rack = sum(1 for _, rack in pairs if rack is not None)
        if with_rack and with_rack != len(pairs):
            key: _Layout | None = None  # mixed racks: the ordinary path raises Kafka's error
        else:
            token = self._layouts.get(pairs)
            if token is None:
                if len(self._layouts) >= 1024:
                    self._layouts.clear()
                token = self._layouts[pairs] = object()  # never equal to an older layout's token
            key = (token, with_rack > 0, len(pairs))
        self._last_view = (cluster, key)
        return key

    def draw(
        self,
        topic_name: str | None,
        partitions: Sequence[int],
        replication_factor: int,
        cluster: ClusterView,
        *,
        rng: random.Random,
    ) -> _DrawKey | None:
        """A new topic over consecutive ids: the answer depends on the brokers, the ids, the
        replication factor and the two draws only (the memo's capability, kafka_replica_assignor.assignors.memo)."""
        if not (isinstance(partitions, range) and partitions.step == 1 and len(partitions)
                and partitions.start >= 0):
            return None
        if cluster.topic_assignment(topic_name):
            return None
        layout = self._layout_key(cluster)
        if layout is None or not 0 < replication_factor <= layout[2]:
            return None
        start, shift = _draw(layout[2], -1, rng)
        return layout, partitions.start, len(partitions), replication_factor, start, shift

    def assign_drawn(
        self,
        key: Hashable,
        topic_name: str | None,
        partitions: Sequence[int],
        replication_factor: int,
        cluster: ClusterView,
    ) -> Assignment:
        (_, rack_aware, _), p0, n, rf, start, shift = cast(_DrawKey, key)
        return _assign_drawn(cluster.brokers, rack_aware, range(p0, p0 + n), rf, start, shift, p0)

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
        brokers = sorted(cluster.brokers, key=lambda b: b.id)
        requested = _sorted_ids(partitions)
        rack_aware = _rack_aware(brokers)
        current = cluster.topic_assignment(topic_name)
        if not current:  # a new topic: Kafka's creation, starting at the lowest id
            return _assign(brokers, rack_aware, requested, replication_factor, -1, requested[0], rng)
        # an existing topic: Kafka's add-partitions continuation from partition 0's leader
        if not current.get(0):
            what = "is missing" if 0 not in current else "has no replicas"
            raise ReplicaAssignorError(
                f"Unexpected existing replica assignment for topic '{topic_name}', "
                f"partition id 0 {what}. Assignment: {dict(current)}"
            )
        leader = current[0][0]
        start = next((i for i, b in enumerate(brokers) if b.id >= leader), 0)
        new_ids = [p for p in requested if p not in current]
        raised = [p for p in requested if p in current]
        out: Assignment = {}
        if new_ids:
            p0 = min(len(current), new_ids[0])
            out.update(_assign(brokers, rack_aware, new_ids, replication_factor, start, p0, rng))
        if raised:
            orders = _assign(brokers, rack_aware, raised, len(brokers), start, 0, None)
            rack_of = {b.id: b.rack for b in brokers} if rack_aware else None
            for p in raised:
                out[p] = extend_replicas(current[p], orders[p], replication_factor, rack_of)
        return {p: out[p] for p in requested}
