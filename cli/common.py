"""Helpers shared by the subcommands: connection options, exit codes, one-line errors, JSON
output, Kafka's plan formats."""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kafka_replica_assignor.planner.request import whole_number
from kafka_replica_assignor.server.exit_codes import EXIT_FAILURE, EXIT_USAGE

if TYPE_CHECKING:
    from kafka_replica_assignor.protocol.client_config import SecurityOptions

EXIT_CODES = ("exit codes: 0 ok; 1 the operation failed (unreachable server or cluster, failed "
              "authentication, a refused request); 2 bad input or configuration (arguments, files, "
              "--command-config)")
DEFAULT_TIMEOUT_MS = 15_000
#: Kafka's limits: broker ids and partition counts are int32, replication factors int16
INT32_MAX, INT16_MAX = 2**31 - 1, 2**15 - 1


class CommandError(Exception):
    """Bad input or a refused request: printed as one line on stderr, exit code ``code``."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def error_message(exc: BaseException) -> str:
    """One line for ``exc``: its own message, without the exception name kafka-python's
    errors put in front of it (``[Error 58] SaslAuthenticationFailedError: ...``)."""
    import kafka.errors as kafka_errors

    text = str(exc.args[0]) if isinstance(exc, kafka_errors.KafkaError) and exc.args else str(exc)
    text = text.strip()
    if isinstance(exc, kafka_errors.KafkaError):
        text = re.sub(r"^(\[Error -?\d+\] )?\w+(Error|Exception|Failed|Unavailable)\w*: ", "", text)
        if isinstance(exc, kafka_errors.SaslAuthenticationFailedError):
            if "authentication failed" not in text.lower():
                text = f"authentication failed: {text}" if text else "authentication failed"
        elif isinstance(exc, kafka_errors.BrokerResponseError):  # an error code in an answer: name it once
            code = f" ({exc.errno})" if isinstance(getattr(exc, "errno", None), int) else ""
            text = f"{type(exc).__name__}{code}: {text}" if text else f"{type(exc).__name__}{code}"
        if not text:
            text = type(exc).__name__
    lines = text.splitlines()
    return lines[0] if lines else type(exc).__name__


def exit_code(exc: BaseException, default: int = EXIT_FAILURE) -> int:
    """2 for bad input or configuration, the code a :class:`CommandError` carries, else ``default``."""
    from kafka_replica_assignor.protocol.client_config import ClientConfigError

    if isinstance(exc, CommandError):
        return exc.code
    if isinstance(exc, ClientConfigError):
        return EXIT_USAGE
    return default


def fail(prog: str, exc: BaseException, code: int = EXIT_FAILURE) -> int:
    print(f"{prog}: error: {error_message(exc)}", file=sys.stderr)
    return exit_code(exc, code)


def help_text(doc: str | None) -> str:
    """A module docstring as ``--help`` text: reStructuredText's double backticks and roles dropped."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"\1", doc or "")
    return text.replace("``", "")


def positive(text: str) -> int:
    """An argument type: a whole number of at least 1."""
    return whole_number(text, 1)


def bounded(least: int, most: int, what: str) -> Callable[[str], int]:
    """An argument type: a whole number in ``[least, most]`` (Kafka's field ``what``)."""
    def parse(text: str) -> int:
        value = whole_number(text, least)
        if value > most:
            raise argparse.ArgumentTypeError(f"must be <= {most} ({what}), got {value}")
        return value
    parse.__name__ = "number"  # argparse names the type in its messages
    return parse


def broker_ids(text: str, flag: str) -> list[int]:
    """A comma-separated list of broker ids (int32 >= 0), none twice; bad input exits 2."""
    items = [x.strip() for x in text.split(",")]
    if not text.strip() or not all(items):
        raise CommandError(f"{flag} must be comma-separated broker ids, got {text!r}", EXIT_USAGE)
    ids = []
    for item in items:
        try:
            value = int(item)
        except ValueError:
            raise CommandError(f"{flag} must be comma-separated broker ids, got {item!r}", EXIT_USAGE) from None
        if not 0 <= value <= INT32_MAX:
            raise CommandError(f"{flag}: broker id {value} is not in 0..{INT32_MAX} (Kafka ids are int32)",
                               EXIT_USAGE)
        ids.append(value)
    if len(set(ids)) != len(ids):
        raise CommandError(f"{flag} names a broker twice: {text!r}", EXIT_USAGE)
    return ids


