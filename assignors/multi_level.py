"""Multi-level rack awareness (KIP-879): replicas spread evenly at every level of a rack tree.

Goals
    - Racks are paths (``/dc1/zone-b/rack-3``). Every partition spreads its replicas over the
      tree *at every level*: over data centres, then over the zones of each data centre, and
      so on down to brokers. With three data centres and a replication factor of 3 each
      partition has one replica per data centre; with 6, two per data centre on different
      racks. Kafka's single-level rack awareness promises neither.
    - The topic is even at every level: in a balanced tree the replica counts of the
      subtrees of one level differ by at most one. Preferred leaders differ by at most one
      per broker and, in a balanced tree with nothing fenced, per subtree of every level too
      whenever some choice of leaders allows it.
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
    with the smallest leader key: its leaderships in the topic so far, then its level-1
    subtree's, then its level-2 subtree's, ... (the first placed on a tie); it moves to the
    front, the others keep their placement order. Then, each only when needed: (1) if the
    broker counts end more than one apart, leaderships move along cost-reducing paths (a
    broker leading ``L`` gives a partition to one of its replicas, which gives one of its
    own on, ..., to a broker leading at most ``L - 2``) until none is left: an optimal
    semi-matching. (2) With every broker leading ``H`` or ``H - 1``, level by level from
    the top, chains move one leadership from a subtree to a sibling leading at least two
    fewer, brokers swapping ``H`` and ``H - 1`` in pairs and every subtree above keeping
    its count (:func:`_even_leader_levels`). (3) In a balanced tree with nothing fenced, if
    a level is still more than one apart, the call's leaders are chosen exactly: a flow
    with bounds, every subtree of a level (brokers included) at ``floor`` or ``ceil`` of
    its level's average, skipped beyond a size budget. Brokers come first: a level is
    evened only as far as the brokers stay as even as they can be. If every replica landed
    on a fenced broker, one of them is swapped for an unfenced broker of the same rack (so
    the spread is kept), else of the nearest subtree that has one.

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
    partition takes the next ``rf`` of it; with ``g = gcd(rf, n)``, leading the first
    replica for ``n / g`` partitions, then the second for the next ``n / g``, and so on,
    has each broker lead once per ``n`` partitions: a choice within one exists, so repair
    (1) ends within one. Added partitions continue the rings from where they stood, so the
    replicas stay even as above; when every ring position could be read back the topic gets
    the replica sets one call would have given, whose leaders are a choice within one, so
    the repair finds one. Per level, repair (3) is exact: if some choice puts every level
    and the brokers within one, the call ends with one (the leader key alone almost always
    gets there; the repairs rarely run). Repair (2) keeps the multiset of broker counts and
    every level above its own, and lowers the sum of squared counts of its level, so it
    ends. A raised replication factor keeps the leaders; the exact round keeps every level
    within one whenever any choice of added replicas can.

    *Unbalanced trees* (the proportional rule, :data:`MultiLevelRackAssignor.proportional`).
    Above the racks, the key is ``(p, fresh, t per alive broker, rank)``: the partition is
    water-filled over the children as before (diversity first); on a tie, the child in
    which the replica reaches a subtree the partition does not use yet at the highest level
    (``fresh``: 1 for an unused child, 2 for an unused grandchild, ...), so a data centre
    with a second rack free beats one with a single rack; then the fewest topic replicas
    per alive broker, so siblings share replicas in proportion to their brokers and brokers
    stay within one wherever diversity leaves the choice. On a balanced tree every
    sibling is alike and the key is the ring's, so the answers are exactly the literal
    ring's (which ``multi-level-ring`` keeps on every tree: each child of a node the same
    share, so brokers of a smaller domain carry more). The plain ring sequence is not used
    under the proportional rule (the heap and a linear scan per node above the racks are).
    Example: racks ``/dc1/zone-a/rack-0`` (4 brokers), ``/dc1/zone-b/rack-2`` (3),
    ``/dc2/zone-a/rack-1`` (4), RF 3, 12 partitions: the ring gives each data centre 18
    replicas, so 6 partitions put two replicas in dc2's one rack and its brokers carry
    4-5 against 2-3; the rule puts one replica in each rack (dc1's second zone is fresh),
    brokers 3 or 4 each. The guarantees below hold for both rules: siblings of equal size
    within one (brokers of one rack in particular); leaders per
    broker as even as the replica sets allow, sibling subtrees evened by repair (2) where
    the brokers allow (brokers win: 100 leaderships per broker on data centres of 336, 332
    and 332 brokers leave them 400 apart). Raising the replication factor there promises the
    first two only (the exact round is best effort).

Example
    Brokers 0, 1 in ``/dc1/r1``, 2, 3 in ``/dc1/r2``, 4, 5 in ``/dc2/r1``, 6, 7 in
    ``/dc2/r2``, every offset 0, four partitions with replication factor 3. The root ring
    alternates dc1, dc2; each data centre's ring its racks r1, r2; each rack's ring its two
    brokers. The walk gives the sequence 0 4 2 6 1 5 3 7 0 4 2 6, three per partition; the
    leader leads fewest so far, then is in the data centre, then the rack, leading fewest::

        partition  walk       leader  replicas
        0          0, 4, 2    0       [0, 4, 2]
        1          6, 1, 5    6       [6, 1, 5]
        2          3, 7, 0    3       [3, 7, 0]
        3          4, 2, 6    4       [4, 2, 6]

    Every partition has both data centres, and both racks of the data centre holding two
    of its replicas; each data centre holds 6 replicas, each rack 3, each broker 1 or 2.
    Partition 2's leader is 3, not 7: both lead nothing and their data centres one
    partition each, but 7's rack leads one (6) and 3's none. Each data centre leads 2,
    each rack 1.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import itemgetter
from typing import cast

from .base import ANONYMOUS, ReplicaAssignor
from .errors import ReplicaAssignorError
from .flow import BoundedFlow
from .model import Assignment, BrokerMetadata, ClusterView

__all__ = [
    "MultiLevelRackAssignor",
    "MultiLevelRingAssignor",
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
    with_rack = [(b.id, b.rack) for b in brokers if b.rack is not None]
    if not with_rack:
        return {b.id: () for b in brokers}
    without = [b.id for b in brokers if b.rack is None]
    if without:
        shown = ", ".join(str(b) for b in without[:10]) + (", ..." if len(without) > 10 else "")
        many = len(without) > 1
        first_id, first_rack = with_rack[0]
        raise ReplicaAssignorError(
            f"Broker{'s' if many else ''} {shown} ha{'ve' if many else 's'} no rack while broker "
            f"{first_id} has rack {first_rack!r}: multi-level rack-aware assignment needs a rack "
            "for every broker, or for none."
        )
    raw = {broker_id: parse_rack(broker_id, rack) for broker_id, rack in with_rack}
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
        siblings = self.children[parent]
        assert siblings is not None  # a parent is a rack or a group of racks, never a broker
        siblings.append(node)
        return node

    def inner_nodes(self) -> list[int]:
        """Nodes with children, root first, level by level, in sorted order."""
        return [n for nodes in self.levels for n in nodes if self.children[n] is not None]

    def balanced(self) -> bool:
        """Every node of a level has as many children as the others (so every rack as many brokers)."""
        return all(
            len({len(cast("list[int]", self.children[n])) for n in nodes}) == 1
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
    its index there. ``heaps[n]`` holds ``t * weight * k + rank`` for the ``k`` children
    (``weight`` is 1 but under a node of the proportional rule), so its smallest entry is the
    child with the smallest ``(t, rank)`` (``(t per broker, rank)``); an entry whose ``t`` is no
    longer the child's is stale and dropped when met. ``p`` counts the replicas of the
    partition being placed, per node.
    """

    __slots__ = ("fenced", "heaps", "p", "rank", "ring", "t", "tree", "uneven", "weight")

    def __init__(self, tree: _Tree, ring: Sequence[list[int] | None], counts: Sequence[int],
                 fenced: frozenset[int], *, proportional: bool = True) -> None:
        self.tree = tree
        self.ring = ring
        self.fenced = fenced
        self.p = [0] * len(counts)
        self.rank = [0] * len(counts)
        for kids in ring:
            if kids is not None:
                for r, child in enumerate(kids):
                    self.rank[child] = r
        # the proportional rule (an unbalanced tree, above the racks): the key is
        # ``(p, fresh, t per broker, rank)``; ``t`` per broker compared exactly as
        # ``t * weight`` with ``weight = lcm(sizes) / size``
        self.weight = [1] * len(counts)
        self.uneven = [False] * len(counts)
        for node in _proportional_nodes(tree) if proportional else ():
            kids = cast("list[int]", tree.children[node])
            common = math.lcm(*(tree.cap[c] for c in kids))
            self.uneven[node] = True
            for child in kids:
                self.weight[child] = common // tree.cap[child]
        self.reset(counts)

    def reset(self, counts: Sequence[int]) -> None:
        """Start again from these subtree counts."""
        self.t = list(counts)
        self.heaps: list[list[int]] = [[] for _ in counts]
        for node, kids in enumerate(self.ring):
            if kids is not None:
                k = len(kids)
                heap = [self.t[c] * self.weight[c] * k + r for r, c in enumerate(kids)]
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
        ring, cap, t, p, heaps, weight = self.ring, self.tree.cap, self.t, self.p, self.heaps, self.weight
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
                    if t[child] * weight[child] != entry // k:
                        heappop(heap)
                    elif p[child]:
                        if skipped is None:
                            skipped = []
                        skipped.append(heappop(heap))
                    else:
                        break
                heapq.heapreplace(heap, entry + weight[child] * k)
                if skipped:
                    for entry in skipped:
                        heappush(heap, entry)
            else:
                child = self._smallest(kids, lambda c: p[c] < cap[c])
                heappush(heap, (t[child] + 1) * weight[child] * k + self.rank[child])
            p[node] += 1
            t[node] += 1
            node = child
            kids = ring[node]
        p[node] += 1
        t[node] += 1
        return node

    def _smallest(self, kids: list[int], free: Callable[[int], bool]) -> int:
        """The free child with the smallest ``(p, t, rank)``, or -1 (a linear scan); under a
        node of the proportional rule, the smallest ``(p, fresh, t per broker, rank)``."""
        p, t, weight = self.p, self.t, self.weight
        proportional = self.uneven[self.tree.parent[kids[0]]]
        best_key, best = None, -1
        for r, child in enumerate(kids):
            if free(child):
                fresh = self._fresh(child) if proportional and p[child] else 0
                key = (p[child], fresh, t[child] * weight[child], r)
                if best_key is None or key < best_key:
                    best_key, best = key, child
        return best

    def _fresh(self, node: int) -> int:
        """How many levels below ``node`` (which holds some of the partition) the shallowest
        subtree holding none of it starts: 1 when a child is unused, 2 when a grandchild is,
        ...; a large number when only brokers are left (a used broker is never fresh)."""
        children, p = self.tree.children, self.p
        kids = children[node]
        if kids is None:
            return _NEVER
        if p[node] < len(kids) or any(not p[c] for c in kids):
            return 1
        return 1 + min(self._fresh(c) for c in kids)

    def swap_for_unfenced(self, placed: list[int]) -> None:
        """Replace one of ``placed`` (all fenced) by an unfenced broker, as close as possible.

        A broker of the same rack first (every count above the brokers stays the same, so
        the spread does too), else of the same group one level up, and so on to the root;
        inside that subtree the walk's rule picks, among children with an unfenced broker
        still free. Raises if the cluster has no unfenced broker free for the partition.
        """
        tree, ring, p, fenced = self.tree, self.ring, self.p, self.fenced

        def free(child: int) -> bool:
            kids = ring[child]
            if kids is None:
                return p[child] == 0 and tree.broker[child] not in fenced
            return any(free(c) for c in kids)

        paths = [tree.path_to(node) for node in placed]
        for depth in range(len(paths[0]) - 2, -1, -1):
            for index, path in enumerate(paths):
                top = path[depth]  # above the broker: a node with children
                if any(free(c) for c in cast("list[int]", ring[top])):
                    self.unwalk(placed[index])
                    placed[index] = self._walk_from(path[:depth + 1], free)
                    return
        raise ReplicaAssignorError("No unfenced broker is free to lead a new partition.")

    def _walk_from(self, forced: list[int], free: Callable[[int], bool]) -> int:
        """Count a replica down ``forced`` (root first), then on by the rule among ``free``."""
        ring, t, p, heaps, rank = self.ring, self.t, self.p, self.heaps, self.rank
        node, step = forced[0], 1
        kids = ring[node]
        while kids is not None:
            if step < len(forced):
                child = forced[step]
                step += 1
            else:
                child = self._smallest(kids, free)
            heapq.heappush(heaps[node], (t[child] + 1) * self.weight[child] * len(kids) + rank[child])
            p[node] += 1
            t[node] += 1
            node = child
            kids = ring[node]
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
                k = len(cast("list[int]", self.ring[up]))
                heapq.heappush(heaps[up], t[node] * self.weight[node] * k + self.rank[node])
            node = up


