"""A plug-in assignor is constructed once in a child process before the server starts serving.

Why a child. A constructor that raises, needs arguments or belongs to an abstract class is a
configuration error the server could catch where it constructs the class. One that ends the
process (``os._exit``, a signal), never returns, or starts a thread or a process and returns
cannot be caught there: the server would stop with the plug-in's exit code, hang, or carry the
plug-in's helpers for its whole life (in the zygote that forks the assignor workers, a thread
makes forking unsafe and a helper process is outside every worker's kill and memory limit). So
the server first constructs the class in a child (``python -m
kafka_replica_assignor.server.plugin_check NAME``, the same interpreter), in a session of its own
and as the reaper of its orphans, so that whatever the constructor starts stays below it.

What the child does. It constructs the class, then looks for what the constructor left running:
threads other than the main one that are not daemons (the interpreter would wait for them at
exit) and processes below it (by /proc's parent links, orphans included). It kills those
processes, writes one result line (on a descriptor of its own: the plug-in's prints go to
stderr) and ends with ``os._exit``, so that no thread holds it. The server reads that line, not
the end of the pipe (a helper holds the pipe open), and then kills the child's process group.

What the server does with it, one line and exit 2 (:data:`~.exit_codes.EXIT_USAGE`) for each:

- the constructor raised, or the class does not load: the message of
  :class:`~kafka_replica_assignor.assignors.UnknownAssignorError`;
- the constructor ended the process (no result line, an exit code or a signal);
- it did not return within :data:`TIMEOUT_S` (the child and everything below it is killed);
- it left threads or processes running: named (a thread's name, a process's pid and command
  line). This refuses the start, as Kafka refuses a plug-in whose ``configure`` fails: a
  plug-in that needs a helper starts it on first use, in the process that places, which the
  server can kill.

The built-in assignors (``assignors.REGISTERED``) are not checked. Once the check passes the
server constructs the plug-in once where it runs: in the zygote of the worker processes
(``replica.assignor.isolation=process``), or in the server process (``thread``).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from kafka_replica_assignor.assignors import UnknownAssignorError, create_assignor
from kafka_replica_assignor.assignors.registry import REGISTERED

from .config import ConfigError
from .isolation import become_subreaper, descendants, kill_descendants

TIMEOUT_S = 60.0
_KEY = "replica.assignor.class.name"
_COMMAND_SHOWN = 80  # characters of a helper process's command line in the message


def check_constructible(name: str, timeout_s: float = TIMEOUT_S) -> None:
    """Raise :class:`ConfigError` (one line) when constructing plug-in ``name`` fails, ends the
    process, does not return within ``timeout_s`` or leaves threads or processes running."""
    if name in REGISTERED:
        return
    child = subprocess.Popen([sys.executable, "-m", "kafka_replica_assignor.server.plugin_check", name],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             start_new_session=True, close_fds=True)
    try:
        result = _result(child, timeout_s)
    finally:
        _end(child)
    if result is None:
        raise ConfigError(f"{_KEY}: cannot create assignor {name!r}: its constructor did not return "
                          f"within {timeout_s:.0f} s")
    if result.get("refused"):
        raise ConfigError(f"{_KEY}: {result['refused']}")  # what the constructor or the import raised
    if result.get("threads") or result.get("processes"):
        raise ConfigError(f"{_KEY}: cannot create assignor {name!r}: its constructor returned but left "
                          f"{_helpers(result)} running; a plug-in's constructor must not start threads or "
                          f"processes (start them on first use)")
    if result.get("constructed"):
        return
    code = child.returncode
    how = f"exit code {code}" if code is not None and code >= 0 else f"signal {-(code or 0)}"
    raise ConfigError(f"{_KEY}: cannot create assignor {name!r}: its constructor ended the process "
                      f"({how}) instead of returning")


def _helpers(result: dict[str, Any]) -> str:
    threads = [f"thread {name!r}" for name in result.get("threads", ())]
    processes = [f"process {pid} ({command})" for pid, command in result.get("processes", ())]
    return ", ".join(threads + processes)


def _result(child: subprocess.Popen[bytes], timeout_s: float) -> dict[str, Any] | None:
    """The child's result line; ``{}`` when it ended without one; None when it did not answer in time."""
    assert child.stdout is not None
    out = child.stdout.fileno()
    os.set_blocking(out, False)
    deadline = time.monotonic() + timeout_s
    data = b""
    with selectors.DefaultSelector() as selector, _exit_watch(child) as exited:
        selector.register(out, selectors.EVENT_READ)
        if exited is not None:
            selector.register(exited, selectors.EVENT_READ)
        while b"\n" not in data:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            # the pipe or the child's end (a pidfd); without a pidfd, its end is seen within a second
            selector.select(left if exited is not None else min(left, 1.0))
            try:
                chunk: bytes | None = os.read(out, 65536)
            except BlockingIOError:
                chunk = None
            if chunk:
                data += chunk
            elif chunk == b"" or child.poll() is not None:
                break  # the end of the pipe, or the child ended (a helper may hold the pipe open)
    line = data.partition(b"\n")[0]
    try:
        said = json.loads(line) if line else {}
    except ValueError:
        said = {}
    return said if isinstance(said, dict) else {}


@contextlib.contextmanager
def _exit_watch(child: subprocess.Popen[bytes]) -> Any:
    """A descriptor that becomes readable when ``child`` ends (Linux's pidfd), or None."""
    try:
        fd = os.pidfd_open(child.pid)
    except (OSError, AttributeError):
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


def _end(child: subprocess.Popen[bytes]) -> None:
    """Kill the child, what is below it and its process group; reap it."""
    if child.poll() is None:
        kill_descendants(child.pid)  # while it lives, its orphans are its own (a subreaper)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)  # its session's group: whatever stayed in it
    child.wait()
    assert child.stdout is not None
    child.stdout.close()


# -- in the child -------------------------------------------------------------------------------
def _main(name: str) -> None:
    """Construct ``name``, report (one JSON line) and end at once (no non-daemon thread holds it)."""
    report = os.fdopen(os.dup(1), "w")  # the result's own descriptor: the plug-in's prints go to stderr
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    become_subreaper()  # what the constructor starts stays below this process, even after setsid
    try:
        create_assignor(name)
    except UnknownAssignorError as exc:
        result: dict[str, Any] = {"refused": str(exc)}
    else:
        main = threading.main_thread()
        result = {"constructed": True,
                  "threads": [t.name for t in threading.enumerate() if t is not main and not t.daemon],
                  "processes": [(pid, _command(pid)) for pid in descendants(os.getpid())]}
        kill_descendants(os.getpid())
    report.write(json.dumps(result) + "\n")
    report.flush()
    os._exit(0)


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            command = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"
    return command if len(command) <= _COMMAND_SHOWN else command[:_COMMAND_SHOWN - 3] + "..."


if __name__ == "__main__":
    _main(sys.argv[1])
