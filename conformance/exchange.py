"""One blocking connection to a Kafka-protocol server: a request frame in, the answer out.

Used by the server role of the kit (:mod:`kafka_replica_assignor.conformance.runner`) and by the generator, which
records the reference server's answers through it.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable

from kafka_replica_assignor.protocol.frame import recv_exactly

MAX_RESPONSE_BYTES = 100 * 1024 * 1024
_LEN = struct.Struct(">i")


class Exchange:
    """One blocking connection that sends a frame and returns the response frame, or None
    when the far end closes the connection (it reconnects on the next call)."""

    def __init__(self, host: str, port: int, timeout: float = 5.0,
                 opener: Callable[[], socket.socket] | None = None) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.opener = opener  # a connection set up some other way (TLS, SASL): the CLI's --command-config
        self._sock: socket.socket | None = None

    def connect(self) -> socket.socket:
        if self._sock is None:
            if self.opener is not None:
                self._sock = self.opener()
            else:
                self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        return self._sock

    def __call__(self, frame: bytes) -> bytes | None:
        try:
            self.connect().sendall(frame)
        except (BrokenPipeError, ConnectionResetError):  # closed by the far end since the last call
            self.close()
            self.connect().sendall(frame)
        head = self._read(4)
        if head is None:
            return None
        (size,) = _LEN.unpack(head)
        if not 0 <= size <= MAX_RESPONSE_BYTES:
            self.close()
            raise ConnectionError(f"implausible response size {size}")
        body = self._read(size)
        if body is None:
            return None
        return head + body

    def _read(self, n: int) -> bytes | None:
        try:
            return recv_exactly(self.connect(), n)
        except ConnectionError:  # closed or reset by the far end
            self.close()
            return None

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

