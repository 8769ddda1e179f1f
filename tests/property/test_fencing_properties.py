"""The fenced rule (kafka_replica_assignor.assignors.fencing) holds for every assignor, through the framework.

Random clusters (flat racks, multi-level paths or none), random fenced brokers, and three kinds of
request: a new topic, partitions added to a topic whose replicas may be on fenced brokers, and a
raised replication factor (the kept replicas may be fenced, its leader too). For every registered
assignor, the example plug-in and a plug-in that knows nothing of fencing, the answer of ``place``:

- never has a fenced broker first, unless it is the partition's current leader, kept first;
- holds exactly as many new replicas on fenced brokers as the unfenced brokers are too few for
  (``max(0, added - unfenced brokers not yet in the partition)``), so every unfenced broker is in
  a partition that holds a new fenced replica;
- with nothing fenced, is the assignor's own answer over the whole view (the framework adds
  nothing), and with enough unfenced brokers for a new topic or added partitions, the assignor's
  answer over the unfenced brokers alone (the same draws).

The checks are written here from the definitions, independently of the framework's validation.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from hypothesis import event, given, settings
from hypothesis import strategies as st

from kafka_replica_assignor.assignors import (
    BrokerMetadata,
    ClusterView,
    InvalidReplicationFactorError,
    ReplicaAssignor,
    create_assignor,
    place,
)
from kafka_replica_assignor.assignors.registry import REGISTERED

SETTINGS = settings(max_examples=400, deadline=None)


class RoundRobinAssignor(ReplicaAssignor):
    """A plug-in that knows nothing of fencing: partition ``p`` starts at broker ``p`` of the view."""

    name = "round-robin"

    def assign_replicas_to_brokers(self, topic_name, partitions, replication_factor, cluster,
                                   principal="User:ANONYMOUS", *, rng):
        ids = list(cluster.broker_ids)
        current = cluster.topic_assignment(topic_name)
        out = {}
        for p in partitions:
            replicas = list(current.get(p, ()))
            for i in range(len(ids)):
                if len(replicas) == replication_factor:
                    break
                b = ids[(p + i) % len(ids)]
                if b not in replicas:
                    replicas.append(b)
            out[p] = replicas
        return out


ASSIGNORS = [*REGISTERED, "examples.least_loaded.LeastLoadedAssignor", "round-robin"]


def make(name: str) -> ReplicaAssignor:
    return RoundRobinAssignor() if name == "round-robin" else create_assignor(name)


@st.composite
def clusters(draw) -> ClusterView:
    n = draw(st.integers(1, 9))
    ids = sorted(draw(st.sets(st.integers(0, 30), min_size=n, max_size=n)))
    style = draw(st.sampled_from(["none", "flat", "paths"]))
    if style == "none":
        racks: list[str | None] = [None] * n
    elif style == "flat":
        racks = [f"r{draw(st.integers(0, 2))}" for _ in ids]
    else:
        racks = [f"/dc{draw(st.integers(0, 1))}/r{draw(st.integers(0, 1))}" for _ in ids]
    fenced = draw(st.sets(st.sampled_from(ids), min_size=draw(st.sampled_from([0, 1, 1, 1])), max_size=n))
    return ClusterView(brokers=tuple(BrokerMetadata(b, r) for b, r in zip(ids, racks, strict=True)),
                       fenced=frozenset(fenced))


@st.composite
def requests(draw, cluster: ClusterView) -> tuple[dict[int, list[int]], Sequence[int], int]:
    """(current assignment, partitions to place, replication factor)."""
    ids = list(cluster.broker_ids)
    n = len(ids)
    kind = draw(st.sampled_from(["new", "add", "raise"] if n > 1 else ["new", "add"]))
    if kind == "new":
        return {}, range(draw(st.integers(1, 12))), draw(st.integers(1, n))
    old_rf = draw(st.integers(1, n if kind == "add" else max(1, n - 1)))
    existing = draw(st.integers(1, 6))
    current = {p: draw(st.permutations(ids))[:old_rf] for p in range(existing)}
    if kind == "add":
        return current, range(existing, existing + draw(st.integers(1, 8))), old_rf
    return current, range(existing), draw(st.integers(old_rf + 1, n))


def check_fenced_rule(answer: Mapping[int, Sequence[int]], cluster: ClusterView,
                      current: Mapping[int, Sequence[int]], rf: int) -> None:
    fenced = cluster.fenced
    unfenced = [b for b in cluster.broker_ids if b not in fenced]
    for p, replicas in answer.items():
        kept = list(current.get(p, ()))
        assert len(replicas) == rf == len(set(replicas)) and replicas[:len(kept)] == kept, (p, replicas, kept)
        if replicas[0] in fenced:
            assert kept and kept[0] == replicas[0], (p, replicas)
        added = replicas[len(kept):]
        free_unfenced = [b for b in unfenced if b not in kept]
        needed = max(0, len(added) - len(free_unfenced))
        assert sum(b in fenced for b in added) == needed, (p, replicas, kept, sorted(fenced))


@SETTINGS
@given(st.sampled_from(ASSIGNORS), clusters(), st.data(), st.integers(0, 2**32 - 1))
def test_every_assignor_keeps_the_fenced_rule(name, cluster, data, seed):
    current, partitions, rf = data.draw(requests(cluster))
    view = ClusterView(brokers=cluster.brokers, fenced=cluster.fenced, topics={"t": current})
    new = [p for p in partitions if p not in current]
    if new and len(cluster.fenced) == len(cluster.brokers):
        try:
            place(make(name), "t", partitions, rf, view, rng=random.Random(seed))
        except InvalidReplicationFactorError as exc:
            assert exc.message == "All brokers are currently fenced."
            return
        raise AssertionError("a new partition without an unfenced broker was placed")
    answer = place(make(name), "t", partitions, rf, view, rng=random.Random(seed))
    unfenced = len(cluster.brokers) - len(cluster.fenced)
    event("nothing fenced" if not cluster.fenced else "enough unfenced" if unfenced >= rf else "fallback")
    assert sorted(answer) == list(partitions)
    check_fenced_rule(answer, view, current, rf)
    if not cluster.fenced:
        direct = make(name).assign_replicas_to_brokers("t", partitions, rf, view, rng=random.Random(seed))
        assert answer == {p: list(r) for p, r in direct.items()}
    elif rf <= len(cluster.brokers) - len(cluster.fenced) and all(
            not set(r) & cluster.fenced for r in current.values()):
        alone = ClusterView(brokers=tuple(b for b in cluster.brokers if b.id not in cluster.fenced),
                            topics={"t": current})
        direct = make(name).assign_replicas_to_brokers("t", partitions, rf, alone, rng=random.Random(seed))
        assert answer == {p: list(r) for p, r in direct.items()}
