"""The parts a connection is made of, each on its own: flow control (``kafka_replica_assignor.server.flow_control``),
answers in request order (``kafka_replica_assignor.server.responses``) and the event the graceful shutdown waits for
(``kafka_replica_assignor.server.shared_state``). Real objects over an in-memory transport; no timing."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest

from kafka_replica_assignor.assignors import create_assignor
from kafka_replica_assignor.server.config import load_config
from kafka_replica_assignor.server.flow_control import FlowControl
from kafka_replica_assignor.server.request_memory import RequestMemory
from kafka_replica_assignor.server.responses import ResponseQueue, Slot
from kafka_replica_assignor.server.shared_state import ServerState


class Transport:
    """Records writes and whether reading is paused."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.paused = False
        self.pauses = 0

    def write(self, data: bytes | bytearray) -> None:
        self.written.append(bytes(data))

    def pause_reading(self) -> None:
        self.paused = True
        self.pauses += 1

    def resume_reading(self) -> None:
        self.paused = False


def _frame_head(size: int) -> bytearray:
    return bytearray(struct.pack(">i", size))


# -- flow control -------------------------------------------------------------------------
def test_reading_pauses_while_any_reason_holds_and_resumes_when_none_does() -> None:
    transport, granted = Transport(), []
    flow = FlowControl(RequestMemory(-1), lambda: granted.append(True))
    flow.attach(transport)
    flow.update(busy=True)
    assert transport.paused and flow.reading_paused
    flow.writing_paused = True
    flow.update(busy=False)  # the peer still does not read its answers
    assert transport.paused
    flow.writing_paused = False
    flow.update(busy=False)
    assert not transport.paused and not flow.reading_paused
    flow.update(busy=False)
    flow.update(busy=True)
    flow.update(busy=True)
    assert transport.pauses == 2  # the transport is told once per change, not once per update


def test_a_frame_head_holds_only_its_arrived_bytes_while_memory_has_room() -> None:
    """A size prefix alone holds four bytes, not the frame it announces (six 4-byte prefixes of
    100 MiB must not reserve the whole budget); what was counted is given back."""
    memory = RequestMemory(1_000)
    flow = FlowControl(memory, lambda: None)
    buf = _frame_head(600)  # the size of a frame, not yet its body
    flow.received(len(buf))
    assert flow.account(buf, max_frame=10_000) is False
    assert memory.used == flow.charged == 4
    del buf[:]  # the frame was handled
    assert flow.account(buf, max_frame=10_000) is False
    assert memory.used == flow.charged == 0


def test_once_memory_is_spent_a_frame_reserves_its_rest_waits_and_is_granted() -> None:
    memory = RequestMemory(1_000)
    first, second = FlowControl(memory, lambda: None), FlowControl(memory, lambda: woken.append(True))
    woken: list[bool] = []
    held = _frame_head(996) + bytearray(996)  # a whole frame read: the budget is spent
    first.received(len(held))
    assert first.account(held, max_frame=10_000) is False
    assert memory.used == 1_000 and memory.short
    waiting = _frame_head(500)
    second.received(len(waiting))
    assert second.account(waiting, max_frame=10_000) is True  # must reserve 504 and wait: pause reading
    assert second.memory_wait and woken == []
    first.release()  # the first connection is gone
    assert woken == [True] and not second.memory_wait
    assert memory.used == second.charged == 504


def test_an_oversize_frame_is_not_reserved() -> None:
    """A size over the limit is refused by the connection; it is never reserved here."""
    memory = RequestMemory(1_000)
    flow = FlowControl(memory, lambda: None)
    buf = _frame_head(50_000)
    flow.received(len(buf))
    assert flow.account(buf, max_frame=10_000) is False
    assert memory.used == 4


def test_large_frames_stream_in_turn_within_their_budget() -> None:
    """Frames of 1 MiB and more stream in only while the streaming budget has room (the first
    always does); the next waits, reading paused, until the first is whole; small frames never wait."""
    memory = RequestMemory(-1, streaming_limit=3 << 20)
    woken: list[bool] = []
    first, second = FlowControl(memory, lambda: None), FlowControl(memory, lambda: woken.append(True))
    small = FlowControl(memory, lambda: None)
    head = _frame_head(2 << 20) + bytearray(100)
    for flow in (first, second):
        flow.received(len(head))
    assert first.account(head, max_frame=10 << 20) is False and first.streaming == 4 + (2 << 20)
    assert second.account(head, max_frame=10 << 20) is True  # 2 MiB more would pass the 3 MiB
    assert second.memory_wait and memory.waiting == 1
    small_head = _frame_head(500_000) + bytearray(10)
    small.received(len(small_head))
    assert small.account(small_head, max_frame=10 << 20) is False and small.streaming == 0
    assert first.account(bytearray(), max_frame=10 << 20) is False  # its frame is whole and handled
    assert woken == [True] and second.streaming == 4 + (2 << 20) and not second.memory_wait
    assert memory.streaming == second.streaming and memory.waiting == 0
    second.release()
    assert memory.streaming == 0


