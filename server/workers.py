"""``num.worker.processes``: N server processes sharing one listener port.

One Python process runs on one core at a time. With ``num.worker.processes=N`` (N > 1) the
process the operator started becomes a *supervisor* that serves nothing itself: it binds
the listener's address with ``SO_REUSEPORT`` (bound, never listening: it only holds the
port, so port 0 picks one port for everybody and nobody else takes it), then starts N
*workers*. Each worker is a whole :class:`~kafka_replica_assignor.server.app.ReplicaAssignorServer` on its own
event loop, with its own cluster source, assignor pool and connections; each listens on
the same address with ``SO_REUSEPORT`` and the kernel spreads new connections among them.
A connection stays in the worker that accepted it, so per-connection ordering is unchanged.

Workers are fresh interpreters (``sys.executable``), not forks of the supervisor. Each is
given one end of a socket pair: the supervisor sends the configuration it has already
checked (pickled; with the bound port in place of port 0) and the worker answers one JSON
line, the fields of its ``worker_started`` line, once it accepts connections. Thereafter
the pair is only watched: end of file tells a worker that the supervisor is gone (even
after SIGKILL, as the kernel closes its end), and the worker shuts down gracefully.

Lifecycle:

- start-up: worker 0 first, then the others together, so that a configuration error found
  only at start-up (an unreadable cluster file, say) is one line on stderr, printed by
  worker 0, with its exit code (2), as without workers. ``server_started`` is logged once,
  by the supervisor, when every worker accepts, with ``workers=N``.
- a worker that exits unexpectedly is logged (``worker_exited``: worker, pid, returncode)
  and started again; after :data:`MAX_START_FAILURES` start-ups in a row that fail, the
  supervisor gives up: it stops the other workers and exits 1.
- SIGTERM or SIGINT to the supervisor: every worker gets SIGTERM and does its own bounded
  graceful shutdown (``shutdown.timeout.ms``); a worker still running
  :data:`KILL_AFTER_S` seconds past that bound is killed. Then ``server_stopped``, exit 0.
  Workers run in their own process group: Ctrl-C in a terminal reaches the supervisor only.

Workers log as the server does, with ``worker=<index>`` bound on every line, and
``worker_started``/``worker_stopped`` in place of ``server_started``/``server_stopped``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import pickle
import signal
import socket
import struct
import sys
from typing import Any

import structlog

from kafka_replica_assignor.protocol.frame import recv_exactly

from .app import ReplicaAssignorServer
from .binding import ListenerBindError, bind_listener
from .config import Listener, ServerConfig
from .exit_codes import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from .health import remove_status, write_status
from .logs import configure_logging
from .runtime import freeze_start_up, run_server

log = structlog.get_logger("replica_assignor")

MAX_START_FAILURES = 3
KILL_AFTER_S = 5.0
_LEN = struct.Struct(">I")


def reserve(listener: Listener) -> list[socket.socket]:
    """Bind (without listening) ``listener``'s addresses (kafka_replica_assignor.server.binding) with
    ``SO_REUSEPORT`` and return the sockets; the caller keeps them open for as long as the port
    must stay this server's.

    Raises ListenerBindError when the port is taken. ``SO_REUSEPORT`` alone would not say so if
    the owner is another ``SO_REUSEPORT`` listener of the same user (a second copy of this
    server): it would silently share the port. So a fixed port is first bound without it.
    """
    if listener.port != 0:
        for sock in bind_listener(listener):
            sock.close()
    return bind_listener(listener, reuse_port=True)


@dataclasses.dataclass(slots=True)
class _Worker:
    index: int
    proc: asyncio.subprocess.Process
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter


class Supervisor:
    """Starts, watches, restarts and stops the workers; serves nothing itself."""

    def __init__(self, config: ServerConfig, port: int, status_file: str | None = None) -> None:
        first = config.listeners[0]
        self.status_file = status_file  # the bound listener, for the health check (kafka_replica_assignor.server.health)
        # the workers bind the port the supervisor holds (the one port 0 picked)
        self.config = dataclasses.replace(config, listeners=(Listener(first.security_protocol, first.host, port),
                                                              *config.listeners[1:]))
        self.count = config.num_worker_processes
        self.workers: dict[int, _Worker] = {}
        self.ready: dict[int, dict[str, Any]] = {}
        self.announced = False
        self.stopping = False
        self.exit_code = EXIT_OK
        self._stop = asyncio.Event()
        self._first_ready = asyncio.Event()  # set when worker 0 accepts, or when stopping

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._on_signal, sig)
        slots = [asyncio.create_task(self._keep(i)) for i in range(self.count)]
        await self._stop.wait()
        if self.status_file:
            remove_status(self.status_file)
        for worker in list(self.workers.values()):
            _signal(worker, signal.SIGTERM)
        bound = self.config.shutdown_timeout_ms / 1000.0 + KILL_AFTER_S
        _, late = await asyncio.wait(slots, timeout=bound)
        if late:
            for worker in list(self.workers.values()):
                if worker.proc.returncode is None:
                    log.warning("worker_killed", worker=worker.index, pid=worker.proc.pid,
                                reason=f"still running {bound:g} s after SIGTERM")
                    _signal(worker, signal.SIGKILL)
            await asyncio.wait(slots)
        if self.announced:
            log.info("server_stopped", port=self.config.listeners[0].port, workers=self.count)
        return self.exit_code

    def _on_signal(self, sig: int) -> None:
        self._request_stop()  # first: stopping must not depend on the log being writable
        log.info("signal_received", signal=signal.Signals(sig).name)

    def _request_stop(self, exit_code: int = EXIT_OK) -> None:
        if not self.stopping:
            self.stopping = True
            self.exit_code = exit_code
        self._first_ready.set()
        self._stop.set()

    async def _keep(self, index: int) -> None:
        """Worker ``index``: start it, and start it again whenever it exits unasked."""
        if index:
            await self._first_ready.wait()
        failures = 0
        while not self.stopping:
            try:
                worker = await self._spawn(index)
            except OSError as exc:  # no process could be started (out of memory, pids, ...)
                log.error("worker_failed", worker=index, reason=f"cannot start a process: {exc}")
                self._request_stop(EXIT_FAILURE)
                return
            fields = await _ready(worker)
            if fields is not None:
                failures = 0
                self._accepting(index, fields)
            code = await worker.proc.wait()
            worker.writer.close()
            del self.workers[index]
            if self.stopping:
                return
            log.warning("worker_exited", worker=index, pid=worker.proc.pid, returncode=code)
            if fields is None:
                failures += 1
                if not self.announced:
                    # as without workers: the first worker's exit code (configuration, or the port)
                    self._request_stop(code if code in (EXIT_FAILURE, EXIT_USAGE) else EXIT_FAILURE)
                    return
                if failures >= MAX_START_FAILURES:
                    log.error("worker_failed", worker=index, failures=failures,
                              reason="exited before accepting connections, every time")
                    self._request_stop(EXIT_FAILURE)
                    return

    async def _spawn(self, index: int) -> _Worker:
        ours, theirs = socket.socketpair()
        env = dict(os.environ)
        paths = [p or os.getcwd() for p in sys.path]  # the same modules as the supervisor
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-c", "from kafka_replica_assignor.server.workers import worker_main; worker_main()",
                str(index), str(theirs.fileno()),
                pass_fds=[theirs.fileno()], stdin=asyncio.subprocess.DEVNULL, env=env, process_group=0)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        reader, writer = await asyncio.open_connection(sock=ours)
        worker = self.workers[index] = _Worker(index, proc, reader, writer)
        if self.stopping:  # asked to stop while it was being started
            _signal(worker, signal.SIGTERM)
        data = pickle.dumps(self.config)
        writer.write(_LEN.pack(len(data)) + data)
        try:
            await writer.drain()
        except OSError:
            pass  # it died already: _ready sees the end of file
        return worker

    def _accepting(self, index: int, fields: dict[str, Any]) -> None:
        self.ready[index] = fields
        if index == 0:
            self._first_ready.set()
        if not self.announced and len(self.ready) == self.count and not self.stopping:
            self.announced = True
            if self.status_file:
                first = self.config.listeners[0]
                write_status(self.status_file, Listener(first.security_protocol, self.ready[0]["host"],
                                                        self.ready[0]["port"]), None, self.config.bootstrap_servers)
            log.info("server_started", **self.ready[0], workers=self.count)


async def _ready(worker: _Worker) -> dict[str, Any] | None:
    """The worker's started fields once it accepts connections; None if it exits first."""
    try:
        line = await worker.reader.readline()
        return json.loads(line) if line else None
    except (OSError, ValueError):
        return None