_NEVER = 1 << 30
""":meth:`_Rings._fresh` of a subtree in which nothing is fresh."""


def _proportional_nodes(tree: _Tree) -> list[int]:
    """Where the proportional rule applies: in an unbalanced tree, the nodes above the racks
    (in a balanced tree it gives the literal ring's answers; a rack's children are brokers of
    one size each, so its ring is the rule)."""
    if tree.balanced():
        return []
    return [node for node in tree.inner_nodes() if tree.children[cast("list[int]", tree.children[node])[0]] is not None]


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
    for kind in kinds:
        for node in kind:
            while node >= 0:
                p[node] += 1
                node = parent[node]
        targets.append(_spread_targets(tree, p))
        arcs += len(targets[-1])
        if arcs > _EVEN_ROUND_BUDGET:
            return None
        for node in kind:
            while node >= 0:
                p[node] = 0
                node = parent[node]

    net = BoundedFlow(len(kinds) + len(tree.path))
    source, sink, first_kind = BoundedFlow.SOURCE, BoundedFlow.SINK, BoundedFlow.FIRST
    first_node = first_kind + len(kinds)
    bounded = net.bounded

    kind_arcs = []
    for k, members in enumerate(kinds.values()):
        bounded(source, first_kind + k, len(members), len(members))
        kind_arcs.append([(b, net.add_edge(first_kind + k, first_node + b, len(members))) for b in targets[k]])
    for node, low, high in bounds:
        bounded(first_node + node, first_node + parent[node], low, high)
    bounded(first_node, sink, len(units), len(units))
    if not net.feasible(len(units)):
        return None
    out = [0] * len(units)
    for k, members in enumerate(kinds.values()):
        chosen = [b for b, arc in kind_arcs[k] for _ in range(net.flow_on(arc))]
        for index, broker_node in zip(members, chosen, strict=True):
            out[index] = broker_node
    return out


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


