"""How a server process runs (server/runtime.py): the interpreter's switch interval while it
serves, and the start-up heap kept out of garbage collections."""

from __future__ import annotations

import gc
import sys
from types import SimpleNamespace
from typing import Any

from kafka_replica_assignor.server.runtime import SWITCH_INTERVAL_S, freeze_start_up, run_server


def test_a_thread_holds_the_interpreter_at_most_the_switch_interval_while_the_server_runs() -> None:
    """A Metadata request at the topic limit is answered in a thread; with CPython's 5 ms turns each
    of another client's callbacks waited up to 5 ms for the interpreter (issue 32)."""
    seen: list[float] = []

    async def serving() -> None:
        seen.append(sys.getswitchinterval())

    before = sys.getswitchinterval()
    server: Any = SimpleNamespace(config=SimpleNamespace(event_loop="asyncio"))
    assert run_server(server, serving()) == 0
    assert seen == [SWITCH_INTERVAL_S] and SWITCH_INTERVAL_S < before
    assert sys.getswitchinterval() == before  # given back with the process


def test_what_start_up_built_is_out_of_the_collections() -> None:
    """A full collection walked the whole start-up heap (100-190 ms) every few requests of 10,000
    topics; frozen, it walks only what was made since."""
    try:
        freeze_start_up()
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
