"""``replica-assignor-server --health-check``: exit 0 when the configured server answers.

The container's HEALTHCHECK runs it with the same ``--config``/``--override`` arguments
as the server. With ``metrics.listener`` set it asks ``GET /health`` there (200 while the
server serves, 503 while it shuts down); otherwise it sends ApiVersions to the Kafka
listener (over TLS on SSL listeners; ApiVersions needs no SASL authentication) and
expects an answer that offers CreateReplicaAssignment. A listener bound to a wildcard
address is checked on loopback. On an SSL listener with ``ssl.client.auth=required`` the
check presents the server's own keystore, which works only if the truststore accepts it
as a client certificate (its CA, and a key usage that allows client authentication);
otherwise set ``metrics.listener`` and the HTTP check is used.

The status file (``--status-file PATH`` on both the server and the check) records what the
server actually bound, and the live cluster it follows (its ``bootstrap.servers``, or none),
written atomically once it serves and removed when it stops: the check then probes that
listener (and metrics address) and that cluster rather than the configured ones, so overrides
the check was not given (a container's CMD arguments, ``--override bootstrap.servers=...``) and
port 0 are seen too. With a status file named but absent, the server is not serving: unhealthy.
Without a status file the check knows only its own arguments: give it the server's.

A server following a live cluster (``bootstrap.servers``) is healthy only while that cluster
answers with at least one alive broker: its placements would otherwise rest on a stale or
empty view. ``/health`` answers 503 with the reason (``"cluster"``) as the server's own source
sees it (:meth:`kafka_replica_assignor.server.cluster_source.LiveClusterSource.health`, which also logs every change as
``cluster_health_changed``); the check over the Kafka listener, which cannot ask the server
that, reads the cluster the server follows itself (DescribeCluster, as the server does) after
ApiVersions: the one the status file names, else its own ``bootstrap.servers``.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import struct
import urllib.error
import urllib.request

from kafka_replica_assignor.protocol.frame import recv_exactly
from kafka_replica_assignor.protocol.messages import CREATE_REPLICA_ASSIGNMENT_API_KEY

from .config import Listener, ServerConfig, metrics_address

_LEN = struct.Struct(">i")
_WILDCARDS = {"0.0.0.0", "::", ""}


def _local(host: str) -> str:
    return "127.0.0.1" if host in _WILDCARDS else host


def write_status(path: str, listener: Listener, metrics: tuple[str, int] | None, follows: str | None) -> None:
    """Record the bound listener (and metrics address) and the live cluster the server follows
    (``bootstrap.servers``; None: a snapshot) for the health check, atomically."""
    status = {"listener": str(listener), "metrics": list(metrics) if metrics else None, "follows": follows,
              "pid": os.getpid()}
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump(status, out)
    os.replace(tmp, path)


def remove_status(path: str) -> None:
    """The server no longer serves: the health check must say so."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _read_status(path: str) -> tuple[Listener, tuple[str, int] | None, str | None] | str:
    """The recorded listener, metrics address and followed cluster, or one line saying why
    there are none."""
    try:
        with open(path, encoding="utf-8") as f:
            status = json.load(f)
        listener = Listener.parse(status["listener"])
        metrics = status.get("metrics")
        follows = status.get("follows")
        if follows is not None and not isinstance(follows, str):
            raise ValueError(f"'follows' is not a bootstrap address: {follows!r}")
        return listener, (str(metrics[0]), int(metrics[1])) if metrics else None, follows
    except FileNotFoundError:
        return f"unhealthy: not serving (no status file {path})"
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        return f"unhealthy: unreadable status file {path}: {exc}"


