"""The per-connection protocol (``kafka_replica_assignor.server.connection``) without a socket: an in-memory transport
records what the connection writes and whether it closed, and the test feeds bytes by calling
``data_received`` itself, cut wherever it likes. Assignments sent to the executor run only when
the test says so, which makes "a later answer is ready first" exact instead of timed.

What needs a real socket (TLS, SASL over the wire, the limits on accepted connections, real
clients) is in ``tests/e2e``.
"""

from __future__ import annotations

import asyncio
import random
import struct
from collections.abc import Callable, Mapping, MutableMapping
from concurrent.futures import Executor, Future
from typing import Any

import pytest
from structlog.testing import capture_logs

from kafka_replica_assignor.assignors import BrokerMetadata, ClusterView, create_assignor
from kafka_replica_assignor.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateReplicaAssignmentRequest,
    CreateReplicaAssignmentResponse,
)
from kafka_replica_assignor.server.config import load_config
from kafka_replica_assignor.server.connection import KafkaConnection
from kafka_replica_assignor.server.dispatch import supported_versions
from kafka_replica_assignor.server.handlers import api_versions
from kafka_replica_assignor.server.shared_state import ServerState

CLUSTER = ClusterView(tuple(BrokerMetadata(i, f"rack-{i % 3}") for i in range(6)))
MAX_BYTES = 4096


class StaticSource:
    """The cluster view never changes."""

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    async def refresh(self) -> bool:
        return True

    def view(self) -> ClusterView:
        return CLUSTER

    def describe(self) -> dict[str, Any]:
        return {"source": "static"}


class HeldExecutor(Executor):
    """Runs nothing until :meth:`run` is called with a job's index (in submission order)."""

    def __init__(self) -> None:
        self.jobs: list[tuple[Future[Any], Callable[[], Any]]] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self.jobs.append((future, lambda: fn(*args, **kwargs)))
        return future

    def run(self, index: int) -> None:
        future, job = self.jobs[index]
        if future.set_running_or_notify_cancel():
            future.set_result(job())


class MemoryTransport(asyncio.Transport):
    """What the event loop would hand the protocol, in memory. ``close`` tells the protocol the
    connection is lost on the next loop iteration, as a real transport does."""

    def __init__(self, peer: tuple[str, int] = ("127.0.0.1", 50000)) -> None:
        super().__init__()
        self.peer = peer
        self.writes: list[bytes] = []
        self.closed = False
        self.lost = False  # the protocol was told
        self.reading = True
        self.protocol: asyncio.Protocol | None = None

    @property
    def data(self) -> bytes:
        return b"".join(self.writes)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        assert not self.closed, "written after close"
        self.writes.append(bytes(data))

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.write(data)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            asyncio.get_running_loop().call_soon(self._lose)

    def _lose(self) -> None:
        self.lost = True
        if self.protocol is not None:
            self.protocol.connection_lost(None)

    def abort(self) -> None:
        self.close()

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": self.peer}.get(name, default)

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def get_write_buffer_size(self) -> int:
        return 0


def server_state(executor: Executor | None = None, overrides: Mapping[str, str] | None = None) -> ServerState:
    """The state the server builds at start-up, minus the listening socket."""
    config = load_config(None, {"listeners": "PLAINTEXT://127.0.0.1:0", "socket.request.max.bytes": str(MAX_BYTES),
                                "replica.assignor.random.seed": "7", **(overrides or {})})
    listener = config.listeners[0]
    state = ServerState(config=config, assignor=create_assignor(config.replica_assignor_class_name),
                        assignor_name=config.replica_assignor_class_name, source=StaticSource(),
                        executor=executor or HeldExecutor(), advertised=listener)
    for version, template in api_versions.build_templates(supported_versions()).items():
        state.templates[(api_versions.API_KEY, version)] = template
    return state


def connect(state: ServerState, peer: tuple[str, int] = ("127.0.0.1", 50000)) -> tuple[KafkaConnection, MemoryTransport]:
    connection = KafkaConnection(state)
    transport = MemoryTransport(peer)
    transport.protocol = connection
    connection.connection_made(transport)
    return connection, transport


def api_versions_frame(correlation_id: int, version: int = 3) -> bytes:
    request = (ApiVersionsRequest(version=version, client_software_name="unit", client_software_version="1")
               if version >= 3 else ApiVersionsRequest(version=version))
    request.with_header(correlation_id=correlation_id, client_id="unit")
    return bytes(request.encode(header=True, framed=True))


