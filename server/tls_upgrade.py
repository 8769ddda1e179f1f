"""The TLS handshake of one connection on an ``SSL`` or ``SASL_SSL`` listener.

The handshake runs here, per connection (``loop.start_tls``), rather than in the listener:
asyncio and uvloop drop a failed server-side handshake without a word (the protocol's
``connection_made`` is never called), and Kafka logs it. So the listener accepts plain TCP,
and the connection upgrades its own transport.

The ClientHello belongs to the TLS layer, but uvloop starts reading after
``connection_made`` whatever the protocol says, so bytes may reach the connection before
``start_tls`` takes the transport over; they are kept (:attr:`TlsUpgrade.early`) and handed
to the TLS layer right after it is installed. ``start_tls`` installs it in its first step,
before it awaits anything, and the hand-over is scheduled just behind that step: no polling.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import TYPE_CHECKING, Any

import structlog

if TYPE_CHECKING:
    from .connection import KafkaConnection

log = structlog.get_logger("replica_assignor")
TIMED_OUT_SHARE = 0.8  # a handshake failing after this share of ssl.handshake.timeout.ms timed out (below)


class TlsUpgrade:
    """Upgrades one connection's transport to TLS; tells the connection how it went."""

    __slots__ = ("_connection", "_context", "early", "task")

    def __init__(self, connection: KafkaConnection, context: ssl.SSLContext) -> None:
        self._connection = connection
        self._context = context
        self.early: bytearray | None = None  # bytes read before the TLS layer took the transport over
        self.task: asyncio.Task[None] | None = None

    def start(self, raw: asyncio.Transport) -> None:
        self.early = bytearray()
        raw.pause_reading()
        self.task = asyncio.get_running_loop().create_task(self._run(raw))

    @property
    def running(self) -> bool:
        return self.task is not None

    def cancel(self) -> None:
        """Give up (the connection closes); the task closes the transport, which is the TLS layer's."""
        if self.task is not None:
            self.task.cancel()

    async def _run(self, raw: asyncio.Transport) -> None:
        connection = self._connection
        loop = asyncio.get_running_loop()
        timeout = connection.state.config.ssl_handshake_timeout_ms / 1000.0
        upgrade = loop.create_task(loop.start_tls(raw, connection, self._context, server_side=True,
                                                  ssl_handshake_timeout=timeout))
        loop.call_soon(self._hand_over, raw, upgrade)  # runs right after start_tls's first step
        started = loop.time()
        try:
            tls = await upgrade
        except asyncio.CancelledError:
            upgrade.cancel()
            self._failed(raw, None)
            raise
        except (OSError, TimeoutError, EOFError) as exc:
            # uvloop says a handshake timeout with ConnectionAbortedError: told apart by the time it took.
            # Its timer starts from the loop's cached clock, which can be older than ``started`` by
            # one busy loop iteration, so it may fire before ``timeout`` has passed by our clock:
            # a failure in the last fifth of the window counts as the timeout.
            self._failed(raw, exc, timed_out=loop.time() - started >= TIMED_OUT_SHARE * timeout)
            return
        self.task = None
        connection.tls_ready(raw, tls)

    def _hand_over(self, raw: asyncio.Transport, upgrade: asyncio.Task[Any]) -> None:
        """The TLS layer is the transport's protocol now: give it the bytes read before."""
        early, self.early = self.early, None
        tls_layer = raw.get_protocol()
        if early and not upgrade.done() and tls_layer is not self._connection:
            _feed(tls_layer, early)

    def _failed(self, raw: asyncio.Transport, exc: BaseException | None, timed_out: bool = False) -> None:
        self.task = None
        connection = self._connection
        if exc is not None:
            if isinstance(exc, ssl.SSLError):
                reason = exc.reason or exc.strerror or type(exc).__name__
            elif isinstance(exc, TimeoutError) or timed_out:
                reason = "handshake timed out"
            else:
                reason = "connection closed during the handshake"
            log.warning("tls_handshake_failed", conn_id=connection.conn_id, peer=connection.peer, reason=reason,
                        error=str(exc) or type(exc).__name__,
                        ssl_client_auth=connection.state.config.ssl_client_auth)
            connection.state.metrics.connection_closed("TLS handshake failed")
        raw.abort()
        # the TLS layer took the transport over: the connection is not told the connection is lost
        connection.connection_lost(exc if isinstance(exc, Exception) else None)


def _feed(protocol: asyncio.BaseProtocol, data: bytes | bytearray) -> None:
    """Hand ``data`` to a protocol as its transport would (a buffered protocol, or data_received)."""
    if isinstance(protocol, asyncio.Protocol) or not hasattr(protocol, "get_buffer"):
        protocol.data_received(data)  # type: ignore[attr-defined]
        return
    view = memoryview(data)
    while view:
        buffer = protocol.get_buffer(len(view))
        n = min(len(buffer), len(view))
        buffer[:n] = view[:n]
        protocol.buffer_updated(n)  # type: ignore[attr-defined]  # a BufferedProtocol, by get_buffer
        view = view[n:]