def _even_leader_levels(tree: _Tree, orders: Sequence[list[int]], leader: list[int], led: list[int],
                        fenced: frozenset[int]) -> None:
    """Even the leader counts of sibling subtrees, level by level from the top, keeping the
    broker counts' multiset (so :func:`_even_leaders`' optimum) and every level above.

    ``led[n]`` counts the topic's leaders in subtree (or broker) ``n`` and is kept up to
    date. Runs when the unfenced brokers lead ``H`` or ``H - 1`` partitions each (with both
    present; when all are equal the subtree counts are fixed). A move at level ``l`` is a
    chain from a broker leading ``H`` under a subtree ``X`` to one leading ``H - 1`` under a
    sibling ``Y`` of ``X`` leading at least two fewer: this call's partitions pass their
    leadership along replicas (each passer gives one and takes one) and, where a broker
    leading ``H - 1`` takes one, another broker leading ``H`` of the same level-``l``
    subtree may give one instead of it passing on (the subtree's count stays). ``X`` loses
    one, ``Y`` gains one, every other subtree of levels ``<= l`` keeps its count, and the
    brokers' counts are swapped in pairs: the sum of squared counts of level ``l`` drops, so
    this ends. One breadth-first search per uneven group of siblings (each broker reached
    once) looks for a chain; it need not find every one that exists, which is why balanced
    trees have the exact round (:func:`_even_leader_round`) after it.
    """
    node_of = tree.node_of_broker
    unfenced = [b for b in node_of if b not in fenced]
    values = {led[node_of[b]] for b in unfenced}
    if len(values) != 2 or len(tree.levels) < 3:
        return
    high = max(values)
    children, parent = tree.children, tree.parent
    depth = len(tree.levels) - 2
    above = {b: tree.path_to(node_of[b]) for b in unfenced}
    owned: dict[int, list[int]] = {b: [] for b in unfenced}
    for i, broker_id in enumerate(leader):
        owned[broker_id].append(i)

    def apply(came_from: dict[int, tuple[int, int]], end: int) -> None:
        broker_id = end
        while came_from[broker_id][0] >= 0:
            previous, i = came_from[broker_id]
            if i >= 0:  # partition i passes from previous to broker_id (i < 0: a jump)
                owned[previous].remove(i)
                owned[broker_id].append(i)
                leader[i] = broker_id
                for node in above[previous]:
                    led[node] -= 1
                for node in above[broker_id]:
                    led[node] += 1
            broker_id = previous

    def search(level: int, group: int) -> bool:
        kids = cast("list[int]", children[group])  # a group of subtrees: never a broker
        top = max(led[c] for c in kids)
        targets = {c for c in kids if led[c] <= top - 2}
        starts = sorted(b for b in unfenced if led[node_of[b]] == high
                        and parent[above[b][level]] == group and led[above[b][level]] == top)
        came_from: dict[int, tuple[int, int]] = dict.fromkeys(starts, (-1, -1))
        jumped: set[int] = set()
        queue = deque(starts)
        while queue:
            broker_id = queue.popleft()
            for i in sorted(owned[broker_id]):
                for other in orders[i]:
                    if other in came_from or other in fenced:
                        continue
                    came_from[other] = (broker_id, i)
                    if led[node_of[other]] == high:
                        queue.append(other)
                        continue
                    subtree = above[other][level]
                    if subtree in targets:
                        apply(came_from, other)
                        return True
                    queue.append(other)
                    if subtree not in jumped:
                        jumped.add(subtree)
                        for giver in _brokers_under(tree, subtree):
                            if giver not in came_from and giver not in fenced and led[node_of[giver]] == high:
                                came_from[giver] = (other, -1)
                                queue.append(giver)
        return False

    for level in range(1, depth + 1):
        # levels above the brokers: every node has children
        groups = [n for n in tree.levels[level - 1] if len(cast("list[int]", children[n])) > 1]
        while True:
            uneven = [g for g in groups
                      if max(led[c] for c in cast("list[int]", children[g]))
                      - min(led[c] for c in cast("list[int]", children[g])) > 1]
            if not any(search(level, g) for g in uneven):
                break


