"""Properties of the multi-level rack assignor over random rack trees (1 to 4 levels).

Balanced trees (the nodes of a level have as many children each, racks as many brokers):
every level within one, leaders within one. Every tree: no broker twice, each partition
spread over the children of every node as evenly as their sizes allow (so ``m`` replicas
in a node with ``k`` children cover ``min(m, k)`` of them), siblings of equal size within
one, leaders as even as the replica sets allow. Leaders in a balanced tree: whenever some
choice of leaders puts every level's subtrees and the brokers within one (an independent
flow with bounds decides), the assignor's choice does. Continuation (add partitions, or raise the
replication factor from 2 to 3) keeps all of it for the whole topic, except that raising
the replication factor in an unbalanced tree only promises spread and no broker twice. The tree checks here
are written from the rack paths alone, independently of the assignor's own tree.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from collections.abc import Mapping, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_replica_assignor.assignors import BrokerMetadata, ClusterView, place
from kafka_replica_assignor.assignors.multi_level import MultiLevelRackAssignor, assign, rack_paths
from tests.property.invariants import check_placement

ASSIGNOR = MultiLevelRackAssignor()
SETTINGS = settings(max_examples=60)  # slow examples: fewer than the profile's


# --- random rack trees -----------------------------------------------------------------------

@st.composite
def balanced_clusters(draw) -> ClusterView:
    """0 to 3 rack levels (1 to 4 levels with the brokers), equal fan-out per level."""
    fanouts = draw(st.lists(st.integers(1, 3), min_size=0, max_size=3))
    per_rack = draw(st.integers(1, 4))
    slash = draw(st.booleans())
    racks: list[tuple[str, ...]] = [()]
    for level, fanout in enumerate(fanouts):
        racks = [r + (f"l{level}n{i}",) for r in racks for i in range(fanout)]
    brokers, next_id = [], draw(st.integers(0, 3))
    for rack in racks:
        for _ in range(per_rack):
            name = ("/" if slash else "") + "/".join(rack) if rack else None
            brokers.append(BrokerMetadata(next_id, name))
            next_id += draw(st.integers(1, 2))
    return ClusterView(brokers=tuple(brokers))


@st.composite
def unbalanced_clusters(draw) -> ClusterView:
    """Racks of 1 to 3 levels (shorter ones padded), 1 to 3 children per group, 1 to 4 brokers."""

    def grow(prefix: tuple[str, ...], depth: int) -> list[tuple[str, ...]]:
        if depth == 3 or (depth > 0 and draw(st.booleans())):
            return [prefix]
        return [r for i in range(draw(st.integers(1, 3))) for r in grow(prefix + (f"n{i}",), depth + 1)]

    racks = grow((), 0)
    brokers, next_id = [], 0
    for rack in racks:
        for _ in range(draw(st.integers(1, 4))):
            brokers.append(BrokerMetadata(next_id, "/" + "/".join(rack)))
            next_id += 1
    return ClusterView(brokers=tuple(brokers))


any_clusters = st.one_of(balanced_clusters(), unbalanced_clusters())


# --- checks from the rack paths alone ---------------------------------------------------------

class TreeView:
    """Nodes are path prefixes; the last level is the brokers themselves."""

    def __init__(self, cluster: ClusterView) -> None:
        self.paths = rack_paths(cluster.brokers)
        self.depth = len(next(iter(self.paths.values())))
        self.cluster = cluster

    def node(self, broker: int, level: int) -> tuple:
        path = self.paths[broker]
        return path[:level] if level <= self.depth else path + (broker,)

    def levels(self) -> range:
        return range(1, self.depth + 2)

    def brokers_under(self) -> Counter:
        return Counter(self.node(b, level) for b in self.paths for level in range(0, self.depth + 2))

    def balanced(self) -> bool:
        size = self.brokers_under()
        for level in range(0, self.depth + 1):
            fanouts = Counter()
            for b in self.paths:
                fanouts[self.node(b, level)] = len({self.node(x, level + 1) for x in self.paths
                                                    if self.node(x, level) == self.node(b, level)})
            if len(set(fanouts.values())) > 1:
                return False
        return len({size[self.node(b, self.depth)] for b in self.paths}) == 1

    def counts(self, assignment: Mapping[int, Sequence[int]], level: int) -> Counter:
        counts = Counter({self.node(b, level): 0 for b in self.paths})
        for replicas in assignment.values():
            for b in replicas:
                counts[self.node(b, level)] += 1
        return counts


def assert_levels_within_one(view: TreeView, assignment) -> None:
    for level in view.levels():
        counts = view.counts(assignment, level)
        assert max(counts.values()) - min(counts.values()) <= 1, (level, dict(counts))


def assert_spread(view: TreeView, assignment) -> None:
    """At every node, a partition's replicas are water-filled over the children."""
    size = view.brokers_under()
    children: dict[tuple, set] = {}
    for b in view.paths:
        for level in range(0, view.depth + 1):
            children.setdefault(view.node(b, level), set()).add(view.node(b, level + 1))
    for p, replicas in assignment.items():
        for level in range(0, view.depth + 1):
            inside = Counter(view.node(b, level) for b in replicas)
            for parent, m in inside.items():
                per_child = Counter({c: 0 for c in children[parent]})
                per_child.update(view.node(b, level + 1) for b in replicas if view.node(b, level) == parent)
                covered = sum(1 for c in per_child.values() if c)
                assert covered == min(m, len(per_child)), (p, parent, dict(per_child))
                for ca in per_child.values():
                    for b, cb in per_child.items():
                        assert not (ca >= cb + 2 and cb < size[b]), (p, parent, dict(per_child))


