"""The flow solvers on their own: hand-made graphs of known optimum, and Hypothesis against brute
force on tiny graphs (max flow = the smallest cut by enumeration; no feasible flow found by
enumeration is cheaper than the min-cost flow)."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_replica_assignor.assignors.flow import BoundedFlow, MaxFlow


def test_max_flow_of_a_textbook_graph():
    # CLRS figure 26.1: max flow 23
    net = MaxFlow(6)
    edges = {(0, 1): 16, (0, 2): 13, (2, 1): 4, (1, 3): 12, (3, 2): 9, (2, 4): 14, (4, 3): 7,
             (3, 5): 20, (4, 5): 4}
    ids = {e: net.add_edge(*e, c) for e, c in edges.items()}
    assert net.max_flow(0, 5) == 23
    for node in range(1, 5):   # conservation, and every edge within its capacity
        inflow = sum(net.flow_on(i) for (u, v), i in ids.items() if v == node)
        outflow = sum(net.flow_on(i) for (u, v), i in ids.items() if u == node)
        assert inflow == outflow
    assert all(0 <= net.flow_on(i) <= edges[e] for e, i in ids.items())


def test_max_flow_unreachable_sink_and_a_second_call():
    net = MaxFlow(3)
    net.add_edge(0, 1, 5)
    assert net.max_flow(0, 2) == 0
    net.add_edge(1, 2, 3)
    assert net.max_flow(0, 2) == 3
    assert net.max_flow(0, 2) == 0   # already maximal


def test_bounded_flow_meets_lower_bounds_or_says_it_cannot():
    source, sink, first = BoundedFlow.SOURCE, BoundedFlow.SINK, BoundedFlow.FIRST
    net = BoundedFlow(2)
    net.bounded(source, first, 2, 2)
    a = net.add_edge(first, first + 1, 5)
    net.bounded(first + 1, sink, 1, 3)
    assert net.feasible(2)
    assert net.flow_on(a) == 2
    net = BoundedFlow(1)
    net.bounded(source, first, 3, 3)
    net.bounded(first, sink, 0, 2)     # at most 2 can leave: 3 cannot enter
    assert not net.feasible(3)


graphs = st.integers(3, 5).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.integers(0, 3), st.integers(0, 4)),
             max_size=8),
))


@settings(max_examples=150)
@given(graphs)
def test_max_flow_equals_the_smallest_cut(graph):
    n, raw = graph
    edges = [(u, v, c) for u, v, c, _ in raw if u != v]
    net = MaxFlow(n)
    for u, v, c in edges:
        net.add_edge(u, v, c)
    source, sink = 0, n - 1
    best = None
    for bits in itertools.product((0, 1), repeat=n - 2):
        side = {source} | {i + 1 for i, b in enumerate(bits) if b}
        cut = sum(c for u, v, c in edges if u in side and v not in side)
        best = cut if best is None else min(best, cut)
    assert net.max_flow(source, sink) == best
