"""``replica-assignor-server --config FILE [--override key=value ...] [--loop uvloop|asyncio]``."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Coroutine
from typing import Any

from assignors import UnknownAssignorError, load_assignor_class

from .app import ReplicaAssignorServer
from .config import ConfigError, load_config
from .logs import configure_logging


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="replica-assignor-server",
                                description="Kafka-protocol replica assignor server (KIP-879 CreateReplicaAssignment).")
    p.add_argument("--config", metavar="FILE", help="server.properties (Kafka property style)")
    p.add_argument("--override", metavar="KEY=VALUE", action="append", default=[],
                   help="set one property, over the file (repeatable)")
    p.add_argument("--loop", choices=("uvloop", "asyncio"), help="event loop (overrides event.loop)")
    p.add_argument("--health-check", action="store_true",
                   help="do not serve: check that the server so configured answers (exit 0) or not (exit 1)")
    return p


async def _serve(server: ReplicaAssignorServer) -> None:
    await server.start()
    server.install_signal_handlers()
    await server.serve()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    overrides = list(args.override)
    if args.loop:
        overrides.append(f"event.loop={args.loop}")
    try:
        config = load_config(args.config, overrides)
        load_assignor_class(config.replica_assignor_class_name)
    except (ConfigError, UnknownAssignorError) as exc:
        print(f"replica-assignor-server: {exc}", file=sys.stderr)
        return 2
    if args.health_check:
        from .health import check

        healthy, line = check(config)
        print(line, file=sys.stdout if healthy else sys.stderr)
        return 0 if healthy else 1
    configure_logging(config.log_format, config.log_level)
    if config.num_worker_processes > 1:
        from .workers import supervise

        return supervise(config)
    server = ReplicaAssignorServer(config)
    return run_server(server, _serve(server))


def run_server(server: ReplicaAssignorServer, serving: Coroutine[Any, Any, None]) -> int:
    """Run ``serving`` on the configured event loop; the exit code (start-up failures are
    one line on stderr: 2 for the configuration, 1 when the listener cannot be bound)."""
    config = server.config
    try:
        if config.event_loop == "uvloop":
            import uvloop
            uvloop.run(serving)
        else:
            asyncio.run(serving)
    except ConfigError as exc:
        print(f"replica-assignor-server: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"replica-assignor-server: cannot listen on {config.listeners[0]}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
