"""Fenced brokers, once, in the framework: every assignor places on the unfenced brokers, and a
fenced broker takes a replica only where no unfenced broker can.

Goals
    A fenced broker (KRaft: registered, but stopped or cut off) is a last resort, for every
    assignor (built-in or plug-in) without any of them knowing about fencing:

    - it never leads a new partition (only a partition whose current leader it is already, kept
      as its prefix, is led by it);
    - it takes a new replica only when every unfenced broker of the view already holds one of
      that partition: with 4 brokers, broker 3 fenced and a replication factor of 3, no
      partition uses broker 3; with a replication factor of 4, every partition uses it, as a
      follower.

Constraints
    - Nothing fenced: the assignor is called exactly as before (the same view, the same draws).
    - The assignor only ever sees brokers it may use freely: a view without the fenced brokers.
      Kafka's ``AdminUtils`` takes the brokers it is given, so the ``default`` assignor stays
      Kafka-exact: its answer is AdminUtils' over the unfenced brokers (``tests/oracle`` asks
      Kafka's own code). The ``striped`` assignor is Kafka's ``StripedReplicaPlacer`` over the same
      brokers. Kafka's placer itself, given the fenced brokers too, puts rack spread first: it takes
      a fenced broker of a rack whose unfenced brokers are used up even when another rack still
      has an unfenced one. This rule is stricter: a replica on a fenced broker is offline until the
      broker returns.
    - A request whose partitions exist (the replication factor raised) keeps their current
      replicas, fenced ones included. With enough unfenced brokers the assignor sees them as
      current replicas on brokers that are not in its view (it keeps them and places on none of
      them); in the fallback it sees only the unfenced ones. Either way their racks are not in
      the view, so an assignor cannot spread the added replicas away from them.
    - The rule itself (the message of each violation) is :mod:`kafka_replica_assignor.assignors.validate`'s:
      every answer is checked against the whole view after this module composed it. A new partition
      when every broker is fenced is refused before any assignor runs, with Kafka's message
      (:func:`kafka_replica_assignor.assignors.validate.check_unfenced_leader`).
    - Standard library only; no randomness of its own (the assignor draws from its ``rng``).

Algorithm
    With ``U`` unfenced brokers, a partition that keeps ``j`` replicas on fenced brokers can reach
    ``min(rf, U + j)`` replicas without a new fenced one (``j = 0`` for a new partition).

    1. *On the unfenced brokers.* When ``U >= rf`` the assignor places the request once, on the
       view without the fenced brokers (the usual case; the partitions it raises keep their
       current replicas, fenced ones included). Otherwise partitions are grouped by how many
       replicas they can get on unfenced brokers, ``min(rf - j, U)`` counting the unfenced ones
       they keep, and the assignor places each group on that view with that replication factor,
       seeing only the unfenced kept replicas (a partition whose every kept replica is fenced is
       placed afresh, as of a new topic); its answer is validated as any answer is, and the kept
       replicas are put back first, in their order.
    2. *The fallback*, only where the unfenced brokers are too few (``U < rf``): each partition
       gets its missing replicas on fenced brokers it does not hold yet, appended as followers:
       first a broker on a rack as far as possible from the partition's racks (racks compared as
       paths, component by component: ``/dc2/r1`` is further from ``/dc1/r2`` than ``/dc1/r1`` is;
       flat names are either the same rack or not), then the broker holding the fewest replicas
       of the topic (this request's included), then the lowest id.

Example
    Brokers 0, 1, 2 and 3 (fenced), replication factor 4, a new topic: the assignor places
    every partition on brokers 0-2 with replication factor 3 (``[2, 0, 1]``, ``[0, 1, 2]``, ...),
    and broker 3 is appended to each (``[2, 0, 1, 3]``). With replication factor 3 the assignor
    answers for brokers 0-2 alone and broker 3 takes nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from .model import ClusterView
from .validate import validate_assignment

__all__ = ["AssignorCall", "assignment_view", "place_around_fenced", "unfenced_view"]

AssignorCall = Callable[[Sequence[int], int, ClusterView], Mapping[int, Sequence[int]]]
"""One call of an assignor: ``(partitions, replication_factor, view) -> answer`` (the topic and the
principal are the request's)."""


def unfenced_view(cluster: ClusterView) -> ClusterView:
    """``cluster`` without its fenced brokers (the same offline brokers and topics)."""
    return cluster.without_fenced()


def assignment_view(cluster: ClusterView, replication_factor: int) -> ClusterView | None:
    """The one view an assignor places a whole request on: ``cluster`` itself when nothing is
    fenced, its unfenced brokers when they are enough for the replication factor, else None
    (the request needs :func:`place_around_fenced`'s fallback)."""
    if not cluster.fenced:
        return cluster
    if len(cluster.brokers) - len(cluster.fenced) >= replication_factor:
        return unfenced_view(cluster)
    return None


def place_around_fenced(topic_name: str | None, partitions: Sequence[int], replication_factor: int,
                        cluster: ClusterView, current: Mapping[int, Sequence[int]],
                        call: AssignorCall) -> Mapping[int, Sequence[int]]:
    """The request's answer, placed as the module doc says. In the fallback each answer of the
    assignor is validated against its view before it is composed; the composed answer, like
    every answer, still passes the framework's validation against the whole view (the fenced
    rule included)."""
    view = assignment_view(cluster, replication_factor)
    if view is not None:  # nothing fenced, or enough unfenced brokers: one call
        return call(partitions, replication_factor, view)
    fenced = cluster.fenced
    unfenced = len(cluster.brokers) - len(fenced)
    groups: dict[tuple[bool, int], list[int]] = {}  # (placed afresh, target) -> partitions
    placed: dict[int, list[int]] = {}
    seen: dict[int, list[int]] = {}  # kept replicas of raised partitions, as the assignor sees them
    for p in partitions:
        kept = current.get(p)
        if kept is None:
            target = min(replication_factor, unfenced)
        else:
            mine = [b for b in kept if b not in fenced]
            target = min(replication_factor - (len(kept) - len(mine)), unfenced)
            if target <= len(mine):
                placed[p] = list(kept)
                continue
            if len(mine) < len(kept):
                seen[p] = mine
        groups.setdefault((p in seen and not seen[p], target), []).append(p)
    base = unfenced_view(cluster)
    seen_current = {**current, **{p: mine for p, mine in seen.items() if mine}}
    for (afresh, target), ids in sorted(groups.items()):
        ids_arg: Sequence[int] = range(ids[0], ids[-1] + 1) if ids[-1] - ids[0] + 1 == len(ids) else ids
        # the others see their unfenced kept replicas (the topic's other partitions as they are);
        # a partition whose every kept replica is fenced is placed afresh, as of a new topic
        view = base if not (seen or afresh) else _with_topic(base, topic_name, None if afresh else seen_current)
        answer = validate_assignment(call(ids_arg, target, view), ids_arg, target, view,
                                     {} if afresh else seen_current)
        for p in ids:
            kept = current.get(p, ())
            placed[p] = [*kept, *(b for b in answer[p] if b not in kept)]
    return _on_fenced(placed, partitions, replication_factor, cluster, current)


def _with_topic(view: ClusterView, topic_name: str | None, assignment: Mapping[int, Sequence[int]] | None
                ) -> ClusterView:
    """``view`` with the topic's assignment replaced (``None``: the topic left out)."""
    topics = {name: a for name, a in view.topics.items() if name != (topic_name or "")}
    if assignment is not None:
        topics[topic_name or ""] = {p: tuple(replicas) for p, replicas in assignment.items()}
    return ClusterView(brokers=view.brokers, offline=view.offline, topics=topics)


def _on_fenced(placed: dict[int, list[int]], partitions: Sequence[int], replication_factor: int,
               cluster: ClusterView, current: Mapping[int, Sequence[int]]) -> dict[int, list[int]]:
    """Step 2: each partition's missing replicas on fenced brokers, appended (see the module doc)."""
    path = {b.id: _components(b.rack) for b in cluster.brokers}
    candidates = sorted(cluster.fenced)
    load = Counter(b for replicas in current.values() for b in replicas if b in cluster.fenced)
    out: dict[int, list[int]] = {}
    for p in partitions:
        replicas = placed[p]
        if len(replicas) < replication_factor:
            replicas = list(replicas)
            racks = {path[b] for b in replicas}
            while len(replicas) < replication_factor:
                broker = min((b for b in candidates if b not in replicas),
                             key=lambda b: (_closeness(path[b], racks), load[b], b))
                replicas.append(broker)
                racks.add(path[broker])
                load[broker] += 1
        out[p] = replicas
    return out


def _components(rack: str | None) -> tuple[str, ...]:
    """A rack as a path (``/dc1/zone-a`` and ``dc1/zone-a`` alike); a flat name is one component."""
    return tuple(part for part in rack.split("/") if part) if rack is not None else ()


def _closeness(path: tuple[str, ...], used: set[tuple[str, ...]]) -> int:
    """How many leading components ``path`` shares with the closest rack in ``used`` (0: none,
    so another data centre beats another rack of the same one, and any rack beats the same)."""
    best = 0
    for other in used:
        shared = 0
        for a, b in zip(path, other, strict=False):  # racks of different depths
            if a != b:
                break
            shared += 1
        if shared == len(path) == len(other):
            shared += 1  # the very same rack: closer than any rack it contains or is contained in
        best = max(best, shared)
    return best
