"""Multi-level rack awareness (KIP-879): replicas spread evenly at every level of a rack tree.

Goals
    - Racks are paths (``/dc1/zone-b/rack-3``). Every partition spreads its replicas over the
      tree *at every level*: over data centres, then over the zones of each data centre, and
      so on down to brokers. With three data centres and a replication factor of 3 each
      partition has one replica per data centre; with 6, two per data centre on different
      racks. Kafka's single-level rack awareness promises neither.
    - The topic is even at every level: in a balanced tree the replica counts of the
      subtrees of one level differ by at most one. Preferred leaders differ by at most one
      per broker.
    - Continuation: adding partitions or raising the replication factor picks up where the
      rings left off, and the *whole topic* keeps the properties above.

Constraints
    - Hard: never a broker twice in a partition; a fenced broker never leads; partitions
      that exist keep their replicas, in order, as a prefix (a lower replication factor is
      refused).
    - The rack rule (:func:`rack_paths`). A leading ``/`` is optional: ``r1`` is ``/r1``,
      ``dc1/r1`` is ``/dc1/r1``. Shorter paths are padded to the deepest one by repeating
      their last component: next to ``/dc1/r1``, ``/dc3`` is ``/dc3/dc3``; the broker's
      place is known down to ``dc3`` only, so ``dc3`` becomes a subtree with one rack,
      which is spread against its siblings like any other. Components compare exactly
      (case-sensitive, like Kafka's racks). Refused, with :class:`ReplicaAssignorError`
      naming the broker: some brokers with a rack and some without; an empty rack or ``/``
      alone; an empty component (``//``, a trailing ``/``); a component with surrounding
      whitespace; a path that is the rack of one broker and a group of racks of another
      (``/dc1`` and ``/dc1/r1``). No rack at all: one level of brokers (round robin).
    - Randomness: one ``rng.randrange(k)`` per tree node with ``k >= 2`` children, root
      first, level by level, in sorted order; nothing else.

Algorithm
    *Tree and rings.* The root's children are the first path components, and so on; a
    rack's children are its brokers. A node's ring lists its children (sorted by name,
    brokers by id) from an offset on; a child's *rank* is its place in that list. ``t``
    counts the topic's replicas in a subtree; ``p`` this partition's.

    *One replica* walks from the root to a broker (seed 000, steps 1-4). At each node it
    goes to the child with the smallest ``(p, t, rank)`` among those with a broker still
    free for the partition (``p`` below the child's broker count). On a fresh topic this
    *is* the ring: the children already passed in the current round have one replica more,
    so the child the ring points at has the smallest ``(p, t, rank)`` (the replicas of one
    partition through a node are consecutive steps of its ring), and it is free unless the
    child has fewer brokers than the partition needs there. Where the ring provably equals
    the rule (every ring in a state a ring leaves, every child big enough:
    ``brokers >= ceil(min(rf, brokers of the node) / k)``, nothing fenced), the walk is
    done as the ring sequence itself, built with list slicing (fast); elsewhere a heap per
    node finds the smallest ``(t, rank)``.

    *A partition's* replicas walk one after another. Its leader is the unfenced replica
    with the fewest leaderships in the topic so far (the first placed on a tie), moved to
    the front; the others keep their placement order. If the leader counts end more than
    one apart, leaderships move along cost-reducing paths (a broker leading ``L`` gives a
    partition to one of its replicas, which gives one of its own on, ..., to a broker
    leading at most ``L - 2``) until none is left: an optimal semi-matching. If every
    replica landed on a fenced broker, one of them is swapped for an unfenced broker of the
    same rack (so the spread is kept), else of the nearest subtree that has one.

    *Continuation* starts ``t`` and the leader counts from the topic's assignment, and
    puts each ring where a ring that produced it would be: at the first of the fuller
    children when some hold one replica more and they form one run; when all are even, after
    the run of the last partition that sent the node a number of replicas that is not a
    multiple of its children (the fuller children of that partition start the run);
    otherwise at the random offset. A raised replication factor adds one replica per
    partition and round, by the walk (``p`` counts the replicas kept). If a level then ends
    more than one apart in a balanced tree, the round is solved exactly: each subtree must
    end at ``floor`` or ``ceil`` of its level's average, a flow with lower bounds from kinds
    of partitions to the brokers that keep them spread (skipped beyond a size budget). In
    an unbalanced tree the same flow keeps the walk's share of each sibling whose size is
    its own and evens the siblings of equal size, when that is possible.
    Partitions that exist are raised first, then new ones placed, in id order.

    *Why it holds.* No broker twice: a broker is a child with one broker, so ``p < 1``
    excludes it once used. Spread: the smallest ``p`` goes first (water-filling), so ``m``
    replicas reaching a node with ``k`` children cover ``min(m, k)`` of them and are split
    as evenly as the children's sizes allow, at every level. Even topic: two siblings with
    as many brokers as each other, within one before a call that only adds partitions,
    are within one after it. If ``X`` had one more than ``Y`` and were chosen, then
    ``p_X <= p_Y``;
    ``p_X < p_Y`` means they were two apart before the partition; ``p_X == p_Y`` means
    ``Y`` is free as well and has the smaller ``t``, so ``Y`` would win. In a balanced tree
    (the nodes of a level have as many children each, racks as many brokers) all siblings
    qualify; a node's children then split its count within one, and if the nodes of a
    level are within one, so are their children: every level is within one. Leaders: on a
    fresh balanced tree the broker sequence has period ``n`` (each broker once) and a
    partition takes the next ``rf`` of it; with ``g = gcd(rf, n)`` the first ``n / g``
    partitions find their first replica leaderless, the next ``n / g`` their second, and
    so on, so each broker leads once per ``n`` partitions. Added partitions continue the
    rings from where they stood, so the replicas stay even as above; when every ring
    position could be read back the topic gets the replica sets one call would have given,
    whose leaders are a choice within one, so the leader repair finds one. A raised
    replication factor keeps the leaders; the exact round keeps every level within one
    whenever any choice of added replicas can.

    *Unbalanced trees* keep the first two and: siblings of equal size within one (brokers
    of one rack in particular); siblings of different sizes each get the same share while
    none runs out of brokers for a partition (a level is a set of failure domains, treated
    alike, as Kafka treats racks, so brokers of a smaller domain carry more); leaders as
    even as the replica sets allow. Raising the replication factor there promises the
    first two only (the exact round is best effort).

Example
    Brokers 0, 1 in ``/dc1/r1``, 2, 3 in ``/dc1/r2``, 4, 5 in ``/dc2/r1``, 6, 7 in
    ``/dc2/r2``, every offset 0, four partitions with replication factor 3. The root ring
    alternates dc1, dc2; each data centre's ring its racks r1, r2; each rack's ring its two
    brokers. The walk gives the sequence 0 4 2 6 1 5 3 7 0 4 2 6, three per partition; the
    leader is the first replica leading nothing yet::

        partition  walk       leader  replicas
        0          0, 4, 2    0       [0, 4, 2]
        1          6, 1, 5    6       [6, 1, 5]
        2          3, 7, 0    3       [3, 7, 0]
        3          4, 2, 6    4       [4, 2, 6]

    Every partition has both data centres, and both racks of the data centre holding two
    of its replicas; each data centre holds 6 replicas, each rack 3, each broker 1 or 2.
"""

