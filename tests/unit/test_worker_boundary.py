"""The worker boundary (server.isolation, the CreateReplicaAssignment handler): a placement off
the event loop is a call of plain values (``place_detached``) that gives, for the same random
state, the answer the inline path gives; handing a generator over is explicit and never a side
effect of pickling."""

from __future__ import annotations

import pickle
import random
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor

import pytest

from assignors import ANONYMOUS, ClusterView, ReplicaAssignor, create_assignor
from assignors.default import DefaultReplicaAssignor
from assignors.memo import MemoEntry, MemoizableAssignor, PlacementMemo
from server.config import load_config
from server.handlers.create_replica_assignment import (
    Placement,
    compute,
    hand_over,
    place_detached,
    request_rng,
)
from server.isolation import AssignorPool, _dumps, worker_assignor
from server.state import ServerState

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


PLACEMENTS = {
    "new topic": Placement(None, range(12), 3, RACKED, False, 30_000),
    "forced simple": Placement("t", range(7), 2, RACKED, True, 30_000),
    "no racks": Placement("t", range(40), 3, PLAIN, False, 30_000),
    "continued topic": Placement("t", range(4, 9), 3, RACKED.with_assignment("t", {p: [p % 6, (p + 1) % 6, (p + 2) % 6]
                                                                                   for p in range(4)}), False, 30_000),
    "raised rf": Placement("t", range(3), 3, RACKED.with_assignment("t", {p: [p, p + 3] for p in range(3)}),
                           False, 30_000),
}


def _plain(result: Mapping[int, Sequence[int]] | MemoEntry) -> dict[int, list[int]]:
    return {p: list(r) for p, r in (result.assignment if isinstance(result, MemoEntry) else result).items()}


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
    continued = random.Random()
    continued.setstate(handed)
    assert [continued.random() for _ in range(5)] == [twin.random() for _ in range(5)]
    assert hand_over(rng) != handed  # a shared generator never hands out the same draws twice


@pytest.mark.parametrize("name", sorted(PLACEMENTS))
@pytest.mark.parametrize("assignor_name", ["default", "striped", "multi-level"])
def test_detached_placement_across_pickling_equals_the_inline_one(name, assignor_name):
    placement = PLACEMENTS[name]
    state = _state(assignor_name)
    for seed in range(5):
        inline = compute(state, placement, request_rng(seed, b"body"), "User:alice")
        call = (place_detached, (assignor_name, placement, hand_over(request_rng(seed, b"body")), "User:alice",
                                 False, 1), {})
        fn, args, kwargs = pickle.loads(_dumps(call))
        assert fn(*args, **kwargs) == _plain(inline)


def test_a_worker_process_answers_as_the_event_loop_does():
    """The real pool: the zygote builds the worker's assignor, the worker continues the state."""
    placement = PLACEMENTS["new topic"]
    pool = AssignorPool("default", workers=1)
    try:
        pool.start()
        for seed in range(3):
            state = hand_over(request_rng(seed, b"x"))
            answer = pool.submit(place_detached, "default", placement, state, ANONYMOUS, False, 1).result(30)
            assert answer == _plain(compute(_state(), placement, request_rng(seed, b"x")))
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
    inline = compute(state, placement, random.Random(11))
    assert type(inline) is dict
    assert inline == _plain(compute(_state(), placement, random.Random(11)))
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
    assert PlacementMemo().place(_Forgetful(), "t", range(6), 3, RACKED, rng=rng) is None
    assert rng.getstate() == before