def assignment_frame(correlation_id: int, partitions: int = 6) -> bytes:
    request = CreateReplicaAssignmentRequest(version=0, num_partitions=partitions, replication_factor=3,
                                             node_id=[], timeout_ms=30_000)
    request.with_header(correlation_id=correlation_id, client_id="unit")
    return bytes(request.encode(header=True, framed=True))


def raw_frame(api_key: int, api_version: int, correlation_id: int, rest: bytes = b"") -> bytes:
    """A request header v1 (client id ``unit``) and whatever follows, framed."""
    payload = struct.pack(">hhih", api_key, api_version, correlation_id, 4) + b"unit" + rest
    return struct.pack(">i", len(payload)) + payload


def answers(data: bytes) -> list[tuple[int, bytes]]:
    """The response frames in ``data``: (correlation id, what follows it), all of them whole."""
    out = []
    pos = 0
    while pos < len(data):
        (size,) = struct.unpack_from(">i", data, pos)
        assert pos + 4 + size <= len(data), "a response frame cut short"
        out.append((struct.unpack_from(">i", data, pos + 4)[0], data[pos + 8:pos + 4 + size]))
        pos += 4 + size
    return out


def assignment_of(rest: bytes) -> list[tuple[int, ...]]:
    response = CreateReplicaAssignmentResponse.decode(rest[1:], version=0)  # header v1: one tag byte
    assert response.error_code == 0, response.error_message
    return [tuple(entry.replicas) for entry in response.replica_assignment]


async def settle(condition: Callable[[], bool]) -> None:
    """Let the loop run the callbacks the connection scheduled, until ``condition`` holds."""
    for _ in range(100):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the connection did not get there")


def close_reasons(logs: list[MutableMapping[str, Any]]) -> list[str]:
    return [line["reason"] for line in logs if line["event"] == "connection_closed" and "reason" in line]


# --- framing ---------------------------------------------------------------------------------

PIPELINE = [api_versions_frame(11), assignment_frame(-2), api_versions_frame(7, version=0), assignment_frame(0, 9)]


async def test_pipelined_requests_in_one_read_are_answered_in_order_with_one_write() -> None:
    state = server_state()
    connection, transport = connect(state)
    connection.data_received(b"".join(PIPELINE))
    assert len(transport.writes) == 1
    got = answers(transport.data)
    assert [cid for cid, _ in got] == [11, -2, 7, 0]
    assert ApiVersionsResponse.decode(got[0][1], version=3).error_code == 0
    assert len(assignment_of(got[1][1])) == 6 and len(assignment_of(got[3][1])) == 9
    assert not transport.closed and state.connections == {connection}


@pytest.mark.parametrize("seed", range(5))
async def test_requests_cut_anywhere_are_answered_as_if_whole(seed: int) -> None:
    whole = b"".join(PIPELINE)
    connection, transport = connect(server_state())
    connection.data_received(whole)
    expected = transport.data

    connection, transport = connect(server_state())
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(whole)), 12))
    for start, end in zip([0, *cuts], [*cuts, len(whole)], strict=True):
        connection.data_received(whole[start:end])
    assert transport.data == expected


async def test_one_byte_at_a_time() -> None:
    whole = b"".join(PIPELINE)
    connection, transport = connect(server_state())
    for i in range(len(whole)):
        connection.data_received(whole[i:i + 1])
        # an answer goes out as soon as its request is whole, not later
        assert len(answers(transport.data)) == sum(len(b"".join(PIPELINE[:k + 1])) <= i + 1 for k in range(4))
    assert [cid for cid, _ in answers(transport.data)] == [11, -2, 7, 0]


# --- order when the executor finishes out of order ---------------------------------------------

async def test_a_later_answer_ready_first_waits_for_the_head() -> None:
    executor = HeldExecutor()
    state = server_state(executor, {"replica.assignor.inline.max.replicas": "0"})
    connection, transport = connect(state)
    connection.data_received(assignment_frame(1) + api_versions_frame(2) + assignment_frame(3, 4))
    await settle(lambda: len(executor.jobs) == 2)
    assert transport.writes == []  # ApiVersions is ready at once, and waits behind assignment 1

    executor.run(1)  # assignment 3 is done first
    await settle(lambda: len(state.tasks) == 1)
    assert transport.writes == []

    executor.run(0)
    await settle(lambda: len(answers(transport.data)) == 3)
    got = answers(transport.data)
    assert [cid for cid, _ in got] == [1, 2, 3]
    assert len(assignment_of(got[0][1])) == 6 and len(assignment_of(got[2][1])) == 4
    assert not state.tasks


