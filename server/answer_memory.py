"""``queued.max.response.bytes``: the answer bytes held for clients that do not read them.

An answer is written to the connection's transport at once; a client that does not read leaves
it in the transport's buffer (the connection then stops reading its requests: flow control). The
bytes of every such buffer count here, sampled when the transport says the client stopped reading
(``pause_writing``) and after each answer written while it does not read, and given back when it
reads again (``resume_writing``) or closes. Once the total is over the cap, the connections holding
the most unread answers are closed (``connection_closed``, reason ``answers not read``), their
buffers dropped, until it is under: 64 clients each asking for a million partitions and never
reading once held 2.2 GB of answers no cap counted.
"""

from __future__ import annotations

from typing import Protocol


class AnswerHolder(Protocol):
    def drop_unread_answers(self, held: int, total: int) -> None:
        """Close at once, dropping the answers the client did not read."""


class AnswerMemory:
    """Unread answer bytes of all connections, against ``limit`` (-1: unbounded)."""

    __slots__ = ("limit", "used", "_held")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._held: dict[AnswerHolder, int] = {}

    def hold(self, holder: AnswerHolder, n: int) -> None:
        """``holder`` now holds ``n`` unread answer bytes (0: none)."""
        before = self._held.pop(holder, 0)
        if n > 0:
            self._held[holder] = n
        self.used += n - before
        while 0 <= self.limit < self.used and self._held:
            largest = max(self._held, key=self._held.__getitem__)
            held = self._held.pop(largest)
            self.used -= held
            largest.drop_unread_answers(held, self.used + held)
