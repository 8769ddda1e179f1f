"""Who runs a placement off the event loop next, so that one client cannot take every worker.

The executor (``replica.assignor.max.workers`` worker processes or threads) runs at most that
many placements at once; in front of it, this queue decides which one starts next:

- one connection runs at most half the workers at once (at least one): its other placements
  wait, and the rest of the workers stay free for the other clients;
- large placements (over ``LARGE_REPLICAS`` partitions x replication factor, or of a size not
  known on the loop: a body over 8 KiB) run on all workers but one: a 2,000-partition request
  no longer waits behind sixty of a million partitions each;
- the others start first come first served, skipping a connection at its share;
- at most ``replica.assignor.max.queued.placements`` wait; a placement over it is refused at once
  (REPLICA_ASSIGNOR_FAILED, "busy") instead of waiting behind all of them until its timeout.

A placement that waits counts its wait in its request's ``timeoutMs``. A slot is given back when
its placement is done, times out or its connection closes (the task is cancelled).
"""

from __future__ import annotations

import asyncio
from collections import deque
from contextvars import ContextVar

# the connection a request came on (its conn_id), for the tasks it starts: set with the principal
placement_owner: ContextVar[int] = ContextVar("placement_owner", default=0)


# partitions x replication factor above which a placement is large (a few hundred ms of work)
LARGE_REPLICAS = 100_000


class PlacementSlots:
    """The off-loop placements running (at most ``workers``) and waiting (at most ``max_queued``)."""

    __slots__ = ("workers", "per_connection", "max_large", "max_queued", "running", "large", "_by_owner",
                 "_waiting")

    def __init__(self, workers: int, max_queued: int) -> None:
        self.workers = workers
        self.per_connection = max(1, workers // 2)
        self.max_large = max(1, workers - 1)
        self.max_queued = max_queued
        self.running = 0
        self.large = 0  # large placements running
        self._by_owner: dict[int, int] = {}
        self._waiting: deque[tuple[int, bool, asyncio.Future[None]]] = deque()

    @property
    def queued(self) -> int:
        return len(self._waiting)

    @staticmethod
    def is_large(replicas: int | None) -> bool:
        return replicas is None or replicas > LARGE_REPLICAS

    async def acquire(self, owner: int, large: bool) -> bool:
        """Wait for a slot; False (at once) when too many placements wait already."""
        if not self._waiting and self._may_run(owner, large):
            self._start(owner, large)
            return True
        if len(self._waiting) >= self.max_queued:
            return False
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (owner, large, future)
        self._waiting.append(entry)
        self._dispatch()
        try:
            await future
        except asyncio.CancelledError:
            if not future.cancelled() and future.done():
                self.release(owner, large)  # granted, but its request was given up meanwhile
            elif entry in self._waiting:
                self._waiting.remove(entry)
            raise
        return True

    def release(self, owner: int, large: bool) -> None:
        self.running -= 1
        self.large -= large
        left = self._by_owner[owner] - 1
        if left:
            self._by_owner[owner] = left
        else:
            del self._by_owner[owner]
        self._dispatch()

    def _may_run(self, owner: int, large: bool) -> bool:
        return (self.running < self.workers and self._by_owner.get(owner, 0) < self.per_connection
                and not (large and self.large >= self.max_large))

    def _start(self, owner: int, large: bool) -> None:
        self.running += 1
        self.large += large
        self._by_owner[owner] = self._by_owner.get(owner, 0) + 1

    def _dispatch(self) -> None:
        """Start the waiting placements that may run, first come first served (at most ``max_queued``
        looked at)."""
        if self.running >= self.workers or not self._waiting:
            return
        for entry in list(self._waiting):
            owner, large, future = entry
            if future.done():  # cancelled: its waiter removes it
                continue
            if self._may_run(owner, large):
                self._waiting.remove(entry)
                self._start(owner, large)
                future.set_result(None)
                if self.running >= self.workers:
                    return
