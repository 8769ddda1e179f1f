"""Network flows on small integer graphs: a max flow, and a max flow with lower bounds.

Goals
    - One solver of each kind for the whole project (the multi-level assignor's exact rounds).
      Same graph, same answer: the order in which
      edges are added is the order in which they are tried, so a caller that adds its edges
      in a fixed order gets a fixed flow.
    - The flow on every edge readable after solving (:meth:`MaxFlow.flow_on`).

Constraints
    - Standard library only (the assignors may use nothing else). Integer
      capacities; nodes are ``0 .. nodes - 1``. A graph is solved once: build, solve, read.
    - The planner's leader balance is not a flow over edge capacities: each unit it sends must
      be one real partition, and a partition sits in several broker-to-broker pools at once,
      so it cancels negative cycles over live partition pools itself (kafka_replica_assignor.planner.goals.leader_flow).

Algorithm
    *Max flow* (:class:`MaxFlow`): Dinic's algorithm. A breadth-first search from the source
    labels each node with its distance in the residual graph; a depth-first search sends flow
    along edges that go one level down, each node keeping a pointer to the first edge not yet
    exhausted in this phase (a blocking flow); repeat until the sink is out of reach.
    ``O(V^2 E)`` in general, ``O(E sqrt(V))`` on unit bipartite graphs. Edges live in flat
    lists: edge ``e`` and its reverse ``e ^ 1``.

    *Lower bounds* (:class:`BoundedFlow`): an edge ``u -> v`` carrying between ``low`` and
    ``high`` becomes an edge of capacity ``high - low``, and ``low`` is pre-sent: ``v`` gets
    ``low`` units of excess, ``u`` as much deficit. Closing the circulation with an edge
    sink -> source, a super source feeds every excess and a super sink drains every deficit;
    the bounds can all be met exactly when that max flow saturates the super source.

Example
    Source 0, sink 3; edges ``0->1 (cap 2)``, ``0->2 (1)``, ``1->3 (1)``, ``1->2 (1)``,
    ``2->3 (2)``. The first phase labels 0:0, 1:1, 2:1, 3:2 and sends ``0 1 3`` and ``0 2 3``
    (one unit each); the second finds ``0 1 2 3`` (one unit). A max flow of 3;
    ``flow_on(0->1)`` is 2.
"""

from __future__ import annotations

from collections import deque

__all__ = ["BoundedFlow", "MaxFlow"]

_UNLIMITED = 1 << 60
"""More than any capacity a caller adds."""


class MaxFlow:
    """Dinic's max flow; :meth:`add_edge` returns an edge id for :meth:`flow_on`."""

    __slots__ = ("adjacent", "capacity", "head")

    def __init__(self, nodes: int) -> None:
        self.adjacent: list[list[int]] = [[] for _ in range(nodes)]
        self.head: list[int] = []        # edge -> the node it points to
        self.capacity: list[int] = []    # edge -> residual capacity

    def add_edge(self, u: int, v: int, capacity: int) -> int:
        """An edge ``u -> v``; returns its id."""
        edge = len(self.head)
        self.adjacent[u].append(edge)
        self.head.append(v)
        self.capacity.append(capacity)
        self.adjacent[v].append(edge + 1)
        self.head.append(u)
        self.capacity.append(0)
        return edge

    def flow_on(self, edge: int) -> int:
        """Units on ``edge`` (the residual capacity of its reverse)."""
        return self.capacity[edge ^ 1]

    def max_flow(self, source: int, sink: int) -> int:
        """Push as much as possible from ``source`` to ``sink``; returns the units added."""
        adjacent, head, capacity = self.adjacent, self.head, self.capacity
        n = len(adjacent)
        level = [-1] * n
        pointer = [0] * n

        def push(u: int, limit: int) -> int:
            if u == sink:
                return limit
            edges = adjacent[u]
            while pointer[u] < len(edges):
                edge = edges[pointer[u]]
                v = head[edge]
                if capacity[edge] > 0 and level[v] == level[u] + 1:
                    pushed = push(v, min(limit, capacity[edge]))
                    if pushed:
                        capacity[edge] -= pushed
                        capacity[edge ^ 1] += pushed
                        return pushed
                pointer[u] += 1
            return 0

        total = 0
        while True:
            level[:] = [-1] * n
            level[source] = 0
            queue = deque([source])
            while queue:
                u = queue.popleft()
                for edge in adjacent[u]:
                    v = head[edge]
                    if capacity[edge] > 0 and level[v] < 0:
                        level[v] = level[u] + 1
                        queue.append(v)
            if level[sink] < 0:
                return total
            pointer[:] = [0] * n
            while True:
                pushed = push(source, _UNLIMITED)
                if not pushed:
                    break
                total += pushed


class BoundedFlow:
    """A flow network whose edges may have lower bounds (see the module docstring).

    Nodes ``FIRST`` and up are the caller's; ``SOURCE`` and ``SINK`` are the caller's source
    and sink, joined by :meth:`feasible`.
    """

    SOURCE, SINK, _SUPER_SOURCE, _SUPER_SINK, FIRST = 0, 1, 2, 3, 4

    __slots__ = ("excess", "flow")

    def __init__(self, nodes: int) -> None:
        self.flow = MaxFlow(self.FIRST + nodes)
        self.excess = [0] * (self.FIRST + nodes)

    def add_edge(self, u: int, v: int, capacity: int) -> int:
        """An edge without lower bound; returns its id for :meth:`flow_on`."""
        return self.flow.add_edge(u, v, capacity)

    def bounded(self, u: int, v: int, low: int, high: int) -> None:
        """An edge carrying between ``low`` and ``high`` units."""
        if high > low:
            self.flow.add_edge(u, v, high - low)
        self.excess[v] += low
        self.excess[u] -= low

    def flow_on(self, edge: int) -> int:
        return self.flow.flow_on(edge)

    def feasible(self, through: int) -> bool:
        """Close the circulation (up to ``through`` units from sink back to source) and solve:
        True when every lower bound is met."""
        self.flow.add_edge(self.SINK, self.SOURCE, through)
        need = 0
        for node, value in enumerate(self.excess):
            if value > 0:
                self.flow.add_edge(self._SUPER_SOURCE, node, value)
                need += value
            elif value < 0:
                self.flow.add_edge(node, self._SUPER_SINK, -value)
        return self.flow.max_flow(self._SUPER_SOURCE, self._SUPER_SINK) == need
