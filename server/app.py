"""The server object: owns start-up, serving, and a bounded graceful shutdown."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import ssl
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

import structlog

from kafka_replica_assignor.assignors import ReplicaAssignor, UnknownAssignorError, load_assignor_class
from kafka_replica_assignor.assignors.registry import is_builtin

from .binding import WILDCARD_HOSTS, ListenerBindError, bind_listener
from .cluster_source import create_source
from .config import ConfigError, Listener, ServerConfig, metrics_address
from .connection import KafkaConnection
from .dispatch import APIS
from .health import remove_status, write_status
from .isolation import AssignorPool, worker_assignor
from .logs import LogStream
from .metrics import Metrics, MetricsServer
from .request_memory import RequestMemory
from .security import UsersFileError, UserStore, build_ssl_context
from .shared_state import ServerState

log = structlog.get_logger("replica_assignor")


class ReplicaAssignorServer:
    """``await start()`` binds and logs ``server_started``; ``await serve()`` runs until
    :meth:`request_stop` (or SIGTERM/SIGINT with :meth:`install_signal_handlers`), then
    shuts down: stop accepting, let in-flight requests finish within
    ``shutdown.timeout.ms``, close connections.

    ``worker``: this server is worker ``worker`` of ``num.worker.processes`` (server/workers.py):
    it binds its listener with ``SO_REUSEPORT``, beside the other workers, and logs
    ``worker_started``/``worker_stopped`` (the supervisor logs ``server_started`` once)."""

    def __init__(self, config: ServerConfig, worker: int | None = None, status_file: str | None = None,
                 log_stream: LogStream | None = None) -> None:
        self.config = config
        self.log_stream = log_stream  # what configure_logging() returned: the connections batch lines in it
        self.worker = worker
        self.status_file = status_file  # where the health check finds the bound listener (kafka_replica_assignor.server.health)
        # the fields of the started line, for the supervisor to announce the server with
        self.started_fields: dict[str, Any] = {}
        self.state: ServerState | None = None
        self.started = asyncio.Event()
        self._stop = asyncio.Event()
        self._servers: list[asyncio.base_events.Server] = []
        self._metrics_server: MetricsServer | None = None
        self.host: str | None = None
        self.port: int | None = None
        self.bound: list[Listener] = []  # every listener, as bound (the first is host, port)
        self.metrics_port: int | None = None

    def _executor(self, metrics: Metrics) -> Executor:
        cfg = self.config
        if cfg.assignor_isolation == "thread":
            return ThreadPoolExecutor(max_workers=cfg.assignor_max_workers, thread_name_prefix="assignor")
        return AssignorPool(cfg.replica_assignor_class_name, workers=cfg.assignor_max_workers,
                            memory_limit=cfg.assignor_worker_max_memory_bytes, on_restart=metrics.worker_restarted)

    async def start(self) -> None:
        """Build the shared state, bind the listener (and the metrics listener), log the start."""
        listener = self.config.listeners[0]
        # first: unreadable PEM files are a configuration error before anything starts
        uses_tls = any(each.uses_tls for each in self.config.listeners)
        ssl_context = build_ssl_context(self.config) if uses_tls else None
        state = await self._build_state()
        try:
            for each in self.config.listeners:  # every listener, each with its own security protocol
                await self._listen(state, each, ssl_context if each.uses_tls else None)
        except OSError:
            await self._abandon(state)
            raise
        for api in APIS.values():
            if api.templates is not None:
                for version, data in api.templates(state).items():
                    state.templates[(api.key, version)] = data
        metrics_at = metrics_address(self.config)
        if metrics_at is not None:
            self._metrics_server = MetricsServer(state.metrics, self._health)
            try:
                await self._metrics_server.start(*metrics_at)
            except OSError as exc:
                await self._abandon(state)
                raise ListenerBindError(f"metrics.listener={self.config.metrics_listener}", exc) from None
            self.metrics_port = self._metrics_server.port
            log.info("metrics_started", host=self._metrics_server.host, port=self.metrics_port,
                     paths=["/metrics", "/health"])
        self._announce(state, listener)
        self.started.set()

    async def _abandon(self, state: ServerState) -> None:
        """A start-up that failed: nothing of it outlives it (the listeners bound, the source, the workers)."""
        for server in self._servers:
            server.close()
        await state.source.stop()
        state.executor.shutdown(wait=False, cancel_futures=True)

    def _own_assignor(self) -> ReplicaAssignor | None:
        """The assignor this process runs, built once (the one the placements off the loop in
        threads use too: kafka_replica_assignor.server.isolation.worker_assignor); None for a
        plug-in that runs in worker processes only, which build it (in their zygote) and nothing
        of it runs here."""
        cfg = self.config
        name = cfg.replica_assignor_class_name
        try:
            if cfg.assignor_isolation == "process" and not is_builtin(load_assignor_class(name)):
                return None
            return worker_assignor(name)
        except UnknownAssignorError as exc:  # its constructor raised, needs arguments, or is abstract
            raise ConfigError(f"replica.assignor.class.name: {exc}") from None

    async def _build_state(self) -> ServerState:
        """The assignor, the SASL users, the metrics, the cluster source and the executor."""
        cfg = self.config
        assignor = self._own_assignor()
        listener = cfg.listeners[0]
        users = None
        if any(each.uses_sasl for each in cfg.listeners):
            # load_config's checks refuse a SASL listener without sasl.users.file
            assert cfg.sasl_users_file is not None
            try:
                users = UserStore(cfg.sasl_users_file)
            except UsersFileError as exc:
                raise ConfigError(f"sasl.users.file: {exc}") from None
        metrics = Metrics(enabled=metrics_address(cfg) is not None,
                          api_names={key: api.name for key, api in APIS.items()})
        source = create_source(cfg)
        await source.start()
        executor = self._executor(metrics)
        self.state = state = ServerState(
            config=cfg, assignor=assignor, assignor_name=cfg.replica_assignor_class_name,
            source=source, executor=executor, advertised=listener, listener=listener, users=users,
            metrics=metrics, request_memory=RequestMemory(cfg.queued_max_request_bytes),
            log_stream=self.log_stream,
        )
        if metrics.enabled:
            metrics.connections.set_function(lambda: len(state.connections))
            metrics.watch_cluster(source.figures)
            if state.memo is not None:
                metrics.watch_memo(state.memo)
        if isinstance(executor, AssignorPool) and not state.assignor_builtin:
            # a plug-in always runs in a worker: have them ready before the first request
            try:
                await asyncio.get_running_loop().run_in_executor(None, executor.start)
            except RuntimeError as exc:
                executor.shutdown(wait=False)
                raise ConfigError(f"replica.assignor.class.name: {exc}") from None
        return state

    async def _listen(self, state: ServerState, listener: Listener, ssl_context: ssl.SSLContext | None) -> None:
        """Bind ``listener`` (a worker with ``SO_REUSEPORT``: the supervisor holds the port and the
        kernel spreads connections); the first one's bound and advertised addresses go into the state (and
        ``host``, ``port``), every one's into ``bound``."""
        # the bound listener and what it advertises are known once bound: the connections it accepts
        # after that read them from here
        at: list[Listener] = []

        def accepted() -> KafkaConnection:
            return KafkaConnection(state, ssl_context, at[0], at[1])

        # every address the host stands for, on one port (kafka_replica_assignor.server.binding: the
        # wildcard is dual-stack); a failure names this listener
        sockets = bind_listener(listener, reuse_port=self.worker is not None)
        loop = asyncio.get_running_loop()
        try:
            for sock in sockets:
                # TLS: each connection runs its own handshake (KafkaConnection), so that a failed one is logged
                self._servers.append(await loop.create_server(accepted, sock=sock, backlog=1024))
        except OSError as exc:
            for sock in sockets:
                sock.close()
            raise ListenerBindError(listener, exc) from None
        host, port = sockets[0].getsockname()[:2]
        bound = Listener(listener.security_protocol, host, port)
        at += [bound, self._advertised(bound)]
        self.bound.append(bound)
        if len(self.bound) == 1:
            self.host, self.port = host, port
            state.listener, state.advertised = at

    def _advertised(self, bound: Listener) -> Listener:
        """What Metadata names for ``bound``: the ``advertised.listeners`` entry of its security protocol
        (with a single listener, the first entry whatever its protocol, as before), else its own address
        (a wildcard one: the host's canonical name, as Kafka)."""
        cfg = self.config
        same = [adv for adv in cfg.advertised_listeners if adv.security_protocol == bound.security_protocol]
        if not same and len(cfg.listeners) == 1:
            same = list(cfg.advertised_listeners[:1])
        if same:  # an empty host there: the host's canonical name, as Kafka
            return Listener(same[0].security_protocol, same[0].host or socket.getfqdn(), same[0].port or bound.port)
        if bound.host in (*WILDCARD_HOSTS, "0.0.0.0"):
            return Listener(bound.security_protocol, socket.getfqdn(), bound.port)
        return bound

    def _announce(self, state: ServerState, listener: Listener) -> None:
        """``server_started`` (with the status file for the health check), or ``worker_started``."""
        view = state.source.view()
        self.started_fields = fields = dict(
            host=self.host, port=self.port, advertised=str(state.advertised),
            **({"listeners": [str(each) for each in self.bound]} if len(self.bound) > 1 else {}),
            security_protocol=listener.security_protocol, assignor=state.assignor_name,
            isolation=self.config.assignor_isolation, brokers=len(view.brokers), racks=len(view.racks),
            loop=type(asyncio.get_running_loop()).__module__.split(".")[0])
        if self.worker is not None:
            log.info("worker_started", pid=os.getpid(), **fields)
            return
        if self.status_file:
            bound: tuple[str, int] | None = None
            if self._metrics_server:
                host, port = self._metrics_server.host, self.metrics_port
                assert host is not None and port is not None  # set once MetricsServer.start returned
                bound = (host, port)
            assert state.listener is not None
            write_status(self.status_file, state.listener, bound, self.config.bootstrap_servers)
        log.info("server_started", **fields)

    def _health(self) -> tuple[bool, dict[str, Any]]:
        state = self.state
        healthy = self.started.is_set() and state is not None and not state.stopping
        details = {"listener": str(state.listener) if state else None,
                   "connections": len(state.connections) if state else 0}
        if state is not None:  # a cluster view that is stale or empty: not healthy (kafka_replica_assignor.server.health)
            cluster_healthy, details["cluster"] = state.source.health()
            healthy = healthy and cluster_healthy
        return healthy, details

    def install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop, sig)

    def request_stop(self, sig: int | None = None) -> None:
        self._stop.set()  # first: stopping must not depend on the log being writable
        if sig is not None:
            log.info("signal_received", signal=signal.Signals(sig).name)

    async def serve(self) -> None:
        if not self.started.is_set():
            await self.start()
        await self._stop.wait()
        await self.shutdown()

    async def shutdown(self) -> None:
        """Stop accepting; let in-flight requests finish and their answers go out within
        ``shutdown.timeout.ms``; then close what is left and stop the parts."""
        state = self.state
        if state is None or state.stopping:
            return
        state.stopping = True
        if self.status_file:
            remove_status(self.status_file)
        for server in self._servers:
            server.close()
        loop = asyncio.get_running_loop()
        timeout = self.config.shutdown_timeout_ms / 1000.0
        deadline = loop.time() + timeout
        pending = [t for t in state.tasks if not t.done()]
        if pending:
            done, not_done = await asyncio.wait(pending, timeout=timeout)
            for t in not_done:
                t.cancel()
        await asyncio.sleep(0)  # let completion callbacks write their responses
        await self._close_connections(state, deadline)
        for server in self._servers:
            try:
                await asyncio.wait_for(server.wait_closed(), max(deadline - loop.time(), 0.1))
            except TimeoutError:
                pass
        if self._metrics_server is not None:
            await self._metrics_server.stop()
        await state.source.stop()
        state.executor.shutdown(wait=False, cancel_futures=True)
        log.info("server_stopped" if self.worker is None else "worker_stopped", port=self.port,
                 unfinished=len([t for t in state.tasks if not t.done()]))

    async def _close_connections(self, state: ServerState, deadline: float) -> None:
        """Close every connection and wait (for the state's event, no polling) until they are
        gone or ``deadline``; abort the rest. Every answer handed to a transport goes out whole:
        close() writes what is buffered first, and connection_lost (which takes the connection
        out of the state) comes after; connections still waiting for their turn are refused."""
        state.connection_rate.refuse_all()
        for conn in list(state.connections):
            conn.close()
        if state.connections:
            remaining = max(deadline - asyncio.get_running_loop().time(), 0.0)
            try:
                await asyncio.wait_for(state.no_connections.wait(), remaining)
            except TimeoutError:
                pass
        if state.connections:
            log.warning("connections_aborted", connections=len(state.connections),
                        unsent_bytes=sum(c.transport.get_write_buffer_size() for c in state.connections
                                         if c.transport is not None),
                        shutdown_timeout_ms=self.config.shutdown_timeout_ms)
            for conn in list(state.connections):
                if conn.transport is not None:
                    conn.transport.abort()