def _even_leader_round(tree: _Tree, orders: Sequence[list[int]], leader: Sequence[int],
                       led: Sequence[int]) -> list[int] | None:
    """Leaders for this call's partitions that put every level, brokers included, within one
    (for a balanced tree with nothing fenced), or None when no choice does or the call is
    too large (:data:`_EVEN_ROUND_BUDGET` arcs).

    ``leader[i]`` leads ``orders[i]`` now; ``led`` counts the topic's leaders per subtree
    with that choice. Each subtree of a level must end at ``floor`` or ``ceil`` of the
    topic's partitions over the level's nodes: as in :func:`_even_round`, a flow with lower
    bounds, source -> kind of partition (the same replicas) -> its brokers -> up the tree.
    """
    node_of, parent, broker = tree.node_of_broker, tree.parent, tree.broker
    kinds: dict[tuple[int, ...], list[int]] = {}
    for i, replicas in enumerate(orders):
        kinds.setdefault(tuple(node_of[b] for b in replicas), []).append(i)
    if sum(len(nodes) for nodes in kinds) > _EVEN_ROUND_BUDGET:
        return None
    base = list(led)
    for broker_id in leader:
        node = node_of[broker_id]
        while node >= 0:
            base[node] -= 1
            node = parent[node]
    net = BoundedFlow(len(kinds) + len(tree.path))
    source, sink, first_kind = BoundedFlow.SOURCE, BoundedFlow.SINK, BoundedFlow.FIRST
    first_node = first_kind + len(kinds)
    bounded = net.bounded

    total = sum(led[n] for n in tree.levels[1])
    for nodes in tree.levels[1:]:
        low, high = total // len(nodes), -(-total // len(nodes))
        for node in nodes:
            if base[node] > high:
                return None
            bounded(first_node + node, first_node + parent[node], max(0, low - base[node]), high - base[node])
    kind_arcs = []
    for k, (kind, members) in enumerate(kinds.items()):
        bounded(source, first_kind + k, len(members), len(members))
        kind_arcs.append([(node, net.add_edge(first_kind + k, first_node + node, len(members)))
                          for node in kind])
    bounded(first_node, sink, len(orders), len(orders))
    if not net.feasible(len(orders)):
        return None
    out = [0] * len(orders)
    for k, members in enumerate(kinds.values()):
        chosen = [broker[node] for node, arc in kind_arcs[k] for _ in range(net.flow_on(arc))]
        for index, broker_id in zip(members, chosen, strict=True):
            out[index] = broker_id
    return out