def assert_equal_siblings_within_one(view: TreeView, assignment) -> None:
    size = view.brokers_under()
    for level in range(1, view.depth + 2):
        counts = view.counts(assignment, level)
        groups: dict[tuple, list[int]] = {}
        for node, count in counts.items():
            parent = node[:level - 1] if level <= view.depth else node[:-1]
            groups.setdefault((parent, size[node]), []).append(count)
        for key, values in groups.items():
            assert max(values) - min(values) <= 1, (level, key, values)


def assert_leaders_optimal(cluster: ClusterView, whole, movable: Sequence[int]) -> None:
    """No cost-reducing path through the ``movable`` partitions (Harvey et al.): the leader
    counts cannot be made more even by choosing other leaders among their replicas."""
    unfenced = [b for b in cluster.broker_ids if b not in cluster.fenced]
    counts = Counter({b: 0 for b in unfenced})
    counts.update(r[0] for r in whole.values())
    led: dict[int, list[int]] = {b: [] for b in unfenced}
    for p in movable:
        led[whole[p][0]].append(p)
    for start in unfenced:
        seen, queue = {start}, deque([start])
        while queue:
            b = queue.popleft()
            for p in led[b]:
                for other in whole[p]:
                    if other in seen or other in cluster.fenced:
                        continue
                    assert counts[other] > counts[start] - 2, (start, other, dict(counts))
                    seen.add(other)
                    queue.append(other)


def leader_levels_within_one(view: TreeView, whole) -> bool:
    """The leader counts of every level (brokers included) differ by at most one."""
    leaders = {p: [r[0]] for p, r in whole.items()}
    counts = [view.counts(leaders, level) for level in view.levels()]
    return all(max(c.values()) - min(c.values()) <= 1 for c in counts)


