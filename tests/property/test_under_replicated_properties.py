"""Properties of KIP-409 placement and of the repair that fills its placeholders.

Over random clusters (with or without racks), random alive/offline splits, replication
factors, min ISR and feature flag, with Kafka's default assignor and KRaft's striped one:

- placeholders appear exactly when too few brokers are alive, the feature is on, min ISR
  allows it and the observed brokers cover RF; otherwise the answer is a refusal or ``place``;
- a placeholder (or an offline broker) never leads;
- the alive replicas are the ones the assignor chose over the observed brokers, and each
  placeholder stands for one of its offline choices (so the rack spread is the assignor's);
- repair, once enough brokers are alive, leaves no placeholder and no duplicate, changes only
  placeholder slots, spans as many racks as it can, and at least as many as the assignor
  intended.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_replica_assignor.assignors import (
    BrokerMetadata,
    ClusterView,
    InvalidReplicationFactorError,
    PlacementSpec,
    place,
)
from kafka_replica_assignor.assignors.default import DefaultReplicaAssignor
from kafka_replica_assignor.assignors.striped import StripedReplicaAssignor
from kafka_replica_assignor.assignors.under_replicated import place_under_replicated
from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.replica_repair import repair

ASSIGNORS = {"default": DefaultReplicaAssignor, "striped": StripedReplicaAssignor}


@dataclass(frozen=True)
class Scenario:
    alive: tuple[BrokerMetadata, ...]
    offline: tuple[BrokerMetadata, ...]
    rf: int
    partitions: int
    min_isr: int
    enabled: bool
    seed: int
    assignor: str

    @property
    def cluster(self) -> ClusterView:
        return ClusterView(brokers=self.alive, offline=self.offline)

    @property
    def observed(self) -> ClusterView:
        """Every observed broker placeable, the offline ones fenced (built independently here)."""
        return ClusterView(brokers=self.alive + self.offline,
                           fenced=frozenset(b.id for b in self.offline))

    @property
    def allowed(self) -> bool:
        n_alive = len(self.alive)
        return (self.enabled and n_alive >= max(1, min(self.min_isr, self.rf))
                and n_alive + len(self.offline) >= self.rf)

    def place(self) -> dict[int, list[int]]:
        return place_under_replicated(
            ASSIGNORS[self.assignor](), PlacementSpec("t", range(self.partitions), self.rf), self.cluster,
            rng=random.Random(self.seed), enabled=self.enabled, min_insync_replicas=self.min_isr,
        )


@st.composite
def scenarios(draw, under_replicated: bool = False) -> Scenario:
    """Any scenario; with ``under_replicated``, only those where placeholders must be used."""
    n = draw(st.integers(2 if under_replicated else 1, 9))
    ids = draw(st.lists(st.integers(0, 40), min_size=n, max_size=n, unique=True))
    racked = draw(st.booleans())
    n_racks = draw(st.integers(1, 4))
    brokers = [BrokerMetadata(i, f"r{draw(st.integers(0, n_racks - 1))}" if racked else None)
               for i in ids]
    if under_replicated:
        rf = draw(st.integers(2, n))
        n_alive = draw(st.integers(1, rf - 1))
        min_isr = draw(st.integers(1, n_alive))  # min(min ISR, RF) <= alive < RF
        enabled = True
    else:
        rf = draw(st.integers(1, n + 1))
        n_alive = draw(st.integers(0, n))
        min_isr = draw(st.integers(1, 4))
        enabled = draw(st.booleans())
    order = draw(st.permutations(range(n)))
    return Scenario(
        alive=tuple(brokers[i] for i in order[:n_alive]),
        offline=tuple(brokers[i] for i in order[n_alive:]),
        rf=rf, partitions=draw(st.integers(1, 12)), min_isr=min_isr, enabled=enabled,
        seed=draw(st.integers(0, 2**16)), assignor=draw(st.sampled_from(sorted(ASSIGNORS))),
    )


@settings(max_examples=300)
@given(scenarios())
def test_placeholders_only_when_enabled_and_allowed(s: Scenario):
    n_alive = len(s.alive)
    if n_alive >= s.rf:
        got = s.place()
        assert got == place(ASSIGNORS[s.assignor](), "t", range(s.partitions), s.rf, s.cluster,
                            rng=random.Random(s.seed))
        assert not any(b < 0 for r in got.values() for b in r)
        return
    if not s.allowed:
        try:
            s.place()
        except InvalidReplicationFactorError as exc:
            assert (f"available brokers: {n_alive}. Under-replicated creation: "
                    f"observed: {n_alive + len(s.offline)}") in exc.message
            assert f"min.insync.replicas: {s.min_isr}" in exc.message
        else:
            raise AssertionError("placeholders used although not allowed")
        return
    got = s.place()
    alive_ids = {b.id for b in s.alive}
    for p, replicas in got.items():
        assert len(replicas) == s.rf and len(set(replicas)) == s.rf, (p, replicas)
        holes = [b for b in replicas if b < 0]
        assert sorted(holes, reverse=True) == list(range(-1, -len(holes) - 1, -1)), replicas
        assert len(holes) >= s.rf - n_alive
        assert all(b in alive_ids for b in replicas if b >= 0)


@settings(max_examples=300)
@given(scenarios(under_replicated=True))
def test_never_a_placeholder_leader_and_the_assignors_choice_is_kept(s: Scenario):
    assert s.allowed
    got = s.place()
    intended = place(ASSIGNORS[s.assignor](), "t", range(s.partitions), s.rf, s.observed,
                     rng=random.Random(s.seed))
    alive_ids = {b.id for b in s.alive}
    rack_of = {b.id: b.rack for b in s.alive + s.offline}
    for p, replicas in got.items():
        assert replicas[0] in alive_ids, (p, replicas)
        chosen_alive = {b for b in intended[p] if b in alive_ids}
        chosen_offline = [b for b in intended[p] if b not in alive_ids]
        placed_alive = {b for b in replicas if b >= 0}
        holes = sum(b < 0 for b in replicas)
        needed = max(1, min(s.min_isr, s.rf))
        # the assignor's alive choices stay; every partition can take acks=all writes
        assert chosen_alive <= placed_alive, (p, replicas, intended[p])
        assert len(placed_alive) == max(len(chosen_alive), needed), (p, replicas, intended[p])
        assert holes == s.rf - len(placed_alive)
        added = placed_alive - chosen_alive
        offline_racks = {rack_of[b] for b in chosen_offline}
        for b in added:
            # an added alive broker comes from a missing replica's rack when one is free there
            free_in_rack = {a.id for a in s.alive if a.rack in offline_racks} - chosen_alive
            if free_in_rack and len(added) == 1:
                assert rack_of[b] in offline_racks, (p, replicas, intended[p])


def back_online(s: Scenario, got: dict[int, list[int]], forgotten: frozenset[int]) -> ClusterSnapshot:
    """The snapshot after the outage: offline brokers are back, except the forgotten ones."""
    brokers = tuple(BrokerEntry(b.id, b.rack, True) for b in s.alive)
    brokers += tuple(BrokerEntry(b.id, b.rack, b.id not in forgotten) for b in s.offline)
    parts = tuple(PartitionEntry("t", p, tuple(r)) for p, r in sorted(got.items()))
    return ClusterSnapshot(brokers=brokers, partitions=parts)


@settings(max_examples=200)
@given(scenarios(under_replicated=True), st.data())
def test_repair_fills_every_placeholder_once_brokers_are_back(s: Scenario, data):
    got = s.place()
    offline_ids = [b.id for b in s.offline]
    forgotten = frozenset(data.draw(st.lists(st.sampled_from(offline_ids), unique=True)))
    snapshot = back_online(s, got, forgotten)
    plan = repair(snapshot, forgotten)
    n_alive = len(s.alive) + len(s.offline) - len(forgotten)
    usable = {b.id for b in snapshot.brokers if b.alive}
    rack_of = {b.id: b.rack for b in snapshot.brokers}
    intended = place(ASSIGNORS[s.assignor](), "t", range(s.partitions), s.rf, s.observed,
                     rng=random.Random(s.seed))
    if n_alive >= s.rf:
        assert plan.unrepaired == ()
    repaired = {p: list(r) for (t, p), r in plan.assignments.items()}
    for p, before in got.items():
        if p not in repaired:
            assert ("t", p) in plan.unrepaired or not any(b < 0 for b in before)
            continue
        after = repaired[p]
        assert len(after) == s.rf and len(set(after)) == s.rf, (before, after)
        assert all(b in usable for b in after), (before, after)
        assert [a for a, b in zip(after, before, strict=True) if b >= 0] == [b for b in before if b >= 0]
        # placeholders go to the racks the partition lacks first: as many racks as possible
        kept_racks = {rack_of[b] for b in before if b >= 0}
        free_racks = {rack_of[b] for b in usable} - kept_racks
        spread = len({rack_of[b] for b in after})
        holes = sum(b < 0 for b in before)
        assert spread == len(kept_racks) + min(holes, len(free_racks)), (before, after)
        if not forgotten:
            assert spread >= len({rack_of[b] for b in intended[p]}), (before, after, intended[p])