from __future__ import annotations

import heapq
import random
from collections import deque
from collections.abc import Iterable, Mapping, Sequence

from .base import ANONYMOUS, ReplicaAssignor
from .errors import InvalidPartitionsError, InvalidReplicationFactorError, ReplicaAssignorError
from .model import Assignment, BrokerMetadata, ClusterView

__all__ = [
    "MultiLevelRackAssignor",
    "RackPath",
    "assign",
    "format_rack",
    "parse_rack",
    "rack_paths",
]

RackPath = tuple[str, ...]
"""A normalised rack: its components from the top (``("dc1", "r1")`` for ``/dc1/r1``)."""


def format_rack(path: RackPath) -> str:
    """``("dc1", "r1")`` -> ``"/dc1/r1"``; the root is ``"/"``."""
    return "/" + "/".join(path)


def parse_rack(broker_id: int, rack: str) -> RackPath:
    """Split one broker's rack into components, refusing what is ambiguous."""
    body = rack[1:] if rack.startswith("/") else rack
    if not body:
        raise ReplicaAssignorError(
            f"Broker {broker_id} has rack {rack!r}, which names no rack: "
            "use a path such as '/dc1/rack1' (or give no broker a rack)."
        )
    parts = tuple(body.split("/"))
    for part in parts:
        if not part:
            raise ReplicaAssignorError(
                f"Broker {broker_id} has rack {rack!r} with an empty component: "
                "a rack path is names separated by single '/', with no '/' at the end."
            )
        if part != part.strip():
            raise ReplicaAssignorError(
                f"Broker {broker_id} has rack {rack!r} with a component that starts or ends "
                f"with whitespace ({part!r})."
            )
    return parts


