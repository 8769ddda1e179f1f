"""``replica-assignor-server --config FILE [--override key=value ...] [--loop uvloop|asyncio]``."""

from __future__ import annotations

import argparse
import sys

from kafka_replica_assignor.assignors import UnknownAssignorError, load_assignor_class
from kafka_replica_assignor.protocol.version import package_version

from .app import ReplicaAssignorServer
from .config import ConfigError, load_config
from .exit_codes import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from .logs import configure_logging
from .plugin_check import check_constructible
from .runtime import freeze_start_up, run_server


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="replica-assignor-server",
                                description="Kafka-protocol replica assignor server (KIP-879 CreateReplicaAssignment).")
    p.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    p.add_argument("--config", metavar="FILE", help="server.properties (Kafka property style)")
    p.add_argument("--override", metavar="KEY=VALUE", action="append", default=[],
                   help="set one property, over the file (repeatable)")
    p.add_argument("--loop", choices=("uvloop", "asyncio"), help="event loop (overrides event.loop)")
    p.add_argument("--health-check", action="store_true",
                   help="do not serve: check that the server so configured answers (exit 0) or not (exit 1)")
    p.add_argument("--status-file", metavar="FILE",
                   help="the server records the listener it bound here while it serves; with --health-check, "
                        "the listener to probe (absent file: unhealthy)")
    return p


async def _serve(server: ReplicaAssignorServer) -> None:
    await server.start()
    freeze_start_up()
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
        if not args.health_check:
            check_constructible(config.replica_assignor_class_name)
    except (ConfigError, UnknownAssignorError) as exc:
        print(f"replica-assignor-server: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.health_check:
        from .health import check

        healthy, line = check(config, status_file=args.status_file)
        print(line, file=sys.stdout if healthy else sys.stderr)
        return EXIT_OK if healthy else EXIT_FAILURE
    log_stream = configure_logging(config.log_format, config.log_level)
    if config.num_worker_processes > 1:
        from .workers import supervise

        return supervise(config, status_file=args.status_file)
    server = ReplicaAssignorServer(config, status_file=args.status_file, log_stream=log_stream)
    return run_server(server, _serve(server))


if __name__ == "__main__":
    sys.exit(main())
