"""Responses of one connection, written strictly in request order.

Every request gets its answer in order, however long each took: an answer ready at once
is written at once when nothing is ahead of it, otherwise it waits in a slot behind the
answers still being computed; :meth:`ResponseQueue.flush` writes the ready head of the
queue. The answers ready during one read are gathered and written with one send
(:meth:`ResponseQueue.begin_batch`, :meth:`ResponseQueue.end_batch`), so a pipelined batch
costs one system call. An answer may be the last one (a failed authentication): once it
is written the queue says so, and the connection closes.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any


class Slot:
    """A response to come: ``response`` is None until ``task`` finishes."""

    __slots__ = ("response", "task", "outcome", "close_reason", "header", "size")

    def __init__(self, response: bytes | bytearray | None, task: asyncio.Task[Any] | None, outcome: Any,
                 close_reason: str | None, header: Any = None, size: int = 0) -> None:
        self.response = response
        self.task = task
        self.outcome = outcome  # kafka_replica_assignor.server.metrics.RequestOutcome, finished when the answer is ready
        self.close_reason = close_reason  # written last: the connection closes after it
        # the request's header and size, for a body found malformed off the loop
        self.header = header
        self.size = size


class ResponseQueue:
    """The answers of one connection in request order, written to its transport."""

    __slots__ = ("slots", "batch", "_transport")

    def __init__(self) -> None:
        self.slots: deque[Slot] = deque()
        # answers gathered during one read (None outside one), written with a single send
        self.batch: list[bytes | bytearray] | None = None
        self._transport: asyncio.WriteTransport | None = None

    def attach(self, transport: asyncio.WriteTransport) -> None:
        """The transport to write to (the TLS layer's after the handshake)."""
        self._transport = transport

    def __len__(self) -> int:
        """Answers not yet handed to the transport: in flight, for ``max.inflight.requests.per.connection``."""
        return len(self.slots)

    @property
    def computing(self) -> bool:
        """An answer is still being computed."""
        return any(s.task is not None for s in self.slots)

    def begin_batch(self) -> None:
        self.batch = []

    def end_batch(self, write: bool) -> None:
        """The read is over: send what it answered at once (unless the connection is closing)."""
        batch, self.batch = self.batch, None
        if batch and write:
            self._write_all(batch)

    def write_batch(self) -> None:
        """Send the answers gathered so far in this read (before anything that must follow them)."""
        batch = self.batch
        if batch:
            self._write_all(batch)
            batch.clear()

    def _write_all(self, batch: list[bytes | bytearray]) -> None:
        assert self._transport is not None
        self._transport.write(batch[0] if len(batch) == 1 else b"".join(batch))

    def ready(self, response: bytes | bytearray) -> None:
        """An answer ready now, and not the last one: written with this read's, or behind those ahead."""
        if self.slots:
            self.slots.append(Slot(response, None, None, None))
        elif self.batch is not None:
            self.batch.append(response)
        else:
            assert self._transport is not None
            self._transport.write(response)

    def later(self, slot: Slot) -> None:
        """An answer to come (``slot.task``), or one after which the connection closes."""
        self.slots.append(slot)

    def flush(self) -> str | None:
        """Write the ready head of the queue; the close reason when the last answer was written."""
        self.write_batch()
        slots = self.slots
        assert self._transport is not None
        write = self._transport.write
        while slots and slots[0].response is not None:
            slot = slots.popleft()
            if slot.response:
                write(slot.response)
            if slot.close_reason is not None:
                slots.clear()
                return slot.close_reason
        return None

    def cancel(self) -> None:
        """The connection is gone: stop what is still computing, drop the rest."""
        for slot in self.slots:
            if slot.task is not None and not slot.task.done():
                slot.task.cancel()
        self.slots.clear()
