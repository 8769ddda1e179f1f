"""Run the real server on 127.0.0.1:0 for tests: in a thread with its own event loop
(``ServerThread``), so blocking clients (kafka-python) and asyncio clients (aiokafka, in
the test's own loop) both talk to it over a real socket; or as the real command in a
subprocess (``ServerProcess``), reading the bound port from its ``server_started`` line.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping

from kafka_replica_assignor.protocol.frame import recv_exactly
from kafka_replica_assignor.server.app import ReplicaAssignorServer
from kafka_replica_assignor.server.config import load_config
from kafka_replica_assignor.server.runtime import new_event_loop


def read_frame(sock: socket.socket) -> bytes:
    """One whole Kafka frame from a blocking socket, without its 4-byte length;
    ConnectionError if the server closes first."""
    (size,) = struct.unpack(">i", recv_exactly(sock, 4))
    return recv_exactly(sock, size)


def wait_until(condition: Callable[[], object], timeout: float = 10.0) -> None:
    """Poll ``condition`` (the server's public state, read from the test thread) until it holds;
    AssertionError after ``timeout`` seconds (a bound against hanging, not a measurement)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the server did not get there")
        time.sleep(0.01)


class ServerThread:
    def __init__(self, overrides: Mapping[str, str] | None = None, loop: str = "uvloop") -> None:
        props = {"listeners": "PLAINTEXT://127.0.0.1:0", **(overrides or {})}
        self.config = load_config(None, props)
        self.loop_kind = loop
        self._server: ReplicaAssignorServer | None = None  # made on the server's own loop
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    @property
    def server(self) -> ReplicaAssignorServer:
        """The running server (after :meth:`start`)."""
        if self._server is None:
            raise RuntimeError("the server is not started")
        return self._server

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def metrics_port(self) -> int | None:
        """The bound port of ``metrics.listener`` (None when metrics are off)."""
        return self.server.metrics_port

    def _run(self) -> None:
        loop = new_event_loop(self.loop_kind)
        self._loop = loop
        asyncio.set_event_loop(loop)

        async def main():
            self._server = server = ReplicaAssignorServer(self.config)
            try:
                await server.start()
            except BaseException as exc:
                self._error = exc
                self._ready.set()
                return
            self._ready.set()
            await server.serve()

        try:
            loop.run_until_complete(main())
        finally:
            loop.close()

    def start(self) -> ServerThread:
        self._thread = threading.Thread(target=self._run, name="replica-assignor-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("server did not start")
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        if self._thread is not None and self._thread.is_alive() and self._loop is not None \
                and self._server is not None:
            self._loop.call_soon_threadsafe(self._server.request_stop)
            self._thread.join(30)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class ServerProcess:
    """``replica-assignor-server`` as a real process; ``lines`` holds its JSON log lines."""

    def __init__(self, *args: str, command: list[str] | None = None, env: Mapping[str, str] | None = None) -> None:
        base = command or [sys.executable, "-m", "kafka_replica_assignor.server.main"]
        self.argv = [*base, "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                     "--override", "log.format=json", *args]
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen | None = None
        self.lines: list[dict] = []
        self.port: int | None = None
        self.drained = threading.Event()
        self.metrics_port: int | None = None

    def start(self, timeout: float = 30.0) -> ServerProcess:
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=self.env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"server exited with {self.proc.wait()}: {self.lines}")
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            self.lines.append(record)
            if record.get("event") == "metrics_started":
                self.metrics_port = record["port"]
            if record.get("event") == "server_started":
                self.port = record["port"]
                threading.Thread(target=self._drain, daemon=True).start()
                return self
        raise RuntimeError("server did not log server_started in time")

    def _drain(self) -> None:
        try:
            for line in self.proc.stdout:
                try:
                    self.lines.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
        finally:
            self.drained.set()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def wait_for_line(self, predicate, timeout: float = 10.0) -> dict:
        """The first log line (a dict) for which ``predicate`` holds, waiting for it if need be."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            lines = list(self.lines)
            for record in lines[seen:]:
                if predicate(record):
                    return record
            seen = len(lines)
            if time.monotonic() > deadline:
                raise AssertionError(f"no matching log line within {timeout}s; last lines: {lines[-5:]}")
            time.sleep(0.02)

    def rss_kib(self) -> int:
        """Resident memory of the server process (VmRSS from /proc), in KiB."""
        with open(f"/proc/{self.proc.pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def stop(self, sig: int | None = None, timeout: float = 20.0) -> int:
        """Signal (SIGTERM by default), wait, and close the output pipe once it is read to the end."""
        import signal as _signal
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(sig or _signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        if self.proc.stdout is not None and not self.proc.stdout.closed:
            if self.port is not None:  # a reader thread runs only once the server started
                self.drained.wait(5)
            if self.drained.is_set() or self.port is None:
                self.proc.stdout.close()
        return code

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