def _brokers_under(tree: _Tree, node: int) -> list[int]:
    """The broker ids in the subtree of ``node``, in tree order."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        kids = tree.children[n]
        if kids is None:
            out.append(tree.broker[n])
        else:
            stack.extend(reversed(kids))
    return out


class MultiLevelRackAssignor(ReplicaAssignor):
    """KIP-879's multi-level rack-aware placement; see the module docstring."""

    name = "multi-level"
    #: siblings of different sizes share replicas in proportion to their brokers (False: the
    #: literal ring of KIP-879's seed, every sibling the same share)
    proportional = True

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
        return assign(topic_name, partitions, replication_factor, cluster, rng,
                      proportional=self.proportional)


class MultiLevelRingAssignor(MultiLevelRackAssignor):
    """The multi-level assignor with KIP-879's literal ring on uneven trees: every child of a
    node gets the same share of replicas whatever its size (brokers of a smaller data centre
    carry more). Identical to ``multi-level`` on balanced trees."""

    name = "multi-level-ring"
    proportional = False


def assign(topic_name: str | None, partitions: Sequence[int], replication_factor: int,
           cluster: ClusterView, rng: random.Random, *, ring_walk: bool = True,
           proportional: bool = True) -> Assignment:
    """The assignor as a function. ``ring_walk=False`` always uses the count rule (for tests
    that check the plain ring walk gives the same answer where it is used);
    ``proportional=False`` compares siblings of different sizes by their replica counts (the
    literal ring) instead of per broker. The request is valid
    (:func:`kafka_replica_assignor.assignors.validate.check_request`, run once by :func:`kafka_replica_assignor.assignors.base.place`)."""
    requested = sorted(set(partitions))
    tree = _Tree(rack_paths(cluster.brokers))
    current = cluster.topic_assignment(topic_name)
    fenced = cluster.fenced
    new_ids = [p for p in requested if p not in current]
    if new_ids and len(fenced) == len(cluster.brokers):
        raise ReplicaAssignorError(
            "All brokers are currently fenced: a new partition needs an unfenced leader.")

    draws = {node: rng.randrange(len(cast("list[int]", tree.children[node])))
             for node in tree.inner_nodes() if len(cast("list[int]", tree.children[node])) > 1}
    counts = tree.counts(current.values())
    # 1. replication factor raised: one more replica per partition and round
    grown = {p: list(current[p]) for p in requested if p in current}
    if any(len(r) < replication_factor for r in grown.values()):
        counts = _grow(tree, draws, counts, current, grown, replication_factor, fenced, proportional)
    out: Assignment = dict(grown)
    if not new_ids:
        return {p: out[p] for p in requested}

    # 2. new partitions, in id order: replicas from the rings, then leaders evened out
    ring = _rings(tree, draws, counts, {**current, **grown})
    led = tree.counts([r[0]] for r in current.values() if r)
    order_of = _leader_keys(tree)
    literal = ring_walk and not fenced and not (proportional and _proportional_nodes(tree))
    pointers = _ring_pointers(tree, ring, counts, replication_factor) if literal else None
    if pointers is not None:
        sequence = _ring_sequence(tree, ring, pointers, len(new_ids) * replication_factor)
        orders = [sequence[i:i + replication_factor] for i in range(0, len(sequence), replication_factor)]
        leader_of = _ring_leaders(tree, orders, led, order_of)
    else:
        orders, leader_of = _walk_new(tree, ring, counts, fenced, len(new_ids), replication_factor,
                                      led, order_of, proportional)
    leader_of = _even_out_leaders(tree, current, orders, leader_of, led, order_of, fenced)
    for p, chosen, best in zip(new_ids, orders, leader_of, strict=True):
        if chosen[0] != best:
            chosen.remove(best)
            chosen.insert(0, best)
        out[p] = chosen
    return {p: out[p] for p in requested}


