"""How a server process runs: the event loop ``event.loop`` names, and start-up failures.

The single-process server (:mod:`kafka_replica_assignor.server.main`), each worker process (:mod:`kafka_replica_assignor.server.workers`) and
the tests' in-thread server run the same loop and report start-up failures the same way, with
the exit codes of :mod:`kafka_replica_assignor.server.exit_codes`.
"""

from __future__ import annotations

import asyncio
import gc
import sys
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from .binding import ListenerBindError
from .config import ConfigError
from .exit_codes import EXIT_FAILURE, EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    from .app import ReplicaAssignorServer

# how long a thread of the server may hold the interpreter while the event loop waits for it (CPython's
# default is 5 ms): a Metadata request at the topic limit is answered in a thread, and with 5 ms turns
# each of a bystander's callbacks waited up to 5 ms behind it (docs/security.md, "Third round")
SWITCH_INTERVAL_S = 0.0005


def new_event_loop(kind: str) -> asyncio.AbstractEventLoop:
    """A new event loop of ``kind`` (``uvloop`` or ``asyncio``), for a caller that drives it."""
    if kind == "uvloop":
        import uvloop

        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def freeze_start_up() -> None:
    """What start-up built (modules, schemas, the assignor, the pre-encoded answers) lives as long as the
    process: it is moved out of the collector's generations, so that a collection triggered by a
    request's allocations walks only what was made since. A full collection over the start-up heap
    held the interpreter for 100-190 ms, and one client sending Metadata requests at the topic limit
    (10,000 objects each) triggered one every few requests (docs/security.md, "Third round")."""
    gc.collect()
    gc.freeze()


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
    the listener cannot be bound). While it runs, a thread holds the interpreter at most
    :data:`SWITCH_INTERVAL_S` at a time while another waits for it."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL_S)
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
    finally:
        sys.setswitchinterval(interval)
    return EXIT_OK
