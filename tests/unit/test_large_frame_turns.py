"""A large frame takes the loop a share at a time: its reads, one share per loop iteration; the
check of a large ApiVersions body, in a thread; its memory map, unmapped off the loop."""

from __future__ import annotations

import asyncio
import mmap
import threading

from structlog.testing import capture_logs

from kafka_replica_assignor.protocol.messages import ApiVersionsRequest
from kafka_replica_assignor.server.framing import release_view
from kafka_replica_assignor.server.handlers import api_versions
from tests.unit.test_connection_protocol import (
    answers,
    api_versions_frame,
    close_reasons,
    connect,
    server_state,
    settle,
)

LARGE = 4 << 20  # over GATHER_BYTES: read into its own memory map
READ = 256 * 1024  # what one socket read hands the protocol at most


def large_api_versions(correlation_id: int, name: bytes = b"n" * LARGE) -> bytes:
    request = ApiVersionsRequest(version=3, client_software_name="x", client_software_version="1")
    request.with_header(correlation_id=correlation_id, client_id="unit")
    frame = bytes(request.encode(header=True, framed=True))
    # the same request with a long name: the compact string's length is an unsigned varint of n + 1
    n, varint = len(name) + 1, bytearray()
    while n >= 0x80:
        varint.append(n & 0x7F | 0x80)
        n >>= 7
    varint.append(n)
    payload = frame[4:].replace(b"\x02x", bytes(varint) + name, 1)
    return len(payload).to_bytes(4, "big") + payload


async def test_a_large_frame_is_read_one_share_per_loop_iteration_and_answered() -> None:
    state = server_state(overrides={"socket.request.max.bytes": str(2 * LARGE)})
    connection, transport = connect(state)
    frame = large_api_versions(5)
    connection.data_received(frame[:READ])  # the frame starts: its rest is gathered
    assert transport.reading
    connection.data_received(frame[READ:2 * READ])
    assert not transport.reading  # the share of this loop iteration is read: the rest waits
    await asyncio.sleep(0)
    assert transport.reading
    await send(connection, transport, frame[2 * READ:])
    await until(lambda: bool(transport.writes))
    small, small_transport = connect(state, ("127.0.0.1", 50001))
    small.data_received(api_versions_frame(5))
    assert answers(transport.data) == answers(small_transport.data)  # as a small request is answered


async def test_a_large_api_versions_body_is_checked_in_a_thread(monkeypatch) -> None:
    checked_on: list[int] = []
    check = api_versions.check_body

    def recording(*args):
        checked_on.append(threading.get_ident())
        return check(*args)

    monkeypatch.setattr(api_versions, "check_body", recording)
    state = server_state(overrides={"socket.request.max.bytes": str(2 * LARGE)})
    connection, transport = connect(state)
    with capture_logs() as logs:
        await send(connection, transport, large_api_versions(1))
        await until(lambda: bool(transport.writes))
        await send(connection, transport, large_api_versions(2, b"\xff" * LARGE))  # not UTF-8
        await until(lambda: transport.closed)
    assert [cid for cid, _ in answers(transport.data)] == [1]  # the first answered, the second refused
    assert close_reasons(logs) == ["malformed request"]
    assert len(checked_on) == 2 and threading.get_ident() not in checked_on


def test_a_view_released_off_the_loop_unmaps_its_frame_unless_another_view_lives() -> None:
    frame = mmap.mmap(-1, 1 << 20)
    view = memoryview(memoryview(frame))[4:]
    other = memoryview(frame)[8:]
    release_view(view)
    assert not frame.closed  # another view still reads it
    release_view(other)
    assert frame.closed


async def send(connection, transport, frame: bytes) -> None:
    for start in range(0, len(frame), READ):
        connection.data_received(frame[start:start + READ])
        await settle(lambda: transport.reading or transport.closed)


async def until(condition) -> None:
    """The loop runs (and the check's thread with it) until ``condition`` holds (a guard, not a measure)."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the connection did not get there")