def _signal(worker: _Worker, sig: int) -> None:
    if worker.proc.returncode is None:
        try:
            worker.proc.send_signal(sig)
        except ProcessLookupError:
            pass


def supervise(config: ServerConfig, status_file: str | None = None) -> int:
    """Run ``num.worker.processes`` workers until SIGTERM/SIGINT; the process's exit code."""
    try:
        held = reserve(config.listeners[0])
    except ListenerBindError as exc:
        print(f"replica-assignor-server: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    try:
        return asyncio.run(Supervisor(config, held[0].getsockname()[1], status_file).run())
    finally:
        for sock in held:
            sock.close()


# -- in the worker -------------------------------------------------------------------

def worker_main() -> None:
    """Entry point of a worker process: ``worker_main()`` with argv ``[index, channel fd]``."""
    index, fd = int(sys.argv[1]), int(sys.argv[2])
    channel = socket.socket(fileno=fd)
    try:
        config = pickle.loads(recv_exactly(channel, _LEN.unpack(recv_exactly(channel, _LEN.size))[0]))
    except (OSError, EOFError):
        sys.exit(EXIT_FAILURE)  # the supervisor is gone before it said anything
    log_stream = configure_logging(config.log_format, config.log_level)
    structlog.contextvars.bind_contextvars(worker=index)  # every line of this process names it
    server = ReplicaAssignorServer(config, worker=index, log_stream=log_stream)
    sys.exit(run_server(server, _serve(server, channel)))


async def _serve(server: ReplicaAssignorServer, channel: socket.socket) -> None:
    await server.start()
    freeze_start_up()
    server.install_signal_handlers()
    loop = asyncio.get_running_loop()
    channel.setblocking(False)
    try:
        await loop.sock_sendall(channel, json.dumps(server.started_fields).encode() + b"\n")
    except OSError:
        server.request_stop()  # the supervisor is gone already

    def on_readable() -> None:
        try:
            data = channel.recv(64)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # end of file: the supervisor exited, however it did
            loop.remove_reader(channel.fileno())
            server.request_stop()
            log.warning("supervisor_exited", reason="end of file on the supervisor's channel")

    loop.add_reader(channel.fileno(), on_readable)
    await server.serve()
