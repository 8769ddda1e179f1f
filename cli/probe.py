"""What is listening at an address, guessed after a client failed to talk to it.

A plaintext client meeting a TLS or SASL listener, or a Kafka client meeting a replica
assignor server (and the other way round), gets errors that do not say so: "closed the
connection", a timeout, "IncompatibleBrokerVersion". :func:`explain_failure` asks the address
a few short questions and, when the answer is clear, turns the error into one line that names
what the address probably is and what to set. Only after a failure: a working command never
pays for it.
"""

from __future__ import annotations

import argparse
import socket
import ssl
from typing import TYPE_CHECKING

from kafka_replica_assignor.server.exit_codes import EXIT_USAGE

from .common import CommandError, error_message, exit_code

if TYPE_CHECKING:
    from kafka_replica_assignor.protocol.client_config import SecurityOptions

#: seconds each question may take
PROBE_TIMEOUT_S = 3.0

TLS, SASL, ASSIGNOR, KAFKA = "tls", "sasl", "assignor", "kafka"


def probe(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """``"tls"``, ``"sasl"``, ``"assignor"``, ``"kafka"`` or None (unknown) for the first
    ``HOST:PORT`` of ``address``, asked in plaintext."""
    import kafka.errors as kafka_errors

    from kafka_replica_assignor.protocol.client import NotAReplicaAssignorError, ReplicaAssignorAdminClient

    first = address.split(",")[0].strip()
    client = ReplicaAssignorAdminClient(first, request_timeout_ms=int(timeout_s * 1000))
    try:
        try:
            client.metadata_brokers()  # ApiVersions, then Metadata
        except NotAReplicaAssignorError:
            return KAFKA  # it answered ApiVersions like a Kafka broker
        except kafka_errors.KafkaTimeoutError:
            return None  # silent: neither a TLS nor a SASL listener (both answer at once)
        except (kafka_errors.KafkaError, OSError):
            if client.api_version is not None:
                return SASL  # ApiVersions answered, Metadata refused: it waits for SASL first
            return TLS if _speaks_tls(first, timeout_s) else None
        return ASSIGNOR
    finally:
        client.close()


def _speaks_tls(address: str, timeout_s: float) -> bool:
    host, _, port = address.rpartition(":")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # a question, not a connection: any certificate answers it
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s) as raw, \
                context.wrap_socket(raw, server_hostname=host.strip("[]") or None):
            return True
    except (OSError, ValueError):
        return False


def explain_failure(exc: Exception, address: str, security: SecurityOptions | None, *,
                    expect: str, config_flag: str = "--command-config") -> Exception:
    """``exc``, or a :class:`CommandError` naming what ``address`` probably is when a
    plaintext client (``security``) failed there. ``expect`` is ``"kafka"`` or ``"assignor"``:
    what the command needs at that address."""
    if not worth_probing(exc):
        return exc
    plaintext = security is None or not (security.uses_tls or security.uses_sasl)
    kind = probe(address)
    line = error_message(exc)
    if kind == ASSIGNOR and expect == KAFKA:
        return CommandError(f"{address} is a replica assignor server, not a Kafka broker: give the Kafka "
                            "cluster's address", EXIT_USAGE)
    if kind == KAFKA and expect == ASSIGNOR:
        return CommandError(f"{address} is a Kafka broker, not a replica assignor server: give the address "
                            "of replica-assignor-server", EXIT_USAGE)
    if plaintext and kind == TLS:
        return CommandError(f"{line}: {address} speaks TLS, so it is probably an SSL or SASL_SSL listener: set "
                            f"security.protocol (and ssl.truststore.location) in {config_flag}", exit_code(exc))
    if plaintext and kind == SASL:
        return CommandError(f"{line}: {address} answered ApiVersions, then closed the connection: it is "
                            "probably a SASL listener: set security.protocol=SASL_PLAINTEXT (or SASL_SSL), "
                            f"sasl.mechanism and sasl.jaas.config in {config_flag}", exit_code(exc))
    return exc


def worth_probing(exc: BaseException) -> bool:
    """Whether ``exc`` is the kind of failure a wrong listener gives: a closed connection, a
    timeout, no usable API version (not a refusal, not bad input)."""
    import kafka.errors as kafka_errors

    from kafka_replica_assignor.protocol.cluster_reader import ClusterReadError

    if isinstance(exc, CommandError) and exit_code(exc) == EXIT_USAGE:
        return False
    text = str(exc).lower()
    if isinstance(exc, (kafka_errors.KafkaTimeoutError, TimeoutError)) or "within" in text:
        return False  # a silent server: asking again would only wait again (TLS and SASL listeners answer)
    if isinstance(exc, (kafka_errors.KafkaConnectionError, kafka_errors.IncompatibleBrokerVersion,
                        kafka_errors.UnrecognizedBrokerVersion, ConnectionError)):
        return True
    if isinstance(exc, (ClusterReadError, CommandError, kafka_errors.KafkaError)):
        return any(word in text for word in ("closed the connection", "timed out", "timeout", "does not exist on",
                                              "incompatiblebrokerversion", "cannot connect",
                                              "nobrokersavailable", "unrecognizedbrokerversion"))
    return False


def explain_topics_failure(exc: Exception, args: argparse.Namespace) -> Exception:
    """:func:`explain_failure` for create-topic and add-partitions: the error names the
    assignor's address when it came from there, else it came from the Kafka cluster."""
    if not worth_probing(exc):
        return exc
    from .common import security_options

    if args.assignor in str(exc) and args.bootstrap_server not in str(exc):
        return explain_failure(exc, args.assignor, security_options(args.assignor_command_config),
                               expect=ASSIGNOR, config_flag="--assignor-command-config")
    return explain_failure(exc, args.bootstrap_server, security_options(args.command_config), expect=KAFKA)
