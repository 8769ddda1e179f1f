"""How a server process runs: the event loop ``event.loop`` names, and start-up failures.

The single-process server (:mod:`kafka_replica_assignor.server.main`), each worker process (:mod:`kafka_replica_assignor.server.workers`) and
the tests' in-thread server run the same loop and report start-up failures the same way, with
the exit codes of :mod:`kafka_replica_assignor.server.exit_codes`.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from .binding import ListenerBindError
from .config import ConfigError
from .exit_codes import EXIT_FAILURE, EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    from .app import ReplicaAssignorServer

def new_event_loop(kind: str) -> asyncio.AbstractEventLoop:
    """A new event loop of ``kind`` (``uvloop`` or ``asyncio``), for a caller that drives it."""
    if kind == "uvloop":
        import uvloop

        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def run(main: Coroutine[Any, Any, None], kind: str) -> None:
    """Run ``main`` to completion on a new event loop of ``kind``, as ``asyncio.run`` does."""
    if kind == "uvloop":
        import uvloop

        uvloop.run(main)
    else:
        asyncio.run(main)


def run_server(server: ReplicaAssignorServer, serving: Coroutine[Any, Any, None]) -> int:
    """Run ``serving`` on the configured event loop; the exit code (start-up failures are
    one line on stderr: :data:`EXIT_USAGE` for the configuration, :data:`EXIT_FAILURE` when
    the listener cannot be bound)."""
    try:
        run(serving, server.config.event_loop)
    except ConfigError as exc:
        print(f"replica-assignor-server: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ListenerBindError as exc:  # names the listener that failed
        print(f"replica-assignor-server: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except OSError as exc:  # the metrics listener, say
        print(f"replica-assignor-server: cannot start: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK
