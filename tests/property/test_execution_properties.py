"""Property tests of :mod:`kafka_replica_assignor.planner.execution.batches` on generated snapshots: every planned partition in
exactly one batch, the per-broker move limit, the byte and size limits, reorders last in their
batch, the time estimate between its bounds, rollback on live brokers only."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
from kafka_replica_assignor.planner.execution.batches import Limits, execution
from tests.planning import plan_of
from tests.property.test_planner_properties import clusters

FAST = settings(max_examples=80, deadline=None)


@FAST
@given(clusters(sized=True), st.sampled_from(["replica", "cluster", "repair", "leader"]),
       st.integers(1, 3), st.sampled_from([None, 1, 150, 600]), st.sampled_from([None, 1, 2, 5]),
       st.integers(1, 1000))
def test_batches_keep_their_limits_and_cover_the_plan_once(snap: ClusterSnapshot, mode: str, k: int,
                                                           max_bytes: int | None, size: int | None,
                                                           throttle: int) -> None:
    threshold = 0 if mode in ("replica", "cluster") else None     # the other modes refuse a threshold
    plan = plan_of(snap, mode, threshold=threshold, exact=True)
    limits = Limits(size, k, max_bytes)
    run = execution(plan, limits, throttle)
    planned = [(p.topic, p.partition) for p in plan.changed()]
    batched = [(p.topic, p.partition) for b in run.batches for p in b.partitions]
    assert sorted(batched) == sorted(planned) and len(set(batched)) == len(batched)
    before = {(p.topic, p.partition): p.replicas for p in snap.partitions}
    alive = {b.id for b in snap.brokers if b.alive}
    sizes = {(p.topic, p.partition): p.size_bytes or 0 for p in snap.partitions}
    busiest_total: dict[tuple[str, int], int] = {}
    for batch in run.batches:
        involved: dict[int, int] = {}
        copied = 0
        reorder_seen = False
        for p in batch.partitions:
            old = before[(p.topic, p.partition)]
            came = [b for b in p.replicas if b not in old]
            went = [b for b in old if b not in p.replicas and b in alive]
            if not came:
                reorder_seen = True
            else:
                assert not reorder_seen, "a reorder before a data move in its batch"
            for b in (*came, *went):
                involved[b] = involved.get(b, 0) + 1
            for b in came:
                busiest_total[("in", b)] = busiest_total.get(("in", b), 0) + sizes[(p.topic, p.partition)]
            for b in went:
                busiest_total[("out", b)] = busiest_total.get(("out", b), 0) + sizes[(p.topic, p.partition)]
            copied += len(came) * sizes[(p.topic, p.partition)]
        assert all(v <= k for v in involved.values())
        assert copied == batch.bytes
        if max_bytes is not None:
            assert copied <= max_bytes or sum(1 for p in batch.partitions
                                             if any(b not in before[(p.topic, p.partition)]
                                                    for b in p.replicas)) == 1
        if size is not None:
            assert len(batch.partitions) <= size
    total = run.bytes_moved
    assert total == sum(len([b for b in p.replicas if b not in before[(p.topic, p.partition)]])
                        * sizes[(p.topic, p.partition)] for p in plan.changed())
    eta = run.eta_seconds
    assert eta is not None
    busiest = max(busiest_total.values(), default=0)
    assert busiest / throttle - 1e-9 <= eta <= total / throttle + 1e-9
    assert all(alive.issuperset(p.replicas) for p in run.rollback)
    assert len(run.rollback) + len(run.not_rollbackable) == len(planned)
    if planned:
        assert run.batches_lower_bound <= len(run.batches)