def rack_paths(brokers: Iterable[BrokerMetadata]) -> dict[int, RackPath]:
    """The normalised rack path of every broker, all of the same depth.

    Empty paths when no broker has a rack. See the module docstring for the rule.
    """
    brokers = sorted(brokers, key=lambda b: b.id)
    with_rack = [b for b in brokers if b.rack is not None]
    if not with_rack:
        return {b.id: () for b in brokers}
    without = [b.id for b in brokers if b.rack is None]
    if without:
        shown = ", ".join(str(b) for b in without[:10]) + (", ..." if len(without) > 10 else "")
        many = len(without) > 1
        first = with_rack[0]
        raise ReplicaAssignorError(
            f"Broker{'s' if many else ''} {shown} ha{'ve' if many else 's'} no rack while broker "
            f"{first.id} has rack {first.rack!r}: multi-level rack-aware assignment needs a rack "
            "for every broker, or for none."
        )
    raw = {b.id: parse_rack(b.id, b.rack) for b in with_rack}
    first_broker: dict[RackPath, int] = {}
    for broker_id, path in raw.items():
        first_broker.setdefault(path, broker_id)
    for path in sorted(first_broker):
        for cut in range(1, len(path)):
            inner = path[:cut]
            if inner in first_broker:
                raise ReplicaAssignorError(
                    f"Broker {first_broker[inner]} has rack {format_rack(inner)!r}, which is also a "
                    f"group of racks (broker {first_broker[path]} has rack {format_rack(path)!r}): "
                    "a path must name either a rack or a group of racks, not both."
                )
    depth = max(len(p) for p in raw.values())
    return {b: p + (p[-1],) * (depth - len(p)) for b, p in raw.items()}


class _Tree:
    """The rack tree as flat lists indexed by node id; node 0 is the root.

    Levels: the root is 0, a path of ``d`` components is ``d``, brokers are one below the
    racks. A broker is a node without children (``children[n] is None``).
    """

    __slots__ = ("broker", "cap", "children", "level", "levels", "node_of_broker", "parent", "path")

    def __init__(self, paths: Mapping[int, RackPath]) -> None:
        self.path: list[RackPath] = [()]
        self.parent: list[int] = [-1]
        self.children: list[list[int] | None] = [[]]
        self.broker: list[int] = [-1]
        self.level: list[int] = [0]
        node_of_path: dict[RackPath, int] = {(): 0}
        for rack in sorted(set(paths.values())):
            for cut in range(1, len(rack) + 1):
                prefix = rack[:cut]
                if prefix not in node_of_path:
                    node_of_path[prefix] = self._add(node_of_path[prefix[:-1]], prefix, -1, [], cut)
        self.node_of_broker: dict[int, int] = {}
        for broker_id in sorted(paths):
            rack = paths[broker_id]
            self.node_of_broker[broker_id] = self._add(
                node_of_path[rack], rack, broker_id, None, len(rack) + 1)
        self.cap = [0] * len(self.path)
        for node in self.node_of_broker.values():
            while node >= 0:
                self.cap[node] += 1
                node = self.parent[node]
        self.levels: list[list[int]] = [[] for _ in range(max(self.level) + 1)]
        for node, level in enumerate(self.level):
            self.levels[level].append(node)

    def _add(self, parent: int, path: RackPath, broker_id: int, children: list[int] | None,
             level: int) -> int:
        node = len(self.path)
        self.path.append(path)
        self.parent.append(parent)
        self.children.append(children)
        self.broker.append(broker_id)
        self.level.append(level)
        self.children[parent].append(node)
        return node

    def inner_nodes(self) -> list[int]:
        """Nodes with children, root first, level by level, in sorted order."""
        return [n for nodes in self.levels for n in nodes if self.children[n] is not None]

    def balanced(self) -> bool:
        """Every node of a level has as many children as the others (so every rack as many brokers)."""
        return all(
            len({len(self.children[n]) for n in nodes}) == 1
            for nodes in self.levels if self.children[nodes[0]] is not None
        )

    def path_to(self, node: int) -> list[int]:
        """The nodes from the root down to ``node``."""
        out = []
        while node >= 0:
            out.append(node)
            node = self.parent[node]
        out.reverse()
        return out

    def counts(self, broker_lists: Iterable[Iterable[int]]) -> list[int]:
        """Replicas per subtree for the given replica lists (brokers outside the tree ignored)."""
        counts = [0] * len(self.path)
        node_of, parent = self.node_of_broker, self.parent
        for replicas in broker_lists:
            for broker_id in replicas:
                node = node_of.get(broker_id, -1)
                while node >= 0:
                    counts[node] += 1
                    node = parent[node]
        return counts


