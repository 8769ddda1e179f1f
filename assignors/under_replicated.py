"""Under-replicated creation (KIP-409): placeholders where observed brokers are offline.

Goals
    During a rolling restart or a zone outage, a topic with replication factor RF can still be
    created when fewer than RF brokers are alive, as long as the brokers *observed* before (alive
    or not) cover RF. Each missing replica becomes a placeholder id (-1, -2, -3, ...) standing where
    the offline broker's rack would have put it, so that a later repair restores the rack spread
    the assignor chose.

Constraints
    - Off by default (``enable.under.replicated.topic.creation``); when enough brokers are alive the
      answer is exactly :func:`kafka_replica_assignor.assignors.base.place` (placeholders are never used then).
    - At least ``min(min.insync.replicas, RF)`` brokers alive, and alive + offline observed >= RF;
      otherwise INVALID_REPLICATION_FACTOR with a message giving alive, observed, RF and min ISR.
    - A placeholder (or an offline broker) never leads a partition; placeholders are distinct
      within a partition and numbered -1, -2, ... in order of appearance.
    - Any assignor works unchanged: it only ever sees a normal :class:`ClusterView`.

Algorithm
    1. Build the *observed view*: alive brokers plus the offline observed brokers (with their
       racks), the offline ones marked fenced. Run the assignor over it through
       :func:`kafka_replica_assignor.assignors.base.place`: the framework's rule for fenced brokers
       (:mod:`kafka_replica_assignor.assignors.fencing`) has the assignor place every partition on the
       alive unfenced brokers, and puts the replicas they are too few for on fenced or offline
       brokers, as followers, on racks the partition does not use yet first. So no offline broker
       leads, and every partition holds every alive unfenced broker.
    2. Every partition must be able to take writes with ``acks=all``: one with fewer than
       ``min(min.insync.replicas, RF)`` alive replicas (some alive brokers are fenced) has offline
       replicas replaced by alive brokers not yet in it, each from the offline replica's rack when
       there is one, else the alive broker holding the fewest replicas in this request.
    3. Replace each remaining offline broker by the next placeholder id (-1, -2, ...).
    4. Validate against the *alive* view with placeholders allowed, then check the numbering.

Example
    Racks a, b, c with brokers 0 (a), 1 (b), 2 (c); broker 2 is offline; RF 3, min ISR 2, enabled.
    The assignor places on brokers 0 and 1 with replication factor 2 (``0: [1, 0]``,
    ``1: [0, 1]``); the framework adds broker 2 to each, and broker 2 becomes placeholder -1:

    ========= ================ ================= ================
    partition the assignor     observed view     answer
    ========= ================ ================= ================
    0         [1, 0]           [1, 0, 2]         [1, 0, -1]
    1         [0, 1]           [0, 1, 2]         [0, 1, -1]
    ========= ================ ================= ================

    Every partition still spans racks a, b and c (the placeholder stands for rack c).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence

from .base import ANONYMOUS, PlacementSpec, ReplicaAssignor, place
from .errors import InvalidReplicationFactorError, ReplicaAssignorError
from .model import Assignment, ClusterView
from .validate import check_placeholders, validate_assignment


def observed_view(cluster: ClusterView) -> ClusterView:
    """The view in which offline observed brokers are placeable too, marked fenced (never leaders)."""
    offline_ids = frozenset(b.id for b in cluster.offline)
    return ClusterView(
        brokers=cluster.brokers + cluster.offline,
        fenced=cluster.fenced | offline_ids,
        offline=(),
        topics=cluster.topics,
    )


def refusal_message(replication_factor: int, cluster: ClusterView, *, enabled: bool,
                    min_insync_replicas: int) -> str:
    """Why an under-replicated creation is refused, with alive, observed, RF and min ISR."""
    alive = len(cluster.brokers)
    observed = alive + len(cluster.offline)
    # Kafka's own sentence first, then what KIP-409 took into account
    message = (
        f"Replication factor: {replication_factor} larger than available brokers: {alive}. "
        f"Under-replicated creation: observed: {observed}, min.insync.replicas: {min_insync_replicas}, "
        f"enable.under.replicated.topic.creation: {'true' if enabled else 'false'}."
    )
    if enabled:
        needed = _alive_needed(replication_factor, min_insync_replicas)
        if alive < needed:
            message += f" Under-replicated creation needs at least {needed} alive broker(s)."
        elif observed < replication_factor:
            message += " The observed brokers do not cover the replication factor."
    return message


def place_under_replicated(
    assignor: ReplicaAssignor,
    spec: PlacementSpec,
    cluster: ClusterView,
    principal: str = ANONYMOUS,
    *,
    rng: random.Random,
    enabled: bool,
    min_insync_replicas: int,
) -> Assignment:
    """Place like :func:`kafka_replica_assignor.assignors.base.place`, with KIP-409 placeholders when brokers are missing.

    The result maps each partition to ``replication_factor`` replicas; negative ids are
    placeholders, never first. Raises :class:`InvalidReplicationFactorError` when too few
    brokers are alive and under-replicated creation is disabled or not allowed.
    """
    topic_name, partitions, replication_factor = spec.topic_name, spec.partitions, spec.replication_factor
    alive = len(cluster.brokers)
    if not partitions or replication_factor <= 0 or replication_factor <= alive:
        return place(assignor, topic_name, partitions, replication_factor, cluster, principal, rng=rng)
    observed = alive + len(cluster.offline)
    if (not enabled or alive < _alive_needed(replication_factor, min_insync_replicas)
            or observed < replication_factor):
        raise InvalidReplicationFactorError(refusal_message(
            replication_factor, cluster, enabled=enabled, min_insync_replicas=min_insync_replicas))

    result = place(assignor, topic_name, partitions, replication_factor, observed_view(cluster),
                   principal, rng=rng)
    current = cluster.topic_assignment(topic_name)
    answer = _with_placeholders(result, partitions, cluster, current,
                                _alive_needed(replication_factor, min_insync_replicas))
    validated = validate_assignment(answer, partitions, replication_factor, cluster, current,
                                    allow_placeholders=True)
    alive_ids = frozenset(cluster.broker_ids)
    for p in partitions:
        check_placeholders(p, validated[p], alive_ids)
    return validated


def _alive_needed(replication_factor: int, min_insync_replicas: int) -> int:
    return max(1, min(min_insync_replicas, replication_factor))


def _with_placeholders(result: Mapping[int, Sequence[int]], partitions: Sequence[int],
                       cluster: ClusterView, current: Mapping[int, Sequence[int]],
                       alive_needed: int) -> Assignment:
    """Every partition gets at least ``alive_needed`` alive replicas (so it can take writes
    with acks=all at min.insync.replicas), and placeholders for the rest (its leader is alive
    and unfenced already: the framework's fenced rule)."""
    alive_rack = cluster.rack_by_broker
    offline_rack = {b.id: b.rack for b in cluster.offline}
    load = Counter(b for r in result.values() for b in r if b in alive_rack)
    out: Assignment = {}
    for p in partitions:
        reps = list(result[p])
        # a current replica on an offline broker is real: it stays, and validation refuses it
        # exactly as the normal path does
        kept = set(current.get(p, ()))
        alive = sum(b in alive_rack for b in reps)
        while alive < min(alive_needed, len(reps)):
            _replace_one_offline(p, reps, kept, cluster, offline_rack, load)
            alive += 1
        next_placeholder = -1
        for i, b in enumerate(reps):
            if b in offline_rack and b not in kept:
                reps[i] = next_placeholder
                next_placeholder -= 1
        out[p] = reps
    return out


def _replace_one_offline(partition: int, reps: list[int], kept: set[int], cluster: ClusterView,
                         offline_rack: Mapping[int, str | None], load: Counter[int]) -> None:
    """An alive broker not yet in the partition takes an offline replica's slot: one in that
    replica's rack if possible, else the least loaded."""
    slots = [i for i, b in enumerate(reps) if b in offline_rack and b not in kept]
    candidates = [b for b in cluster.brokers if b.id not in reps]
    if not slots or not candidates:
        raise ReplicaAssignorError(f"partition {partition}: not enough alive brokers for {reps}")
    slot_racks = {offline_rack[reps[i]] for i in slots}
    broker = min(
        candidates,
        key=lambda b: (b.id in cluster.fenced, b.rack not in slot_racks or b.rack is None,
                       load[b.id], b.id),
    )
    slot = next((i for i in slots if offline_rack[reps[i]] == broker.rack), slots[0])
    reps[slot] = broker.id
    load[broker.id] += 1


__all__ = [
    "observed_view",
    "place_under_replicated",
    "refusal_message",
]