def leaders_can_be_within_one(view: TreeView, whole, movable: Sequence[int]) -> bool:
    """Whether some choice of leaders for ``movable`` (among their replicas; the others keep
    theirs) puts every level's leader counts, brokers included, within one: a feasible flow
    source -> partition -> broker -> up the tree -> sink, each subtree's count bounded to
    ``floor`` or ``ceil`` of its level's average (lower bounds by the usual reduction)."""
    fixed = {p: r for p, r in whole.items() if p not in set(movable)}
    total = len(whole)
    names: dict[object, int] = {}

    def node(key) -> int:
        return names.setdefault(key, len(names))

    edges: list[list[int]] = []  # [u, v, capacity]
    excess: Counter = Counter()

    def bounded(u: int, v: int, low: int, high: int) -> bool:
        if high < low:
            return False
        edges.append([u, v, high - low])
        excess[v] += low
        excess[u] -= low
        return True

    source, sink = node("source"), node("sink")
    for p in movable:
        bounded(source, node(("p", p)), 1, 1)
        for b in whole[p]:
            bounded(node(("p", p)), node(("n", view.node(b, view.depth + 1))), 0, 1)
    for level in view.levels():
        counts = view.counts({p: [r[0]] for p, r in fixed.items()}, level)
        low, high = total // len(counts), -(-total // len(counts))
        for n, already in counts.items():
            up = node(("n", n[:-1] if level > view.depth else n[:level - 1])) if level > 1 else sink
            if not bounded(node(("n", n)), up, max(0, low - already), high - already):
                return False
    bounded(sink, source, len(movable), len(movable))
    super_source, super_sink = node("super source"), node("super sink")
    need = 0
    for v, value in list(excess.items()):
        if value > 0:
            edges.append([super_source, v, value])
            need += value
        elif value < 0:
            edges.append([v, super_sink, -value])
    graph: dict[int, list[int]] = {}
    for index, (u, v, _) in enumerate(edges):
        graph.setdefault(u, []).append(index)
        graph.setdefault(v, []).append(index)
    flow = [0] * len(edges)
    moved = 0
    while True:  # augmenting paths, breadth first
        came: dict[int, tuple[int, int]] = {super_source: (-1, 0)}
        queue = deque([super_source])
        while queue and super_sink not in came:
            u = queue.popleft()
            for index in graph.get(u, ()):
                a, b, capacity = edges[index]
                if a == u and b not in came and flow[index] < capacity:
                    came[b] = (index, 1)
                    queue.append(b)
                elif b == u and a not in came and flow[index] > 0:
                    came[a] = (index, -1)
                    queue.append(a)
        if super_sink not in came:
            return moved == need
        v = super_sink
        while v != super_source:
            index, sign = came[v]
            flow[index] += sign
            v = edges[index][0] if sign > 0 else edges[index][1]
        moved += 1


def assert_all(cluster: ClusterView, whole, rf: int, movable: Sequence[int], *,
               siblings: bool = True) -> None:
    """Spread, optimal leaders; equal-size siblings within one (``siblings``); in a balanced
    tree every level and the leaders within one."""
    view = TreeView(cluster)
    check_placement(whole, cluster, rf, rack_spread=False)
    assert_spread(view, whole)
    if siblings:
        assert_equal_siblings_within_one(view, whole)
    assert_leaders_optimal(cluster, whole, movable)
    if view.balanced():
        assert_levels_within_one(view, whole)
        check_placement(whole, cluster, rf, leader_balance=True)
        if movable and not cluster.fenced and not leader_levels_within_one(view, whole):
            assert not leaders_can_be_within_one(view, whole, movable), "leaders could be even at every level"


def sizes(cluster: ClusterView, data) -> tuple[int, int]:
    n = len(cluster.brokers)
    return data.draw(st.integers(1, n), label="rf"), data.draw(st.integers(1, 3 * n), label="partitions")


# --- properties --------------------------------------------------------------------------------

