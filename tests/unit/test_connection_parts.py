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


def test_large_frames_count_what_arrived_and_stream_in_turn_within_their_budget() -> None:
    """Frames of 1 MiB and more count in the streaming budget as their bytes arrive: a size prefix
    alone reserves nothing (it once reserved the whole frame it announced). Over the budget, a frame
    that did not start first waits, reading paused, until one streaming is whole; small frames never wait."""
    memory = RequestMemory(-1, streaming_limit=3 << 20)
    woken: list[bool] = []
    first, second = FlowControl(memory, lambda: None), FlowControl(memory, lambda: woken.append(True))
    small = FlowControl(memory, lambda: None)
    header = _frame_head(8 << 20)
    for flow in (first, second):
        flow.received(4)
        assert flow.account(header, max_frame=10 << 20) is False
    assert memory.streaming == 8 and memory.waiting == 0  # two headers of 8 MiB hold 8 bytes
    part = header + bytearray(2 << 20)
    first.received(len(part))
    assert first.account(part, max_frame=10 << 20) is False and first.streaming == len(part)
    second.received(len(part))
    assert second.account(part, max_frame=10 << 20) is True  # over the 3 MiB, and not the first stream
    assert second.memory_wait and memory.waiting == 1 and memory.streams_waiting
    small_head = _frame_head(500_000) + bytearray(10)
    small.received(len(small_head))
    assert small.account(small_head, max_frame=10 << 20) is False and small.streaming == 0
    first.end_stream()  # its frame is whole
    assert woken == [True] and not second.memory_wait and memory.waiting == 0
    assert memory.streaming == second.streaming == len(part)
    second.release()
    assert memory.streaming == 0


def test_the_first_large_frame_streams_even_over_the_budget() -> None:
    """The stream that started first always reads on, so the frames being read always finish; when it
    goes, the next oldest reads on even if it waits behind another."""
    memory = RequestMemory(-1, streaming_limit=1 << 20)
    woken: list[str] = []
    flows = [FlowControl(memory, lambda name=name: woken.append(name)) for name in "abc"]
    for flow in flows:  # each starts a frame: its header
        flow.received(4)
        flow.account(_frame_head(5 << 20), max_frame=10 << 20)
    part = _frame_head(5 << 20) + bytearray(2 << 20)
    a, b, c = flows
    for flow in (a, c, b):
        flow.received(len(part))
    assert a.account(part, max_frame=10 << 20) is False  # the first, over the budget
    assert c.account(part, max_frame=10 << 20) is True and b.account(part, max_frame=10 << 20) is True
    a.release()
    assert woken == ["b"] and c.memory_wait  # b started before c: its turn, though c waited first


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
class _Clock:
    """A fake loop: its time, and the one timer the rate arms."""

    def __init__(self) -> None:
        self.now = 100.0
        self.timer: tuple[float, Any] | None = None

    def time(self) -> float:
        return self.now

    def call_later(self, delay: float, callback: Any) -> _Clock:
        self.timer = (self.now + delay, callback)
        return self  # its handle: one timer at a time

    def cancel(self) -> None:
        self.timer = None

    def run_until(self, until: float) -> None:
        while self.timer is not None and self.timer[0] <= until:
            (self.now, callback), self.timer = self.timer, None
            callback()
        self.now = until


class _Waiter:
    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name = log, name

    def turn_came(self) -> None:
        self.log.append(self.name)

    def wait_refused(self) -> None:
        self.log.append(f"refused {self.name}")


def test_a_connection_that_leaves_while_it_waits_takes_no_turn() -> None:
    """Turns were reserved on arrival: open-and-close booked a minute of turns ahead, and every new
    client waited behind them. Now a waiting connection holds no turn, and one that leaves takes none."""
    from kafka_replica_assignor.server.connection_rate import ConnectionRate

    clock, served = _Clock(), []
    rate = ConnectionRate(rate=10, per_ip=-1)
    # the burst of a second's worth is served at once
    assert all(rate.arrive(_Waiter(served, "burst"), "10.0.0.1", clock) is None for _ in range(10))
    tickets = [rate.arrive(_Waiter(served, f"gone{i}"), "10.0.0.1", clock) for i in range(1000)]
    for ticket in tickets:
        assert ticket is not None
        rate.left(ticket)  # opened and closed at once
    assert rate.waiting == 0
    assert rate.arrive(_Waiter(served, "new"), "10.0.0.2", clock) is not None
    clock.run_until(100.09)
    assert served == []
    clock.run_until(100.11)
    assert served == ["new"]  # its turn is the next one, a tenth of a second on