def _grow(tree: _Tree, draws: Mapping[int, int], counts: list[int], current: Mapping[int, Sequence[int]],
          grown: dict[int, list[int]], replication_factor: int, fenced: frozenset[int],
          proportional: bool) -> list[int]:
    """Raise ``grown``'s partitions to ``replication_factor`` in place, one replica per partition
    and round (evened out per round where the bounds are known); the node counts after it."""
    node_of, broker_of = tree.node_of_broker, tree.broker
    rings = _Rings(tree, _rings(tree, draws, counts, current), counts, fenced, proportional=proportional)
    while True:
        short = [p for p in grown if len(grown[p]) < replication_factor]
        if not short:
            break
        units = []
        for p in short:
            # a kept replica on a broker outside the view (a fenced one: kafka_replica_assignor.assignors.fencing)
            # counts for the replication factor, not in the tree
            existing = [node_of[b] for b in grown[p] if b in node_of]
            rings.enter(existing)
            placed = rings.walk()
            rings.leave(existing + [placed])
            units.append((existing, placed))
        better = None
        final = _round_bounds(tree, rings.t)
        if final is not None:
            better = _even_round(tree, rings, units, final)
        for p, (_, placed) in zip(short, units, strict=True):
            grown[p].append(broker_of[placed])
        if better is not None:
            for p, placed in zip(short, better, strict=True):
                grown[p][-1] = broker_of[placed]
            rings.reset(tree.counts({**current, **grown}.values()))
    return list(rings.t)