@SETTINGS
@given(cluster=balanced_clusters(), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_balanced_trees_are_even_at_every_level(cluster, data, seed):
    rf, n_partitions = sizes(cluster, data)
    a = place(ASSIGNOR, "t", range(n_partitions), rf, cluster, rng=random.Random(seed))
    assert TreeView(cluster).balanced()
    assert_all(cluster, a, rf, range(n_partitions))


@SETTINGS
@given(cluster=unbalanced_clusters(), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_unbalanced_trees_spread_as_evenly_as_sizes_allow(cluster, data, seed):
    rf, n_partitions = sizes(cluster, data)
    a = place(ASSIGNOR, "t", range(n_partitions), rf, cluster, rng=random.Random(seed))
    assert_all(cluster, a, rf, range(n_partitions))


@SETTINGS
@given(cluster=any_clusters, data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_same_seed_same_answer(cluster, data, seed):
    rf, n_partitions = sizes(cluster, data)
    first = place(ASSIGNOR, "t", range(n_partitions), rf, cluster, rng=random.Random(seed))
    assert place(ASSIGNOR, "t", range(n_partitions), rf, cluster, rng=random.Random(seed)) == first


@SETTINGS
@given(cluster=any_clusters, data=st.data(), seed=st.integers(0, 2**32 - 1), split=st.floats(0, 1))
def test_the_ring_walk_is_the_count_rule_wherever_it_is_used(cluster, data, seed, split):
    rf, n_partitions = sizes(cluster, data)
    fast = assign("t", range(n_partitions), rf, cluster, random.Random(seed))
    assert fast == assign("t", range(n_partitions), rf, cluster, random.Random(seed), ring_walk=False)
    head = max(1, int(n_partitions * split))
    grown = cluster.with_assignment("t", {p: fast[p] for p in range(head)})
    more = range(head, n_partitions + 5)
    assert assign("t", more, rf, grown, random.Random(seed + 1)) == assign(
        "t", more, rf, grown, random.Random(seed + 1), ring_walk=False)


@SETTINGS
@given(cluster=any_clusters, data=st.data(), seeds=st.tuples(st.integers(0, 999), st.integers(0, 999)))
def test_adding_partitions_keeps_the_whole_topic_even(cluster, data, seeds):
    rf, n_partitions = sizes(cluster, data)
    added = data.draw(st.integers(1, 3 * len(cluster.brokers)), label="added")
    first = place(ASSIGNOR, "t", range(n_partitions), rf, cluster, rng=random.Random(seeds[0]))
    grown = cluster.with_assignment("t", first)
    more_ids = range(n_partitions, n_partitions + added)
    more = place(ASSIGNOR, "t", more_ids, rf, grown, rng=random.Random(seeds[1]))
    assert place(ASSIGNOR, "t", more_ids, rf, grown, rng=random.Random(seeds[1])) == more
    assert_all(cluster, {**first, **more}, rf, more_ids)


@SETTINGS
@given(cluster=any_clusters, data=st.data(), seeds=st.tuples(st.integers(0, 999), st.integers(0, 999)))
def test_raising_rf_from_2_to_3_keeps_the_whole_topic_even(cluster, data, seeds):
    if len(cluster.brokers) < 3:
        cluster = ClusterView(brokers=cluster.brokers + tuple(
            BrokerMetadata(100 + i, cluster.brokers[0].rack) for i in range(3 - len(cluster.brokers))))
    n_partitions = data.draw(st.integers(1, 3 * len(cluster.brokers)), label="partitions")
    current = place(ASSIGNOR, "t", range(n_partitions), 2, cluster, rng=random.Random(seeds[0]))
    grown = cluster.with_assignment("t", current)
    raised = place(ASSIGNOR, "t", range(n_partitions), 3, grown, rng=random.Random(seeds[1]))
    assert place(ASSIGNOR, "t", range(n_partitions), 3, grown, rng=random.Random(seeds[1])) == raised
    check_placement(raised, cluster, 3, range(n_partitions), current=current)
    assert {p: r[0] for p, r in raised.items()} == {p: r[0] for p, r in current.items()}
    # every tree: spread, no broker twice; balanced trees: every level within one. (In an
    # unbalanced tree the exact round keeps the walk's shares between siblings of different
    # sizes, which can leave no way to even the equal-size ones: best effort there.)
    assert_all(cluster, raised, 3, [], siblings=TreeView(cluster).balanced())


@SETTINGS
@given(cluster=any_clusters, data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_fenced_brokers_never_lead_and_leaders_stay_as_even_as_possible(cluster, data, seed):
    ids = cluster.broker_ids
    fenced = frozenset(data.draw(st.sets(st.sampled_from(ids), max_size=len(ids) - 1), label="fenced"))
    cluster = ClusterView(brokers=cluster.brokers, fenced=fenced)
    rf, n_partitions = sizes(cluster, data)
    a = place(ASSIGNOR, "t", range(n_partitions), rf, cluster, rng=random.Random(seed))
    check_placement(a, cluster, rf, range(n_partitions), fenced_never_lead=True, fenced_only_when_needed=True)
    # the assignor placed on the unfenced brokers (assignors/fencing.py): spread over their tree,
    # for the replicas they could take (every one of them when they are too few)
    unfenced = ClusterView(brokers=tuple(b for b in cluster.brokers if b.id not in fenced))
    usable = min(rf, len(unfenced.brokers))
    assert_spread(TreeView(unfenced), {p: r[:usable] for p, r in a.items()})
    assert_leaders_optimal(cluster, a, range(n_partitions))


def test_the_leader_oracle_tells_fixable_from_unfixable():
    # two data centres of two brokers: both partitions led in dc1 can be evened (one moves to
    # dc2), two partitions that only have broker 0 cannot
    cluster = ClusterView(brokers=tuple(BrokerMetadata(b, f"/dc{b // 2}") for b in range(4)))
    view = TreeView(cluster)
    fixable = {0: [0, 2], 1: [1, 3]}
    assert not leader_levels_within_one(view, fixable)
    assert leaders_can_be_within_one(view, fixable, [0, 1])
    assert not leaders_can_be_within_one(view, fixable, [])
    assert not leaders_can_be_within_one(view, {0: [0], 1: [0]}, [0, 1])