async def test_reading_pauses_at_max_inflight_and_resumes() -> None:
    executor = HeldExecutor()
    state = server_state(executor, {"replica.assignor.inline.max.replicas": "0",
                                    "max.inflight.requests.per.connection": "2"})
    connection, transport = connect(state)
    connection.data_received(assignment_frame(1) + assignment_frame(2) + api_versions_frame(3))
    await settle(lambda: len(executor.jobs) == 2)
    assert not transport.reading  # the third request stays unread in the buffer
    executor.run(0)
    executor.run(1)
    await settle(lambda: len(answers(transport.data)) == 3)
    assert [cid for cid, _ in answers(transport.data)] == [1, 2, 3]
    assert transport.reading


# --- bad frames close their own connection only -------------------------------------------------

BAD_FRAMES = {
    "header shorter than a request header": (struct.pack(">i", 3) + b"\x00\x12\x00", "malformed request header"),
    "unknown api key": (raw_frame(32767, 0, 5), "unknown api key"),
    "unsupported version": (raw_frame(68, 99, 5), "unsupported api version"),
    "body that does not decode": (raw_frame(68, 0, 5, b"\x00\x00"), "malformed request"),
    "negative size": (struct.pack(">i", -1), "invalid frame size"),
}


@pytest.mark.parametrize("name", list(BAD_FRAMES))
async def test_a_bad_frame_closes_only_its_own_connection(name: str) -> None:
    data, reason = BAD_FRAMES[name]
    state = server_state()
    bystander, bystander_transport = connect(state, ("127.0.0.1", 50001))
    half = assignment_frame(21)
    bystander.data_received(half[:9])
    bad, bad_transport = connect(state, ("127.0.0.1", 50002))
    with capture_logs() as logs:
        bad.data_received(api_versions_frame(4) + data + api_versions_frame(6))
    # the answer to the request before the bad one is written, then the connection closes
    assert [cid for cid, _ in answers(bad_transport.data)] == [4]
    assert bad_transport.closed and close_reasons(logs) == [reason]
    await settle(lambda: bad_transport.lost)
    assert state.connections == {bystander}
    assert state.connections_by_ip == {"127.0.0.1": 1}
    bystander.data_received(half[9:])
    assert [cid for cid, _ in answers(bystander_transport.data)] == [21]
    assert not bystander_transport.closed


async def test_an_oversize_frame_is_refused_before_its_body() -> None:
    connection, transport = connect(server_state())
    connection.data_received(struct.pack(">i", MAX_BYTES))  # at the limit: the body is awaited
    assert not transport.closed
    connection, transport = connect(server_state())
    with capture_logs() as logs:
        connection.data_received(struct.pack(">i", MAX_BYTES + 1))
    assert transport.closed and transport.writes == []
    (line,) = [line for line in logs if line["event"] == "connection_closed"]
    assert (line["reason"], line["size"], line["limit"], line["limit_bytes"]) == (
        "invalid frame size", MAX_BYTES + 1, "socket.request.max.bytes", MAX_BYTES)


# --- closing ----------------------------------------------------------------------------------

async def test_a_closed_connection_cancels_its_work_and_leaves_the_state() -> None:
    executor = HeldExecutor()
    state = server_state(executor, {"replica.assignor.inline.max.replicas": "0"})
    connection, transport = connect(state)
    assert state.connections == {connection} and state.connections_by_ip == {"127.0.0.1": 1}
    connection.data_received(assignment_frame(1) + api_versions_frame(2))
    await settle(lambda: len(executor.jobs) == 1)
    (task,) = state.tasks

    connection.connection_lost(None)  # the peer went away
    await settle(lambda: not state.tasks)  # the task is cancelled, and leaves the state when done
    assert task.cancelled() and executor.jobs[0][0].cancelled()
    assert state.connections == set() and state.connections_by_ip == {}
    connection.data_received(api_versions_frame(3))  # bytes after the close are ignored
    assert transport.writes == []


async def test_a_refused_connection_is_closed_at_once() -> None:
    state = server_state(overrides={"max.connections.per.ip": "1"})
    first, first_transport = connect(state)
    with capture_logs() as logs:
        second, second_transport = connect(state, ("127.0.0.1", 50003))
    assert second_transport.closed and not first_transport.closed
    assert [line["reason"] for line in logs if line["event"] == "connection_refused"] == [
        "max.connections.per.ip reached"]
    await settle(lambda: second_transport.lost)
    assert state.connections == {first} and state.connections_by_ip == {"127.0.0.1": 1}