def _ring_leaders(tree: _Tree, orders: Sequence[list[int]], led: list[int],
                  order_of: Mapping[int, list[int]]) -> list[int]:
    """Each new partition's least-leading replica (:func:`_least_leading`'s key, fast: broker
    counts first, subtrees only on a tie); ``led`` is updated."""
    node_of = tree.node_of_broker
    own = {b: led[n] for b, n in node_of.items()}
    ups = {b: nodes[1:] for b, nodes in order_of.items()}
    above = {b: itemgetter(*nodes) if len(nodes) > 1 else (lambda c, n=nodes[0]: (c[n],))
             for b, nodes in ups.items() if nodes}
    leader_of: list[int] = []
    lead = leader_of.append
    for chosen in orders:
        best = chosen[0]
        low = own[best]
        tied = None
        for broker_id in chosen:
            value = own[broker_id]
            if value < low:
                best, low, tied = broker_id, value, None
            elif value == low and broker_id != best and above:
                if tied is None:
                    tied = above[best](led)
                key = above[broker_id](led)
                if key < tied:
                    best, tied = broker_id, key
        own[best] = low + 1
        for node in ups[best]:
            led[node] += 1
        lead(best)
    for broker_id, node in node_of.items():
        led[node] = own[broker_id]
    return leader_of


def _walk_new(tree: _Tree, ring: list[list[int] | None], counts: list[int], fenced: frozenset[int], n: int,
              rf: int, led: list[int], order_of: Mapping[int, list[int]],
              proportional: bool) -> tuple[list[list[int]], list[int]]:
    """The plain ring walk for ``n`` new partitions (fenced brokers never lead): their replicas
    and leaders; ``led`` is updated."""
    broker_of = tree.broker
    rings = _Rings(tree, ring, counts, fenced, proportional=proportional)
    orders: list[list[int]] = []
    leader_of: list[int] = []
    for _ in range(n):
        placed = [rings.walk() for _ in range(rf)]
        chosen = [broker_of[node] for node in placed]
        best = _least_leading(chosen, led, order_of, fenced)
        if best is None:
            rings.swap_for_unfenced(placed)
            chosen = [broker_of[node] for node in placed]
            best = _least_leading(chosen, led, order_of, fenced)
            assert best is not None  # swap_for_unfenced placed an unfenced broker (or raised)
        rings.leave(placed)
        for node in order_of[best]:
            led[node] += 1
        orders.append(chosen)
        leader_of.append(best)
    return orders, leader_of