def test_a_turn_given_back_goes_to_a_waiting_connection_at_once() -> None:
    """During a flood of open-and-close most turns come back (a connection that sends nothing gives its
    turn back); the connection waiting first gets it on the loop's next turn, not when the next token
    would have come (up to 1/rate later)."""
    from kafka_replica_assignor.server.connection_rate import ConnectionRate

    clock, served = _Clock(), []
    rate = ConnectionRate(rate=10, per_ip=-1)
    for _ in range(10):
        rate.arrive(_Waiter(served, "burst"), "10.0.0.1", clock)
    served.clear()
    rate.arrive(_Waiter(served, "first"), "10.0.0.2", clock)
    rate.arrive(_Waiter(served, "second"), "10.0.0.3", clock)
    clock.run_until(100.0)
    assert served == []
    rate.give_back()  # a burst connection closed without a byte
    clock.run_until(100.0)
    assert served == ["first"]
    clock.run_until(100.09)
    assert served == ["first"]  # the next one waits for the next token, as before
    clock.run_until(100.11)
    assert served == ["first", "second"]


def test_the_address_served_least_recently_goes_first_and_waiting_is_bounded() -> None:
    from kafka_replica_assignor.server.connection_rate import ConnectionRate

    clock, served = _Clock(), []
    rate = ConnectionRate(rate=10, per_ip=-1, max_waiting=5, max_wait_s=4.0)  # max.connection.creation.wait.ms
    for _ in range(10):
        rate.arrive(_Waiter(served, "burst"), "flood", clock)
    served.clear()
    for i in range(4):
        rate.arrive(_Waiter(served, f"flood{i}"), "flood", clock)
    rate.arrive(_Waiter(served, "other"), "other", clock)
    clock.run_until(100.25)
    assert served == ["other", "flood0"]  # the other address first, though it came last
    for i in range(4, 8):  # over max_waiting: the one waiting longest is refused
        rate.arrive(_Waiter(served, f"flood{i}"), "flood", clock)
    assert served[2:] == ["refused flood1", "refused flood2"] and rate.waiting == 5
    clock.run_until(100.0 + 4.0 + 0.01)
    assert rate.waiting == 0 and "refused flood7" not in served and "flood7" in served
    # a turn given back (refused at max.connections) is served again at once
    rate.give_back()
    assert rate.arrive(_Waiter(served, "again"), "x", clock) is None


def test_the_per_address_rate_is_off_by_default_and_refuses_over_it() -> None:
    from kafka_replica_assignor.server.config import load_config
    from kafka_replica_assignor.server.connection_rate import ConnectionRate

    assert load_config(overrides={}).max_connection_creation_rate_per_ip == -1
    rate = ConnectionRate(rate=-1, per_ip=2)
    assert [rate.address_refuses("a", 100.0) for _ in range(3)] == [False, False, True]
    assert not rate.address_refuses("b", 100.0)
    assert not rate.address_refuses("a", 100.5)  # a token back after half a second


async def test_a_turn_awaited_and_cancelled_takes_none() -> None:
    """max.failed.authentication.rate: a failure waits for its turn in a coroutine; a connection gone
    meanwhile (its coroutine cancelled) leaves the queue, and the next address gets the turn."""
    from kafka_replica_assignor.server.connection_rate import ConnectionRate, take_turn

    rate = ConnectionRate(rate=20, per_ip=-1)
    for _ in range(20):  # the burst
        assert await take_turn(rate, "a") is True
    gone = asyncio.ensure_future(take_turn(rate, "a"))
    await asyncio.sleep(0)
    assert rate.waiting == 1
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert rate.waiting == 0
    assert await asyncio.wait_for(take_turn(rate, "b"), 5) is True
