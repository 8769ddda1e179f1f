"""structlog set-up: JSON lines on stdout (a console renderer only on a TTY when asked
for ``auto``), context bound per connection and request through contextvars, and the
standard library's loggers (kafka-python, asyncio) routed through the same processors.

Event names are snake_case past tense (``server_started``, ``request_handled``); keys come
from a fixed vocabulary: conn_id, peer, correlation_id, api_key, api_version, assignor,
duration_ms, error_code.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import IO, Any

import orjson
import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


class LogStream:
    """The log stream, minus its failures: if whatever reads the logs goes away (a closed
    pipe), lines are dropped and the server keeps serving and can still be stopped.

    It also owns the buffering, whatever the stream's own (``PYTHONUNBUFFERED=1``, common in
    containers, makes every line a system call): lines are kept in order and written on
    ``flush``, which structlog and the standard library call after every line, except while
    the calling thread holds the lines (:meth:`hold`): a connection answering a pipelined read
    holds them, and they are written together when it is done.

    :func:`configure_logging` makes one and returns it; the server that logs through it owns
    it (``ReplicaAssignorServer(log_stream=...)``, then ``ServerState.log_stream``), so that
    its connections can hold their lines. No module keeps it.
    """

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self.dropped = 0
        self._lock = threading.Lock()
        self._pending: list[str] = []
        self._holds = threading.local()

    def write(self, text: str) -> int:
        with self._lock:
            self._pending.append(text)
        return len(text)

    def flush(self) -> None:
        if not getattr(self._holds, "depth", 0):
            self._flush_now()

    def hold(self) -> None:
        self._holds.depth = getattr(self._holds, "depth", 0) + 1

    def release(self) -> None:
        self._holds.depth -= 1
        if not self._holds.depth:
            self._flush_now()

    def _flush_now(self) -> None:
        with self._lock:  # held while writing: lines from two threads stay in order
            pending, self._pending = self._pending, []
            if not pending:
                return
            try:
                self._stream.write(pending[0] if len(pending) == 1 else "".join(pending))
                self._stream.flush()
            except (BrokenPipeError, ValueError, OSError):
                self.dropped += len(pending)

    def isatty(self) -> bool:
        return bool(self._stream.isatty())


def hold_lines(stream: LogStream | None) -> LogStream | None:
    """Hold this thread's log lines in ``stream`` (when there is one) until
    :func:`release_lines` (given what this returned): they are then written together. Holds nest."""
    if stream is not None:
        stream.hold()
    return stream


def release_lines(stream: LogStream | None) -> None:
    if stream is not None:
        stream.release()


def _orjson_dumps(obj: Any, **_kw: Any) -> str:
    # orjson: the same JSON a tenth of the cost of json.dumps; anything it cannot encode is str()
    return orjson.dumps(obj, default=str).decode()


class _IsoClock:
    """UTC ISO-8601 timestamps with microseconds, the seconds part formatted once per second."""

    __slots__ = ("_second", "_prefix")

    def __init__(self) -> None:
        self._second = -1
        self._prefix = ""

    def __call__(self, _logger: WrappedLogger, _name: str, event_dict: EventDict) -> EventDict:
        now = time.time()
        second = int(now)
        if second != self._second:
            self._second = second
            self._prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        event_dict["timestamp"] = f"{self._prefix}.{int((now - second) * 1e6):06d}Z"
        return event_dict


_iso_timestamp = _IsoClock()


def _format_exc_info(logger: WrappedLogger, name: str, event_dict: EventDict) -> EventDict:
    """structlog's ``format_exc_info``, called only for the lines that carry ``exc_info``
    (most lines don't: this saves its lookup on every request's line)."""
    if "exc_info" in event_dict:
        return structlog.processors.format_exc_info(logger, name, event_dict)
    return event_dict


def configure_logging(log_format: str = "auto", level: str = "info", stream: IO[str] | None = None) -> LogStream:
    """Route structlog and the standard library's loggers to ``stream`` (stdout by default);
    the :class:`LogStream` they write through, for the server to own."""
    target = stream or sys.stdout
    use_console = log_format == "console" or (log_format == "auto" and target.isatty())
    lossy = LogStream(target)
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        _iso_timestamp,
    ]
    renderer = (structlog.dev.ConsoleRenderer() if use_console
                else structlog.processors.JSONRenderer(serializer=_orjson_dumps))
    structlog.configure(
        processors=[*shared, _format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS[level]),
        logger_factory=structlog.WriteLoggerFactory(file=lossy),  # type: ignore[arg-type]  # a text stream
        # the server configures logging once, before its first log line: cache the bound
        # loggers instead of rebuilding them on every call (structlog's production advice)
        cache_logger_on_first_use=True,
    )
    # stdlib loggers (kafka-python, asyncio, py4j) through the same processors
    handler = logging.StreamHandler(lossy)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
    ))
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(max(_LEVELS[level], logging.WARNING))
    return lossy


def get_logger(name: str = "replica_assignor") -> Any:
    return structlog.get_logger(name)
