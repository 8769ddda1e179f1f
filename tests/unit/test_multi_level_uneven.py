"""The multi-level assignor on uneven trees: replicas shared among siblings in proportion to
their alive brokers, diversity first; the literal ring behind ``multi-level-ring``.

The cluster is the project's own generator output (``bench/snapshots.py --brokers 12
--levels 3``): ``/dc1/zone-a/rack-0`` with 4 alive brokers, ``/dc1/zone-b/rack-2`` with 3
(broker 5 is dead), ``/dc2/zone-a/rack-1`` with 4.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from bench.snapshots import SnapshotSpec, generate
from kafka_replica_assignor.assignors import BrokerMetadata, ClusterView, create_assignor, place
from kafka_replica_assignor.assignors.multi_level import MultiLevelRackAssignor, MultiLevelRingAssignor, assign
from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot


@pytest.fixture(scope="module")
def generated() -> ClusterView:
    snapshot = ClusterSnapshot.from_dict(generate(SnapshotSpec(brokers=12, levels=3, partitions=50)))
    return ClusterView(brokers=snapshot.cluster_view().brokers)  # the brokers alone, no topics


def racks_of(cluster: ClusterView) -> dict[int, str]:
    return {b.id: b.rack for b in cluster.brokers if b.rack is not None}


def test_the_generated_tree_is_the_one_of_the_issue(generated: ClusterView) -> None:
    sizes = Counter(racks_of(generated).values())
    assert sizes == {"/dc1/zone-a/rack-0": 4, "/dc1/zone-b/rack-2": 3, "/dc2/zone-a/rack-1": 4}


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("partitions", [12, 120])
def test_three_racks_three_replicas_never_two_in_one_rack(generated: ClusterView, seed: int, partitions: int) -> None:
    racks = racks_of(generated)
    a = place(MultiLevelRackAssignor(), "t", range(partitions), 3, generated, rng=random.Random(seed))
    doubled = [p for p, replicas in a.items() if len({racks[b] for b in replicas}) < 3]
    assert doubled == []
    per_broker = Counter({b: 0 for b in racks})
    per_broker.update(b for replicas in a.values() for b in replicas)
    # every rack takes one replica of each partition, so each rack's brokers share `partitions`
    for rack in set(racks.values()):
        counts = [per_broker[b] for b in racks if racks[b] == rack]
        assert max(counts) - min(counts) <= 1, (rack, counts)
    if partitions == 12:  # 36 replicas on 11 brokers: the tree allows 3 or 4 each, and so it is
        assert set(per_broker.values()) <= {3, 4}, dict(per_broker)


@pytest.mark.parametrize("seed", range(5))
def test_the_literal_ring_is_kept_behind_its_own_name(generated: ClusterView, seed: int) -> None:
    """``multi-level-ring`` gives each data centre the same share: the one rack of dc2 gets
    two replicas of half of the partitions and its brokers 4-5 replicas against 2-3."""
    racks = racks_of(generated)
    ring = create_assignor("multi-level-ring")
    assert isinstance(ring, MultiLevelRingAssignor)
    a = place(ring, "t", range(12), 3, generated, rng=random.Random(seed))
    assert a == assign("t", range(12), 3, generated, random.Random(seed), proportional=False)
    per_dc = Counter(racks[b].split("/")[1] for replicas in a.values() for b in replicas)
    assert per_dc == {"dc1": 18, "dc2": 18}
    doubled = sum(1 for replicas in a.values() if len({racks[b] for b in replicas}) < 3)
    assert doubled == 6


def zoned(sizes: list[list[int]]) -> ClusterView:
    """Data centres of zones of racks: ``sizes[dc][rack]`` brokers each."""
    brokers, next_id = [], 0
    for dc, racks in enumerate(sizes):
        for rack, count in enumerate(racks):
            for _ in range(count):
                brokers.append(BrokerMetadata(next_id, f"/dc{dc}/r{rack}"))
                next_id += 1
    return ClusterView(brokers=tuple(brokers))


# (data centres of racks: brokers per rack) -> the replication factors at which the tree allows
# brokers within one: each data centre's per-broker share of a partition's replicas fits the
# one-per-partition-each that diversity gives (RF 2 over [3] and [2] must put one in each, so
# 3 brokers carry what 2 do: not allowed)
ALLOWED = {
    ((3,), (2,)): {1, 3},
    ((4, 4), (4,)): {1, 3},
    ((2, 2, 2), (3, 3)): {1, 2, 3},
    ((5,), (1,), (3,)): {1},
}


@pytest.mark.parametrize("sizes", sorted(ALLOWED))
@pytest.mark.parametrize("rf", [1, 2, 3])
def test_brokers_within_one_when_the_tree_allows(sizes: tuple[tuple[int, ...], ...], rf: int) -> None:
    """Where the tree allows, brokers end within one; elsewhere never further apart than
    with the literal ring."""
    cluster = zoned([list(racks) for racks in sizes])
    n = len(cluster.brokers)
    a = place(MultiLevelRackAssignor(), "t", range(6 * n), rf, cluster, rng=random.Random(1))
    per_broker = Counter({b.id: 0 for b in cluster.brokers})
    per_broker.update(b for replicas in a.values() for b in replicas)
    if rf in ALLOWED[sizes]:
        assert max(per_broker.values()) - min(per_broker.values()) <= 1, dict(per_broker)
    ring = place(MultiLevelRingAssignor(), "t", range(6 * n), rf, cluster, rng=random.Random(1))
    ring_broker = Counter({b.id: 0 for b in cluster.brokers})
    ring_broker.update(b for replicas in ring.values() for b in replicas)
    spread = max(per_broker.values()) - min(per_broker.values())
    assert spread <= max(ring_broker.values()) - min(ring_broker.values())


@pytest.mark.parametrize("seed", range(20))
def test_balanced_trees_give_the_literal_rings_answer(seed: int) -> None:
    rng = random.Random(seed)
    dcs, racks, per = rng.randint(1, 3), rng.randint(1, 3), rng.randint(1, 3)
    cluster = zoned([[per] * racks for _ in range(dcs)])
    rf = rng.randint(1, len(cluster.brokers))
    proportional = assign("t", range(25), rf, cluster, random.Random(seed))
    assert proportional == assign("t", range(25), rf, cluster, random.Random(seed), proportional=False)