def check_regular_file(path: str, what: str) -> None:
    """Refuse (exit 2) a path that is missing, a directory, a FIFO or a device: reading one of
    those would fail later, or block forever."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise CommandError(f"cannot read {what} {path}: {exc.strerror or exc}", EXIT_USAGE) from None
    if stat.S_ISDIR(mode):
        raise CommandError(f"cannot read {what} {path}: it is a directory", EXIT_USAGE)
    if not stat.S_ISREG(mode):
        raise CommandError(f"cannot read {what} {path}: not a regular file", EXIT_USAGE)


def check_output_file(path: str, flag: str) -> None:
    """Refuse (exit 2) an output path that cannot be written: empty, a directory, or in a
    directory that does not exist or cannot be written (checked before any work is done)."""
    if not path:
        raise CommandError(f"{flag} must name a file, got ''", EXIT_USAGE)
    if os.path.isdir(path):
        raise CommandError(f"{flag} {path} is a directory", EXIT_USAGE)
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise CommandError(f"{flag} {path}: no such directory {parent}", EXIT_USAGE)
    check_writable_dir(parent, f"{flag} {path}: directory")


def check_writable_dir(path: str, what: str) -> None:
    """Refuse (exit 2) a directory in which no file can be created: it is tried, with a file
    removed at once (permission bits do not tell root, nor a read-only file system)."""
    import tempfile

    try:
        fd, probe = tempfile.mkstemp(prefix=".write-check-", dir=path)
    except OSError as exc:
        raise CommandError(f"{what} {path} is not writable: {exc.strerror or exc}", EXIT_USAGE) from None
    os.close(fd)
    os.unlink(probe)


def timeout_ms(text: str) -> int:
    """``--timeout-ms``: a positive number of milliseconds."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of milliseconds: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0 milliseconds, got {value}")
    if value > INT32_MAX:
        raise argparse.ArgumentTypeError(f"must be <= {INT32_MAX} milliseconds (int32, as Kafka's timeouts), "
                                         f"got {value}")
    return value


def host_port(text: str) -> str:
    """``--bootstrap-server``: ``HOST:PORT``, or several separated by commas."""
    for entry in text.split(","):
        host, sep, port = entry.strip().rpartition(":")
        if not sep or not host.strip("[]") or not port.isdigit() or not 0 < int(port) < 65536:
            raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {entry.strip()!r}")
    return text


