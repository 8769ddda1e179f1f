"""Kafka framing and the request-header peek: the only bytes written by hand.

Everything past the header is decoded by the schema codec. A request header is
``api_key int16, api_version int16, correlation_id int32, client_id nullable string
(int16 length)``, followed in flexible versions (header v2) by tagged fields.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from typing import NamedTuple

_HEADER = struct.Struct(">hhih")
_INT32 = struct.Struct(">i")
_RESPONSE_HEAD_V0 = struct.Struct(">ii")  # length, correlation id
_RESPONSE_HEAD_V1 = struct.Struct(">iiB")  # length, correlation id, tagged fields (none)


class MalformedFrameError(ValueError):
    """The bytes are not a Kafka request: the connection that sent them is closed."""


class MalformedRequest(NamedTuple):
    """A request body that does not decode, as a value: what a placement off the event loop
    hands back for a large body (a plain value crosses the process boundary; an exception
    would tell nobody in particular). The connection closes, as for a body refused on the loop."""

    error: str
    # kafka_replica_assignor.protocol.structure's refusal (StructureError): why, and at which byte of the body
    reason: str | None = None
    offset: int | None = None

    @classmethod
    def of(cls, exc: Exception) -> MalformedRequest:
        reason, offset = getattr(exc, "reason", None), getattr(exc, "offset", None)
        if isinstance(reason, str) and isinstance(offset, int):  # a StructureError
            return cls(str(exc), reason, offset)
        return cls(f"{type(exc).__name__}: {exc}")


@dataclass(frozen=True, slots=True)
class RequestHeaderPeek:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body_offset: int  # where the body starts (before tagged header fields for flexible versions)


def peek_header(payload: bytes | memoryview) -> RequestHeaderPeek:
    """Read the fixed part of a request header (header v1 layout; v2 adds tagged fields)."""
    if len(payload) < _HEADER.size:
        raise MalformedFrameError(f"request of {len(payload)} bytes is shorter than a request header")
    api_key, api_version, correlation_id, client_len = _HEADER.unpack_from(payload, 0)
    pos = _HEADER.size
    client_id = None
    if client_len >= 0:
        end = pos + client_len
        if end > len(payload):
            raise MalformedFrameError("client id runs past the end of the request")
        try:
            client_id = bytes(payload[pos:end]).decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedFrameError("client id is not UTF-8") from None
        pos = end
    elif client_len != -1:
        raise MalformedFrameError(f"invalid client id length {client_len}")
    return RequestHeaderPeek(api_key, api_version, correlation_id, client_id, pos)


def skip_tagged_fields(payload: bytes | memoryview, pos: int) -> int:
    """Skip a tagged-field section (header v2) and return the position after it."""
    count, pos = _uvarint(payload, pos)
    for _ in range(count):
        _tag, pos = _uvarint(payload, pos)
        size, pos = _uvarint(payload, pos)
        pos += size
        if pos > len(payload):
            raise MalformedFrameError("tagged field runs past the end of the request")
    return pos


def _uvarint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise MalformedFrameError("truncated varint in request header")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise MalformedFrameError("varint too long in request header")


def uvarint_read(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` (at most 5 bytes) and the position after it; raises
    :class:`MalformedFrameError` when it is truncated or longer."""
    return _uvarint(buf, pos)


def uvarint_at(buf: bytes | memoryview, pos: int) -> int:
    """The unsigned varint at ``pos`` (at most 5 bytes): a compact array's count, peeked."""
    return _uvarint(buf, pos)[0]


def uvarint_bytes(value: int) -> bytes:
    """An unsigned varint (Kafka's compact lengths and tags), the one encoder of them."""
    if value < 0x80:
        return _SMALL[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL = [bytes((i,)) for i in range(0x80)]


def frame(correlation_id: int, body: bytes, flexible_header: bool) -> bytes:
    """A response frame around an encoded body: length, response header (v0: correlation id;
    v1, ``flexible_header``: correlation id and no tagged fields), body. One pack, one join."""
    if flexible_header:
        return _RESPONSE_HEAD_V1.pack(len(body) + 5, correlation_id, 0) + body
    return _RESPONSE_HEAD_V0.pack(len(body) + 4, correlation_id) + body


def patch_correlation_id(template: bytes, correlation_id: int) -> bytes:
    """A pre-encoded response frame with its correlation id replaced (bytes 4..8)."""
    return template[:4] + _INT32.pack(correlation_id) + template[8:]


def recv_exactly(sock: socket.socket, n: int, initial: bytes = b"") -> bytes:
    """``n`` bytes from a blocking socket (a frame's length, then its payload), of which
    ``initial`` were read already; ConnectionError when the peer closes first."""
    chunks, got = [initial], len(initial)
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise ConnectionError(f"peer closed the connection after {got} of {n} bytes")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)
