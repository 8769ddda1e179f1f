"""The server object: owns start-up, serving, and a bounded graceful shutdown."""

from __future__ import annotations

import asyncio
import signal
from concurrent.futures import ThreadPoolExecutor

import structlog

from assignors import create_assignor

from .cluster import create_source
from .config import Listener, ServerConfig
from .connection import KafkaConnection
from .dispatch import supported_versions
from .handlers import api_versions, metadata
from .state import ServerState

log = structlog.get_logger("replica_assignor")


class ReplicaAssignorServer:
    """``await start()`` binds and logs ``server_started``; ``await serve()`` runs until
    :meth:`request_stop` (or SIGTERM/SIGINT with :meth:`install_signal_handlers`), then
    shuts down: stop accepting, let in-flight requests finish within
    ``shutdown.timeout.ms``, close connections."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.state: ServerState | None = None
        self.started = asyncio.Event()
        self._stop = asyncio.Event()
        self._servers: list[asyncio.base_events.Server] = []
        self.host: str | None = None
        self.port: int | None = None

    async def start(self) -> None:
        cfg = self.config
        assignor = create_assignor(cfg.replica_assignor_class_name)
        source = create_source(cfg)
        await source.start()
        listener = cfg.listeners[0]
        executor = ThreadPoolExecutor(max_workers=cfg.assignor_max_workers, thread_name_prefix="assignor")
        self.state = state = ServerState(
            config=cfg, assignor=assignor, assignor_name=cfg.replica_assignor_class_name,
            source=source, executor=executor, advertised=listener,
        )
        placer = getattr(source, "placer", None)
        if placer is not None:
            state.placer = placer  # type: ignore[attr-defined]
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: KafkaConnection(state), listener.host, listener.port,
                                          reuse_address=True, backlog=1024)
        self._servers.append(server)
        sock = server.sockets[0].getsockname()
        self.host, self.port = sock[0], sock[1]
        if cfg.advertised_listeners:
            adv = cfg.advertised_listeners[0]
            state.advertised = Listener(adv.security_protocol, adv.host, adv.port or self.port)
        else:
            state.advertised = Listener(listener.security_protocol, self.host, self.port)
        for v, data in api_versions.build_templates(supported_versions()).items():
            state.templates[(api_versions.API_KEY, v)] = data
        for v, data in metadata.build_templates(state).items():
            state.templates[(metadata.API_KEY, v)] = data
        view = source.view()
        log.info("server_started", host=self.host, port=self.port, advertised=str(state.advertised),
                 assignor=state.assignor_name, brokers=len(view.brokers), racks=len(view.racks),
                 loop=type(loop).__module__.split(".")[0])
        self.started.set()

    def install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop, sig)

    def request_stop(self, sig: int | None = None) -> None:
        if sig is not None:
            log.info("signal_received", signal=signal.Signals(sig).name)
        self._stop.set()

    async def serve(self) -> None:
        if not self.started.is_set():
            await self.start()
        await self._stop.wait()
        await self.shutdown()

    async def shutdown(self) -> None:
        state = self.state
        if state is None or state.stopping:
            return
        state.stopping = True
        for server in self._servers:
            server.close()
        timeout = self.config.shutdown_timeout_ms / 1000.0
        pending = [t for t in state.tasks if not t.done()]
        if pending:
            done, not_done = await asyncio.wait(pending, timeout=timeout)
            for t in not_done:
                t.cancel()
        await asyncio.sleep(0)  # let completion callbacks write their responses
        for conn in list(state.connections):
            conn.close()
        for server in self._servers:
            try:
                await asyncio.wait_for(server.wait_closed(), timeout)
            except asyncio.TimeoutError:
                pass
        await state.source.stop()
        state.executor.shutdown(wait=False, cancel_futures=True)
        log.info("server_stopped", port=self.port, unfinished=len([t for t in state.tasks if not t.done()]))
