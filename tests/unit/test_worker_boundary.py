"""The worker boundary (kafka_replica_assignor.server.isolation, the CreateReplicaAssignment handler): a placement is
one job of plain values (``PlacementJob``) and one ``run(job) -> Outcome``, which gives, for the
same random state, the same answer inline, across pickling and in a worker process; handing a
generator over is explicit and never a side effect of pickling."""

from __future__ import annotations

import pickle
import random
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor

import pytest

from kafka_replica_assignor.assignors import ANONYMOUS, ClusterView, PlacementSpec, ReplicaAssignor, create_assignor
from kafka_replica_assignor.assignors.default import DefaultReplicaAssignor
from kafka_replica_assignor.assignors.memo import MemoizableAssignor, PlacementMemo
from kafka_replica_assignor.server.config import load_config
from kafka_replica_assignor.server.handlers.create_replica_assignment import (
    Outcome,
    Placement,
    PlacementJob,
    hand_over,
    request_rng,
    run,
)
from kafka_replica_assignor.server.isolation import AssignorPool, _dumps, worker_assignor
from kafka_replica_assignor.server.shared_state import PlacementSettings, ServerState

RACKED = ClusterView.of([(b, f"rack-{b % 3}") for b in range(6)])
PLAIN = ClusterView.of([(b, None) for b in range(6)])


class _FixedSource:
    """The cluster view never changes."""

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    def view(self) -> ClusterView:
        return RACKED


class _OneMethodPlugin(ReplicaAssignor):
    """A plug-in as its author writes it: one method. It happens to have a ``draw`` too, which
    must not be taken for the memo's capability (that is declared, never guessed)."""

    def assign_replicas_to_brokers(self, topic_name: str | None, partitions: Sequence[int],
                                   replication_factor: int, cluster: ClusterView,
                                   principal: str = ANONYMOUS, *,
                                   rng: random.Random) -> Mapping[int, Sequence[int]]:
        return DefaultReplicaAssignor().assign_replicas_to_brokers(
            topic_name, partitions, replication_factor, cluster, principal, rng=rng)

    def draw(self, *args: object, **kwargs: object) -> None:
        raise AssertionError("a plug-in was asked to draw")


def _state(assignor_name: str = "default", executor: Executor | None = None,
           assignor: ReplicaAssignor | None = None) -> ServerState:
    config = load_config(None, {"listeners": "PLAINTEXT://127.0.0.1:0",
                                "replica.assignor.class.name": assignor_name})
    return ServerState(config=config, assignor=assignor or create_assignor(assignor_name),
                       assignor_name=assignor_name, source=_FixedSource(),
                       executor=executor or ThreadPoolExecutor(max_workers=1), advertised=config.listeners[0])


def _placement(topic: str | None, partitions: range, rf: int, cluster: ClusterView, force_simple: bool) -> Placement:
    return Placement(PlacementSpec(topic, partitions, rf), cluster, force_simple, 30_000)


PLACEMENTS = {
    "new topic": _placement(None, range(12), 3, RACKED, False),
    "forced simple": _placement("t", range(7), 2, RACKED, True),
    "no racks": _placement("t", range(40), 3, PLAIN, False),
    "continued topic": _placement("t", range(4, 9), 3, RACKED.with_assignment(
        "t", {p: [p % 6, (p + 1) % 6, (p + 2) % 6] for p in range(4)}), False),
    "raised rf": _placement("t", range(3), 3, RACKED.with_assignment("t", {p: [p, p + 3] for p in range(3)}), False),
}


def _job(placement: Placement, rng: random.Random, principal: str = ANONYMOUS,
         assignor_name: str = "default") -> PlacementJob:
    return PlacementJob(placement, 1, None, rng, principal, PlacementSettings(assignor_name, 1_000_000, False, 1))


def _inline(state: ServerState, placement: Placement, rng: random.Random, principal: str = ANONYMOUS) -> Outcome:
    """What the handler runs on the event loop: the server's assignor and memo."""
    return run(_job(placement, rng, principal, state.assignor_name), state.assignor, state.memo)


def test_pickling_never_touches_a_generator():
    """What used to reseed a generator was the pool's own pickler (a ``reducer_override`` for
    ``random.Random``), not pickle: neither reseeds it now, and no generator crosses at all."""
    rng = random.Random(7)
    before = rng.getstate()
    pickle.dumps(rng)
    _dumps(((rng,), {}))
    assert rng.getstate() == before


def test_hand_over_continues_exactly_and_moves_the_generator_on():
    rng, twin = random.Random(3), random.Random(3)
    handed = hand_over(rng)
    again = hand_over(rng)
    assert [handed.random() for _ in range(5)] == [twin.random() for _ in range(5)]
    assert again.getstate() != handed.getstate()  # a shared generator never hands out the same draws twice


@pytest.mark.parametrize("name", sorted(PLACEMENTS))
@pytest.mark.parametrize("assignor_name", ["default", "striped", "multi-level"])
def test_detached_placement_across_pickling_equals_the_inline_one(name, assignor_name):
    placement = PLACEMENTS[name]
    state = _state(assignor_name)
    for seed in range(5):
        inline = _inline(state, placement, request_rng(seed, b"body"), "User:alice")
        assert inline.error is None and inline.partitions == len(placement.spec.partitions)
        call = (run, (_job(placement, hand_over(request_rng(seed, b"body")), "User:alice", assignor_name),), {})
        fn, args, kwargs = pickle.loads(_dumps(call))
        assert fn(*args, **kwargs) == inline


def test_a_worker_process_answers_as_the_event_loop_does():
    """The real pool: the zygote builds the worker's assignor, the worker continues the state."""
    placement = PLACEMENTS["new topic"]
    pool = AssignorPool("default", workers=1)
    try:
        pool.start()
        for seed in range(3):
            answer = pool.submit(run, _job(placement, hand_over(request_rng(seed, b"x")))).result(30)
            assert answer == _inline(_state(), placement, request_rng(seed, b"x"))
    finally:
        pool.shutdown()


def test_the_worker_assignor_is_built_once_per_process():
    assert worker_assignor("striped") is worker_assignor("striped")
    assert type(worker_assignor("striped")).__name__ == "StripedReplicaAssignor"


def test_a_one_method_plugin_is_placed_and_never_asked_to_draw():
    """The inline path with the memo enabled, and the detached path: a plug-in that is not a
    MemoizableAssignor gets the ordinary placement, and its ``draw`` is never called."""
    plugin = _OneMethodPlugin()
    assert not isinstance(plugin, MemoizableAssignor)
    state = _state(assignor=plugin)
    assert state.memo is not None
    placement = PLACEMENTS["new topic"]
    inline = _inline(state, placement, random.Random(11))
    assert inline == _inline(_state(), placement, random.Random(11)) and inline.error is None
    assert len(state.memo) == 0


class _Forgetful(ReplicaAssignor, MemoizableAssignor):
    """Declares the capability and forgets its methods (which mypy would refuse)."""

    def assign_replicas_to_brokers(self, topic_name: str | None, partitions: Sequence[int],
                                   replication_factor: int, cluster: ClusterView,
                                   principal: str = ANONYMOUS, *,
                                   rng: random.Random) -> Mapping[int, Sequence[int]]:
        raise AssertionError("not called by the memo")


def test_a_forgotten_capability_declines_without_drawing():
    rng = random.Random(5)
    before = rng.getstate()
    assert PlacementMemo().place(_Forgetful(), PlacementSpec("t", range(6), 3), RACKED, rng=rng) is None
    assert rng.getstate() == before