def check(config: ServerConfig, timeout_s: float = 5.0, status_file: str | None = None) -> tuple[bool, str]:
    """(healthy, one line saying why)."""
    at = metrics_address(config)
    listener = config.listeners[0]
    follows = config.bootstrap_servers
    if status_file:
        status = _read_status(status_file)
        if isinstance(status, str):
            return False, status
        listener, at, follows = status
    if at is not None:
        host, port = _local(at[0]), at[1]
        url = f"http://{host if ':' not in host else f'[{host}]'}:{port}/health"
        try:
            with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 - our own URL
                return True, f"healthy: {url} answered {response.status} {json.loads(response.read())}"
        except urllib.error.HTTPError as exc:
            return False, f"unhealthy: {url} answered {exc.code}{_reason(exc)}"
        except (OSError, ValueError) as exc:
            return False, f"unhealthy: {url}: {exc}"
    healthy, line = _check_kafka(config, listener, timeout_s)
    if not healthy or not follows:
        return healthy, line
    cluster_healthy, why = check_live_cluster(follows, timeout_s)
    if not cluster_healthy:
        return False, f"unhealthy: {line.removeprefix('healthy: ')}, but {why}"
    return True, f"{line}; {why}"


def _reason(exc: urllib.error.HTTPError) -> str:
    """``: <why>`` from a 503 answer's JSON body (its ``cluster`` entry), or nothing."""
    try:
        body = json.loads(exc.read())
    except (OSError, ValueError):
        return ""
    why = body.get("cluster") if isinstance(body, dict) else None
    return f": {why}" if why else ""


def check_live_cluster(bootstrap_servers: str, timeout_s: float) -> tuple[bool, str]:
    """Whether the live cluster answers DescribeCluster with an alive broker, and one line why."""
    from kafka_replica_assignor.protocol.cluster_reader import open_admin_client, read_cluster

    try:
        admin = open_admin_client(bootstrap_servers, int(timeout_s * 1000), {"client_id": "health-check"})
    except Exception as exc:  # noqa: BLE001 - any failure to connect is the answer
        return False, f"the live cluster {bootstrap_servers} is unreachable: {_named(exc)}"
    try:
        read = read_cluster(admin, include_topics=False)
    except Exception as exc:  # noqa: BLE001 - a failed read is the answer
        return False, f"the live cluster {bootstrap_servers} did not answer: {_named(exc)}"
    finally:
        admin.close()
    alive = [b.id for b in read.snapshot.brokers if b.alive]
    if not alive:
        return False, f"the live cluster {bootstrap_servers} has no alive broker"
    return True, f"the live cluster {bootstrap_servers} answered with {len(alive)} alive broker(s)"


def _named(exc: Exception) -> str:
    """``Name: message``, once (kafka-python's messages often start with their name already)."""
    name, text = type(exc).__name__, str(exc).strip()
    return text if text.startswith(f"{name}:") else f"{name}: {text}"


def _check_kafka(config: ServerConfig, listener: Listener, timeout_s: float) -> tuple[bool, str]:
    from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

    if listener.port == 0:
        return False, "cannot check a listener on port 0: set a fixed port or metrics.listener"
    host = _local(listener.host)
    where = f"{listener.security_protocol}://{host}:{listener.port}"
    request = ApiVersionsRequest(version=0)
    request.with_header(correlation_id=1, client_id="health-check")
    try:
        with socket.create_connection((host, listener.port), timeout=timeout_s) as raw:
            sock = raw
            if listener.uses_tls:
                ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE  # liveness, not identity
                if config.ssl_client_auth != "none" and config.ssl_keystore_location:
                    ctx.load_cert_chain(config.ssl_keystore_location, password=config.ssl_key_password)
                sock = ctx.wrap_socket(raw, server_hostname=host)
            sock.sendall(request.encode(header=True, framed=True))
            size = _LEN.unpack(recv_exactly(sock, 4))[0]
            payload = recv_exactly(sock, size)
    except (OSError, ssl.SSLError) as exc:
        return False, f"unhealthy: {where}: {exc}"
    try:
        response = ApiVersionsResponse.decode(payload[4:], version=0)
    except Exception as exc:  # noqa: BLE001
        return False, f"unhealthy: {where} sent an undecodable ApiVersions response: {exc}"
    keys = {k.api_key for k in response.api_keys}
    if response.error_code or CREATE_REPLICA_ASSIGNMENT_API_KEY not in keys:
        return False, f"unhealthy: {where} answered error {response.error_code} without CreateReplicaAssignment"
    return True, f"healthy: {where} answered ApiVersions"