def test_the_first_large_frame_streams_even_over_the_budget() -> None:
    memory = RequestMemory(-1, streaming_limit=1 << 20)
    flow = FlowControl(memory, lambda: None)
    head = _frame_head(5 << 20)
    flow.received(4)
    assert flow.account(head, max_frame=10 << 20) is False and memory.streaming == 4 + (5 << 20)


# -- answers in request order -------------------------------------------------------------
async def test_answers_ready_at_once_go_out_in_one_write_per_read() -> None:
    transport, queue = Transport(), ResponseQueue()
    queue.attach(transport)
    queue.begin_batch()
    queue.ready(b"a")
    queue.ready(b"b")
    assert transport.written == []
    queue.end_batch(write=True)
    assert transport.written == [b"ab"] and len(queue) == 0


async def test_an_answer_ready_first_waits_behind_one_still_computed() -> None:
    transport, queue = Transport(), ResponseQueue()
    queue.attach(transport)
    pending: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    slow = Slot(None, pending, None, None)
    queue.later(slow)
    queue.ready(b"second")
    assert transport.written == [] and len(queue) == 2 and queue.computing
    assert queue.flush() is None and transport.written == []
    slow.response, slow.task = b"first", None
    assert queue.flush() is None
    assert transport.written == [b"first", b"second"] and len(queue) == 0
    pending.cancel()


async def test_the_last_answer_is_written_then_reports_its_close_reason() -> None:
    transport, queue = Transport(), ResponseQueue()
    queue.attach(transport)
    queue.later(Slot(b"refused", None, None, "authentication failed"))
    queue.ready(b"never")  # behind the last answer: dropped with it
    assert queue.flush() == "authentication failed"
    assert transport.written == [b"refused"] and len(queue) == 0


async def test_cancel_stops_what_is_being_computed() -> None:
    queue = ResponseQueue()
    task = asyncio.get_running_loop().create_task(asyncio.sleep(10))
    queue.later(Slot(None, task, None, None))
    queue.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(queue) == 0


# -- the shutdown's event -----------------------------------------------------------------
async def test_no_connections_is_set_exactly_while_none_is_open() -> None:
    config = load_config(None, {"listeners": "PLAINTEXT://127.0.0.1:0"})
    state = ServerState(config=config, assignor=create_assignor("default"), assignor_name="default",
                        source=None, executor=None, advertised=config.listeners[0])
    assert state.no_connections.is_set()
    first, second = object(), object()
    state.connection_opened(first, "10.0.0.1")
    state.connection_opened(second, "10.0.0.1")
    assert not state.no_connections.is_set() and state.connections_by_ip == {"10.0.0.1": 2}
    state.connection_closed(first, "10.0.0.1")
    assert not state.no_connections.is_set()
    waiter = asyncio.ensure_future(state.no_connections.wait())
    await asyncio.sleep(0)
    assert not waiter.done()
    state.connection_closed(second, "10.0.0.1")
    await asyncio.wait_for(waiter, 5)
    assert state.connections == set() and state.connections_by_ip == {}


# -- max.connection.creation.rate(.per.ip) ---------------------------------------------------
def test_an_address_over_its_rate_waits_without_taking_the_others_turns() -> None:
    from kafka_replica_assignor.server.connection_rate import ConnectionRate

    rate = ConnectionRate(rate=10, per_ip=2)
    now = 100.0
    # the burst of a second's worth (turns from a second ago to now), then one per half second
    assert [rate.address_delay("a", now) for _ in range(4)] == [0.0, 0.0, 0.0, 0.5]
    for _ in range(3):
        assert rate.delay(now) == 0.0  # (the fourth has not had its address's turn: it takes no turn overall)
    # another address is served at once: the queue of the first does not hold it up
    assert rate.address_delay("b", now) == 0.0 and rate.delay(now) == 0.0
    # overall: a burst of a second's worth (turns from a second ago to now), then one per tenth of a second
    delays = [rate.delay(now) for _ in range(8)]
    assert delays[:7] == [0.0] * 7 and delays[7] == pytest.approx(0.1)
    unlimited = ConnectionRate(rate=-1, per_ip=-1)
    assert unlimited.address_delay("a", now) == unlimited.delay(now) == 0.0