class _Rings:
    """The count rule: subtree counts ``t``, the rings and a heap per node.

    ``ring[n]`` lists the children of ``n`` from the ring's offset on, so a child's rank is
    its index there. ``heaps[n]`` holds ``t * k + rank`` for the ``k`` children, so its
    smallest entry is the child with the smallest ``(t, rank)``; an entry whose ``t`` is no
    longer the child's is stale and dropped when met. ``p`` counts the replicas of the
    partition being placed, per node.
    """

    __slots__ = ("fenced", "heaps", "p", "rank", "ring", "t", "tree")

    def __init__(self, tree: _Tree, ring: Sequence[list[int] | None], counts: Sequence[int],
                 fenced: frozenset[int]) -> None:
        self.tree = tree
        self.ring = ring
        self.fenced = fenced
        self.p = [0] * len(counts)
        self.rank = [0] * len(counts)
        for kids in ring:
            if kids is not None:
                for r, child in enumerate(kids):
                    self.rank[child] = r
        self.reset(counts)

    def reset(self, counts: Sequence[int]) -> None:
        """Start again from these subtree counts."""
        self.t = list(counts)
        self.heaps: list[list[int]] = [[] for _ in counts]
        for node, kids in enumerate(self.ring):
            if kids is not None:
                k = len(kids)
                heap = [self.t[c] * k + r for r, c in enumerate(kids)]
                heapq.heapify(heap)
                self.heaps[node] = heap

    def enter(self, broker_nodes: Iterable[int]) -> None:
        """Count a partition's existing replicas in ``p`` (``t`` counts them already)."""
        p, parent = self.p, self.tree.parent
        for node in broker_nodes:
            while node >= 0:
                p[node] += 1
                node = parent[node]

    def leave(self, broker_nodes: Iterable[int]) -> None:
        """Forget the ``p`` of a finished partition (all of its replicas)."""
        p, parent = self.p, self.tree.parent
        for node in broker_nodes:
            while node >= 0:
                p[node] = 0
                node = parent[node]

    def walk(self) -> int:
        """Place one replica of the current partition; return its broker's node."""
        ring, cap, t, p, heaps = self.ring, self.tree.cap, self.t, self.p, self.heaps
        heappop, heappush = heapq.heappop, heapq.heappush
        node = 0
        kids = ring[0]
        while kids is not None:
            k = len(kids)
            heap = heaps[node]
            if p[node] < k:
                # a child holds none of this partition yet: the smallest (t, rank) among those
                skipped = None
                while True:
                    entry = heap[0]
                    child = kids[entry % k]
                    if t[child] != entry // k:
                        heappop(heap)
                    elif p[child]:
                        if skipped is None:
                            skipped = []
                        skipped.append(heappop(heap))
                    else:
                        break
                heapq.heapreplace(heap, entry + k)
                if skipped:
                    for entry in skipped:
                        heappush(heap, entry)
            else:
                child = self._smallest(kids, lambda c: p[c] < cap[c])
                heappush(heap, (t[child] + 1) * k + self.rank[child])
            p[node] += 1
            t[node] += 1
            node = child
            kids = ring[node]
        p[node] += 1
        t[node] += 1
        return node

    def _smallest(self, kids: list[int], free) -> int:
        """The free child with the smallest ``(p, t, rank)``, or -1 (a linear scan)."""
        p, t = self.p, self.t
        best_key, best = None, -1
        for r, child in enumerate(kids):
            if free(child):
                key = (p[child], t[child], r)
                if best_key is None or key < best_key:
                    best_key, best = key, child
        return best

    def swap_for_unfenced(self, placed: list[int]) -> None:
        """Replace one of ``placed`` (all fenced) by an unfenced broker, as close as possible.

        A broker of the same rack first (every count above the brokers stays the same, so
        the spread does too), else of the same group one level up, and so on to the root;
        inside that subtree the walk's rule picks, among children with an unfenced broker
        still free. Raises if the cluster has no unfenced broker free for the partition.
        """
        tree, ring, p, fenced = self.tree, self.ring, self.p, self.fenced

        def free(child: int) -> bool:
            if ring[child] is None:
                return p[child] == 0 and tree.broker[child] not in fenced
            return any(free(c) for c in ring[child])

        paths = [tree.path_to(node) for node in placed]
        for depth in range(len(paths[0]) - 2, -1, -1):
            for index, path in enumerate(paths):
                top = path[depth]
                if any(free(c) for c in ring[top]):
                    self.unwalk(placed[index])
                    placed[index] = self._walk_from(path[:depth + 1], free)
                    return
        raise ReplicaAssignorError("No unfenced broker is free to lead a new partition.")

    def _walk_from(self, forced: list[int], free) -> int:
        """Count a replica down ``forced`` (root first), then on by the rule among ``free``."""
        ring, t, p, heaps, rank = self.ring, self.t, self.p, self.heaps, self.rank
        node, step = forced[0], 1
        while ring[node] is not None:
            kids = ring[node]
            if step < len(forced):
                child = forced[step]
                step += 1
            else:
                child = self._smallest(kids, free)
            heapq.heappush(heaps[node], (t[child] + 1) * len(kids) + rank[child])
            p[node] += 1
            t[node] += 1
            node = child
        p[node] += 1
        t[node] += 1
        return node

    def unwalk(self, broker_node: int) -> None:
        """Take back the replica placed on ``broker_node``."""
        tree, t, p, heaps = self.tree, self.t, self.p, self.heaps
        node = broker_node
        while node >= 0:
            p[node] -= 1
            t[node] -= 1
            up = tree.parent[node]
            if up >= 0:
                heapq.heappush(heaps[up], t[node] * len(self.ring[up]) + self.rank[node])
            node = up