def _even_out_leaders(tree: _Tree, current: Mapping[int, Sequence[int]], orders: Sequence[list[int]],
                      leader_of: list[int], led: list[int], order_of: Mapping[int, list[int]],
                      fenced: frozenset[int]) -> list[int]:
    """Leaders even per broker, then at every level of the tree (exactly, per round, on balanced trees)."""
    node_of = tree.node_of_broker
    leaders = {b: led[n] for b, n in node_of.items() if b not in fenced}
    if leaders and max(leaders.values()) - min(leaders.values()) > 1:
        _even_leaders(orders, leader_of, leaders, fenced)
        led = tree.counts([r[0]] for r in current.values() if r)
        for best in leader_of:
            for node in order_of[best]:
                led[node] += 1
    _even_leader_levels(tree, orders, leader_of, led, fenced)
    if not fenced and tree.balanced() and any(
            max(led[n] for n in nodes) - min(led[n] for n in nodes) > 1 for nodes in tree.levels[1:]):
        exact = _even_leader_round(tree, orders, leader_of, led)
        if exact is not None:
            leader_of = exact
    return leader_of


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
    offsets: list[int | None] = [None] * len(tree.path)
    children = tree.children
    pending: dict[int, None] = {}
    for node in tree.inner_nodes():
        kids = cast("list[int]", children[node])  # inner nodes have children
        values = [counts[c] for c in kids]
        offset = _ring_offset(values) if len(kids) > 1 else 0
        if offset is None and len(kids) > 1 and counts[node] and min(values) == max(values):
            pending[node] = None
        offsets[node] = offset
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
        # pending nodes are inner nodes: they have children
        for node in [n for n in pending if per_node.get(n, 0) % len(cast("list[int]", children[n]))]:
            del pending[node]
            values = [per_node.get(c, 0) for c in cast("list[int]", children[node])]
            start = _ring_offset(values)
            if start is not None:
                offsets[node] = (start + per_node[node]) % len(values)
    out: list[list[int] | None] = [None] * len(tree.path)
    for node in tree.inner_nodes():
        offset = offsets[node]
        if offset is None:
            offset = draws.get(node, 0)
        kids = cast("list[int]", children[node])
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
            kids = cast("list[int]", tree.children[node])  # inner nodes have children
            if len(kids) == 1:
                bounds[kids[0]] = bounds[node]
                continue
            groups: dict[int, list[int]] = {}
            for child in kids:
                groups.setdefault(tree.cap[child], []).append(child)
            for group in groups.values():
                total = sum(counts[c] for c in group)
                low, high = total // len(group), -(-total // len(group))
                uneven = uneven or any(not low <= counts[c] <= high for c in group)
                for child in group:
                    bounds[child] = (low, high)
    return bounds if uneven else None


def _leader_keys(tree: _Tree) -> dict[int, list[int]]:
    """Per broker, the nodes whose leader counts decide who leads: the broker's own node,
    then its subtrees from the top level down (the root left out)."""
    out = {}
    for broker_id, node in tree.node_of_broker.items():
        path = tree.path_to(node)
        out[broker_id] = [node] + path[1:-1]
    return out


def _least_leading(chosen: Sequence[int], led: Sequence[int], order_of: Mapping[int, list[int]],
                   fenced: frozenset[int]) -> int | None:
    """The unfenced broker among ``chosen`` with the smallest leader key (first on a tie):
    the fewest leaderships, then the least-leading subtree from the top level down."""
    best, low, tied = None, 0, None
    for broker_id in chosen:
        if broker_id in fenced:
            continue
        nodes = order_of[broker_id]
        value = led[nodes[0]]
        if best is None or value < low:
            best, low, tied = broker_id, value, None
        elif value == low:
            if tied is None:
                tied = [led[n] for n in order_of[best]]
            key = [led[n] for n in nodes]
            if key < tied:
                best, tied = broker_id, key
    return best