def listener(text: str) -> str:
    """A listener of our own (``--metrics-listener``): one ``HOST:PORT``, port 0 for any free port."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host.strip("[]") or not port.isdigit() or not 0 <= int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT (port 0: any free port), got {text.strip()!r}")
    return text.strip()


def add_connection_arguments(parser: argparse.ArgumentParser, *, what: str = "the server",
                             config_flag: str = "--command-config", timeout: bool = True) -> None:
    """``--command-config FILE`` (Kafka client properties) and ``--timeout-ms``."""
    parser.add_argument(config_flag, metavar="FILE", dest=config_flag.lstrip("-").replace("-", "_"),
                        help=f"Kafka client properties for connecting to {what}: security.protocol, "
                             "sasl.mechanism, sasl.jaas.config, ssl.truststore.location, "
                             "ssl.keystore.location, ssl.key.password (PEM files), "
                             "ssl.endpoint.identification.algorithm")
    if timeout:
        parser.add_argument("--timeout-ms", type=timeout_ms, default=DEFAULT_TIMEOUT_MS, metavar="MS",
                            help=f"give up connecting or waiting for an answer after this long "
                                 f"(default {DEFAULT_TIMEOUT_MS})")


def security_options(path: str | None) -> SecurityOptions:
    """The :class:`SecurityOptions` of a ``--command-config`` file (exit 2 when it is bad)."""
    from kafka_replica_assignor.protocol.client_config import ClientConfigError, SecurityOptions

    if path is not None and os.path.exists(path):  # a missing file: from_file says so
        check_regular_file(path, "--command-config")
    try:
        options = SecurityOptions.from_file(path)
    except ClientConfigError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None
    if options.uses_tls:
        check_tls_files(options, path)
    return options


def check_tls_files(options: SecurityOptions, config: str | None) -> None:
    """The PEM files a TLS client loads, loaded now: a missing or unreadable file is bad
    configuration (exit 2) naming the property and the file, not a failed handshake later."""
    import ssl

    where = f" (--command-config {config})" if config else ""
    for prop, file in (("ssl.truststore.location", options.ssl_cafile),
                       ("ssl.keystore.location", options.ssl_certfile)):
        if file:
            check_regular_file(file, f"{prop}{where}")
    try:
        options.ssl_context()
    except ssl.SSLError as exc:
        raise CommandError(f"cannot load the TLS files of {config or 'the client configuration'}: "
                           f"{exc.reason or exc} (ssl.truststore.location {options.ssl_cafile}, "
                           f"ssl.keystore.location {options.ssl_certfile})", EXIT_USAGE) from None
    except (OSError, ValueError) as exc:
        raise CommandError(f"cannot load the TLS files of {config or 'the client configuration'}: "
                           f"{getattr(exc, 'strerror', None) or exc}", EXIT_USAGE) from None


def kafka_admin_configs(security: SecurityOptions, client_id: str) -> dict[str, Any]:
    """kafka-python ``KafkaAdminClient`` settings for a Kafka cluster."""
    return {"client_id": client_id, **security.kafka_configs()}


def read_json(path: str, what: str) -> Any:
    check_regular_file(path, what)
    try:
        with open(path, "rb") as f:
            return json.loads(f.read())
    except OSError as exc:
        raise CommandError(f"cannot read {what} {path}: {exc.strerror or exc}", 2) from None
    except UnicodeDecodeError as exc:
        raise CommandError(f"{what} {path} is not valid JSON: not UTF-8 text ({exc.reason} at byte {exc.start})",
                           2) from None
    except json.JSONDecodeError as exc:
        raise CommandError(f"{what} {path} is not valid JSON: {exc}", 2) from None
    except RecursionError:
        raise CommandError(f"{what} {path} is not usable JSON: nested too deeply", 2) from None


def reassignment_json(topic: str, assignment: Mapping[int, Iterable[int]]) -> dict[str, Any]:
    """Kafka's reassignment JSON v1, as kafka-reassign-partitions.sh --execute reads it."""
    return {"version": 1, "partitions": [
        {"topic": topic, "partition": p, "replicas": list(r)} for p, r in sorted(assignment.items())]}


def current_assignment_from_reassignment(data: Any, topic: str | None) -> tuple[str, dict[int, list[int]]]:
    """A topic's assignment from Kafka reassignment JSON (``--current-assignment FILE``)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("partitions"), list):
        raise CommandError("current assignment must be Kafka reassignment JSON with a 'partitions' list", 2)
    topics = {p.get("topic") for p in data["partitions"] if isinstance(p, Mapping)}
    if topic is None:
        if len(topics) != 1:
            raise CommandError(f"current assignment holds topics {sorted(map(str, topics))}: name one with --topic", 2)
        only = topics.pop()
        if not isinstance(only, str):
            raise CommandError("current assignment partitions need a 'topic' name", 2)
        topic = only
    out: dict[int, list[int]] = {}
    for i, p in enumerate(data["partitions"]):
        if not isinstance(p, Mapping) or p.get("topic") != topic:
            continue
        part, reps = p.get("partition"), p.get("replicas")
        if not isinstance(part, int) or not isinstance(reps, list) or not all(isinstance(b, int) for b in reps):
            raise CommandError(f"current assignment partitions[{i}] needs an integer 'partition' and 'replicas'", 2)
        out[part] = reps
    if not out:
        raise CommandError(f"current assignment has no partitions of topic {topic!r}", 2)
    return topic, out


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=None, separators=(",", ":")) + "\n")