def _ring_offset(counts: Sequence[int]) -> int | None:
    """Where a ring that left these counts (children in sorted order) had its offset, if clear.

    A ring that went round ``q`` times and ``s`` steps more leaves ``s`` children, in a row
    from its offset, with one replica more than the others.
    """
    low, high = min(counts), max(counts)
    if high - low != 1:
        return None
    starts = [i for i in range(len(counts)) if counts[i] == high and counts[i - 1] == low]
    return starts[0] if len(starts) == 1 else None


def _ring_pointers(tree: _Tree, ring: Sequence[list[int] | None], counts: Sequence[int],
                   rf: int) -> list[int] | None:
    """Ring pointers when the plain ring walk provably equals the count rule, else None.

    That holds when every ring is in a state a ring walk leaves (children, from the offset,
    with one replica more, then the others) and no child can run out of brokers for a
    partition (it has at least ``ceil(min(rf, brokers of the node) / k)``): then the child
    a ring points at always has the smallest ``(p, t, rank)``.
    """
    cap = tree.cap
    pointers = [0] * len(ring)
    for node, kids in enumerate(ring):
        if kids is None:
            continue
        k = len(kids)
        need = -(-min(rf, cap[node]) // k)
        if any(cap[c] < need for c in kids):
            return None
        values = [counts[c] for c in kids]
        high = values[0]
        s = sum(1 for v in values if v == high)
        if values[:s] != [high] * s or any(v != high - 1 for v in values[s:]):
            return None
        pointers[node] = s % k
    return pointers


class _Flow:
    """A small max-flow (Dinic) on integer capacities."""

    __slots__ = ("graph",)

    def __init__(self, size: int) -> None:
        self.graph: list[list[list[int]]] = [[] for _ in range(size)]

    def add(self, u: int, v: int, capacity: int) -> list[int]:
        forward = [v, capacity, len(self.graph[v])]
        self.graph[u].append(forward)
        self.graph[v].append([u, 0, len(self.graph[u]) - 1])
        return forward

    def max_flow(self, source: int, sink: int) -> int:
        graph, total = self.graph, 0
        while True:
            level = [-1] * len(graph)
            level[source] = 0
            queue = deque([source])
            while queue:
                u = queue.popleft()
                for v, capacity, _ in graph[u]:
                    if capacity > 0 and level[v] < 0:
                        level[v] = level[u] + 1
                        queue.append(v)
            if level[sink] < 0:
                return total
            it = [0] * len(graph)

            def push(u: int, limit: int) -> int:
                if u == sink:
                    return limit
                while it[u] < len(graph[u]):
                    edge = graph[u][it[u]]
                    v, capacity, rev = edge
                    if capacity > 0 and level[v] == level[u] + 1:
                        pushed = push(v, min(limit, capacity))
                        if pushed:
                            edge[1] -= pushed
                            graph[v][rev][1] += pushed
                            return pushed
                    it[u] += 1
                return 0

            while True:
                pushed = push(source, 1 << 60)
                if not pushed:
                    break
                total += pushed


def _spread_targets(tree: _Tree, p: Sequence[int]) -> list[int]:
    """The brokers a partition (with counts ``p``) may take next without losing its spread."""
    out: list[int] = []
    cap, children = tree.cap, tree.children
    stack = [0]
    while stack:
        node = stack.pop()
        kids = children[node]
        if kids is None:
            out.append(node)
            continue
        free = [c for c in kids if p[c] < cap[c]]
        least = min(p[c] for c in free)
        stack.extend(c for c in reversed(free) if p[c] == least)
    return out


_EVEN_ROUND_BUDGET = 400_000
"""At most this many (partition kind, broker) arcs in one exact round (keeps a round cheap)."""


def _even_round(tree: _Tree, rings: _Rings, units: list[tuple[list[int], int]],
                final: Sequence[tuple[int, int]]) -> list[int] | None:
    """Re-choose one round of added replicas so that every level is within one, if possible.

    ``units`` are ``(existing broker nodes, placed broker node)``, one per partition;
    ``final[n]`` the range node ``n`` must end in (:func:`_round_bounds`): bounds on how
    many added replicas each subtree takes. With partitions grouped by kind (the same
    current replicas), that is a flow with lower bounds: source -> kind -> the brokers that
    keep the kind spread -> up the tree -> sink. Returns the new placed nodes, or None when
    no choice meets the bounds (or the round is too large to solve exactly).
    """
    parent = tree.parent
    base = list(rings.t)
    for _, placed in units:
        node = placed
        while node >= 0:
            base[node] -= 1
            node = parent[node]
    bounds: list[tuple[int, int, int]] = []
    for node in range(1, len(tree.path)):
        low, high = final[node]
        if base[node] > high:
            return None
        bounds.append((node, max(0, low - base[node]), high - base[node]))
    kinds: dict[tuple[int, ...], list[int]] = {}
    for index, (existing, _) in enumerate(units):
        kinds.setdefault(tuple(sorted(existing)), []).append(index)
    p = [0] * len(tree.path)
    targets: list[list[int]] = []
    arcs = 0
    for existing in kinds:
        for node in existing:
            while node >= 0:
                p[node] += 1
                node = parent[node]
        targets.append(_spread_targets(tree, p))
        arcs += len(targets[-1])
        if arcs > _EVEN_ROUND_BUDGET:
            return None
        for node in existing:
            while node >= 0:
                p[node] = 0
                node = parent[node]

    source, sink, super_source, super_sink = 0, 1, 2, 3
    first_kind = 4
    first_node = first_kind + len(kinds)
    flow = _Flow(first_node + len(tree.path))
    excess = [0] * (first_node + len(tree.path))

    def bounded(u: int, v: int, low: int, high: int) -> None:
        if high > low:
            flow.add(u, v, high - low)
        excess[v] += low
        excess[u] -= low

    kind_arcs = []
    for k, members in enumerate(kinds.values()):
        bounded(source, first_kind + k, len(members), len(members))
        kind_arcs.append([(b, flow.add(first_kind + k, first_node + b, len(members))) for b in targets[k]])
    for node, low, high in bounds:
        bounded(first_node + node, first_node + parent[node], low, high)
    bounded(first_node, sink, len(units), len(units))
    flow.add(sink, source, len(units))
    need = 0
    for node, value in enumerate(excess):
        if value > 0:
            flow.add(super_source, node, value)
            need += value
        elif value < 0:
            flow.add(node, super_sink, -value)
    if flow.max_flow(super_source, super_sink) != need:
        return None
    placed = [0] * len(units)
    for k, members in enumerate(kinds.values()):
        chosen = [b for b, arc in kind_arcs[k] for _ in range(len(members) - arc[1])]
        for index, broker_node in zip(members, chosen):
            placed[index] = broker_node
    return placed


def _even_leaders(orders: Sequence[list[int]], leader: list[int], counts: dict[int, int],
                  fenced: frozenset[int]) -> None:
    """Move leaderships of this call's partitions along cost-reducing paths until none is left.

    ``orders[i]`` are the replicas of the ``i``-th new partition, ``leader[i]`` its leader,
    ``counts`` the leaderships per unfenced broker in the whole topic. A cost-reducing path
    goes from a broker leading ``L`` partitions, through partitions whose leadership passes
    to another of their (unfenced) replicas, to a broker leading ``L - 2`` or fewer;
    flipping it lowers the sum of squared counts, so this ends. Without one, the leaders
    are an optimal semi-matching (Harvey et al., 2003): the counts are as even as the
    replica sets allow, within one whenever any choice of leaders is. One breadth-first
    search per count level ``L`` (from all brokers leading ``L`` at once) finds a path if
    there is one.
    """
    led: dict[int, list[int]] = {b: [] for b in counts}
    for i, broker_id in enumerate(leader):
        led[broker_id].append(i)

    def search(level: int) -> bool:
        starts = sorted(b for b in counts if counts[b] == level)
        came_from: dict[int, tuple[int, int]] = dict.fromkeys(starts, (-1, -1))
        queue = deque(starts)
        while queue:
            broker_id = queue.popleft()
            for i in sorted(led[broker_id]):
                for other in orders[i]:
                    if other in came_from or other in fenced:
                        continue
                    came_from[other] = (broker_id, i)
                    if counts[other] <= level - 2:
                        node = other
                        while came_from[node][0] >= 0:
                            previous, j = came_from[node]
                            led[previous].remove(j)
                            led[node].append(j)
                            leader[j] = node
                            node = previous
                        counts[node] -= 1
                        counts[other] += 1
                        return True
                    queue.append(other)
        return False

    while True:
        low = min(counts.values())
        levels = sorted({c for c in counts.values() if c >= low + 2}, reverse=True)
        if not any(search(level) for level in levels):
            return


class MultiLevelRackAssignor(ReplicaAssignor):
    """KIP-879's multi-level rack-aware placement; see the module docstring."""

    name = "multi-level"

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
        return assign(topic_name, partitions, replication_factor, cluster, rng)


def assign(topic_name: str | None, partitions: Sequence[int], replication_factor: int,
           cluster: ClusterView, rng: random.Random, *, ring_walk: bool = True) -> Assignment:
    """The assignor as a function. ``ring_walk=False`` always uses the count rule (for tests
    that check the plain ring walk gives the same answer where it is used)."""
    requested = sorted(set(partitions))
    if requested and requested[0] < 0:
        raise InvalidPartitionsError(f"Partition ids must not be negative, got {requested[0]}.")
    tree = _Tree(rack_paths(cluster.brokers))
    current = cluster.topic_assignment(topic_name)
    node_of, broker_of = tree.node_of_broker, tree.broker
    for p in requested:
        if p not in current:
            continue
        gone = [b for b in current[p] if b not in node_of]
        if gone:
            raise ReplicaAssignorError(
                f"Partition {p} of topic {topic_name}: current replicas {gone} are not available brokers."
            )
        if len(current[p]) > replication_factor:
            raise InvalidReplicationFactorError(
                f"Partition {p} of topic {topic_name} already has {len(current[p])} replicas; "
                f"replication factor {replication_factor} would not be an increase."
            )
    fenced = cluster.fenced
    new_ids = [p for p in requested if p not in current]
    if new_ids and len(fenced) == len(cluster.brokers):
        raise ReplicaAssignorError(
            "All brokers are currently fenced: a new partition needs an unfenced leader.")

    draws = {node: rng.randrange(len(tree.children[node]))
             for node in tree.inner_nodes() if len(tree.children[node]) > 1}
    out: Assignment = {}
    counts = tree.counts(current.values())
    rings = None

    # 1. replication factor raised: one more replica per partition and round
    grown = {p: list(current[p]) for p in requested if p in current}
    if any(len(r) < replication_factor for r in grown.values()):
        rings = _Rings(tree, _rings(tree, draws, counts, current), counts, fenced)
        while True:
            short = [p for p in grown if len(grown[p]) < replication_factor]
            if not short:
                break
            units = []
            for p in short:
                existing = [node_of[b] for b in grown[p]]
                rings.enter(existing)
                placed = rings.walk()
                rings.leave(existing + [placed])
                units.append((existing, placed))
            better = None
            final = _round_bounds(tree, rings.t)
            if final is not None:
                better = _even_round(tree, rings, units, final)
            for p, (_, placed) in zip(short, units):
                grown[p].append(broker_of[placed])
            if better is not None:
                for p, placed in zip(short, better):
                    grown[p][-1] = broker_of[placed]
                rings.reset(tree.counts({**current, **grown}.values()))
        counts = list(rings.t)
    out.update(grown)
    if not new_ids:
        return {p: out[p] for p in requested}

    # 2. new partitions, in id order
    ring = _rings(tree, draws, counts, {**current, **grown})
    leaders = dict.fromkeys((b for b in node_of if b not in fenced), 0)
    for replicas in current.values():
        if replicas and replicas[0] in leaders:
            leaders[replicas[0]] += 1
    pointers = _ring_pointers(tree, ring, counts, replication_factor) if ring_walk and not fenced else None
    rf = replication_factor
    if pointers is not None:
        sequence = _ring_sequence(tree, ring, pointers, len(new_ids) * rf)
        orders = [sequence[i:i + rf] for i in range(0, len(sequence), rf)]
        leader_of = []
        lead, count = leader_of.append, leaders.__getitem__
        for chosen in orders:
            best = min(chosen, key=count)
            leaders[best] += 1
            lead(best)
    else:
        rings = _Rings(tree, ring, counts, fenced)
        orders, leader_of = [], []
        for _ in new_ids:
            placed = [rings.walk() for _ in range(rf)]
            chosen = [broker_of[n] for n in placed]
            best = _least_leading(chosen, leaders, fenced)
            if best is None:
                rings.swap_for_unfenced(placed)
                chosen = [broker_of[n] for n in placed]
                best = _least_leading(chosen, leaders, fenced)
            rings.leave(placed)
            leaders[best] += 1
            orders.append(chosen)
            leader_of.append(best)
    if leaders and max(leaders.values()) - min(leaders.values()) > 1:
        _even_leaders(orders, leader_of, leaders, fenced)
    for p, chosen, best in zip(new_ids, orders, leader_of):
        if chosen[0] != best:
            chosen.remove(best)
            chosen.insert(0, best)
        out[p] = chosen
    return {p: out[p] for p in requested}


_HISTORY_LIMIT = 100
"""Partitions looked back at, beyond two per broker, to read a ring's position."""


def _rings(tree: _Tree, draws: Mapping[int, int], counts: Sequence[int],
           history: Mapping[int, Sequence[int]]) -> list[list[int] | None]:
    """Every node's children from its ring's offset on.

    The offset is where a ring that produced the topic's current assignment would have
    it: the first of the fuller children when some have one replica more (and they form
    one run); when all children are even, the pointer left by the last partition that
    sent this node a number of replicas that is not a multiple of its children (the
    fuller children of that partition are the start of its run), looking back over at most
    two partitions per broker plus :data:`_HISTORY_LIMIT` (a ring's pattern repeats within
    that). Otherwise (a new topic, or no clear trace) the random draw.
    """
    out: list[list[int] | None] = [None] * len(tree.path)
    children = tree.children
    pending: dict[int, None] = {}
    for node in tree.inner_nodes():
        kids = children[node]
        values = [counts[c] for c in kids]
        offset = _ring_offset(values) if len(kids) > 1 else 0
        if offset is None and len(kids) > 1 and counts[node] and min(values) == max(values):
            pending[node] = None
        out[node] = offset
    node_of, parent = tree.node_of_broker, tree.parent
    for partition in sorted(history, reverse=True)[:_HISTORY_LIMIT + 2 * len(node_of)]:
        if not pending:
            break
        per_node: dict[int, int] = {}
        for broker_id in history[partition]:
            node = node_of.get(broker_id, -1)
            while node >= 0:
                per_node[node] = per_node.get(node, 0) + 1
                node = parent[node]
        for node in [n for n in pending if per_node.get(n, 0) % len(children[n])]:
            del pending[node]
            values = [per_node.get(c, 0) for c in children[node]]
            start = _ring_offset(values)
            if start is not None:
                out[node] = (start + per_node[node]) % len(values)
    for node in tree.inner_nodes():
        offset = out[node]
        if offset is None:
            offset = draws.get(node, 0)
        kids = children[node]
        out[node] = kids[offset:] + kids[:offset]
    return out


def _ring_sequence(tree: _Tree, ring: Sequence[list[int] | None], pointers: Sequence[int],
                   total: int) -> list[int]:
    """The next ``total`` brokers of the plain ring walk, built subtree by subtree.

    The ``j``-th replica through a node goes to the child ``j`` places after its pointer
    (mod ``k``), so a child's replicas are every ``k``-th slot of its parent's: list
    slicing instead of one walk per replica.
    """
    broker = tree.broker

    def emit(node: int, m: int) -> list[int]:
        kids = ring[node]
        if kids is None:
            return [broker[node]] * m
        k, s = len(kids), pointers[node]
        order = kids[s:] + kids[:s]
        if ring[order[0]] is None:
            ids = [broker[c] for c in order]
            return ids * (m // k) + ids[:m % k]
        out = [0] * m
        for j, child in enumerate(order[:m]):
            out[j::k] = emit(child, (m - j + k - 1) // k)
        return out

    return emit(0, total)


def _round_bounds(tree: _Tree, counts: Sequence[int]) -> list[tuple[int, int]] | None:
    """The final count range each node must end in for a round to count as even, or None
    when the counts already are.

    Balanced tree: every node of a level at ``floor`` or ``ceil`` of the level's average.
    Otherwise, from the root down: an only child in its parent's range; children of a node
    that hold as many brokers as each other at ``floor`` or ``ceil`` of their total; any
    other child at its count (the walk gave siblings of different sizes their shares).
    """
    bounds = [(c, c) for c in counts]
    uneven = False
    if tree.balanced():
        total = counts[0]
        for nodes in tree.levels[1:]:
            low, high = total // len(nodes), -(-total // len(nodes))
            uneven = uneven or any(not low <= counts[n] <= high for n in nodes)
            for node in nodes:
                bounds[node] = (low, high)
    else:
        for node in tree.inner_nodes():
            if len(tree.children[node]) == 1:
                bounds[tree.children[node][0]] = bounds[node]
                continue
            groups: dict[int, list[int]] = {}
            for child in tree.children[node]:
                groups.setdefault(tree.cap[child], []).append(child)
            for group in groups.values():
                total = sum(counts[c] for c in group)
                low, high = total // len(group), -(-total // len(group))
                uneven = uneven or any(not low <= counts[c] <= high for c in group)
                for child in group:
                    bounds[child] = (low, high)
    return bounds if uneven else None


def _least_leading(chosen: Sequence[int], leaders: Mapping[int, int], fenced: frozenset[int]) -> int | None:
    """The unfenced broker among ``chosen`` that leads least so far (first on a tie)."""
    best = None
    for broker_id in chosen:
        if broker_id not in fenced and (best is None or leaders[broker_id] < leaders[best]):
            best = broker_id
    return best
