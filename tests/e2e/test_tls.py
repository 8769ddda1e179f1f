"""TLS listeners on a real socket: kafka-python's SSL client bootstraps, our admin client
gets assignments, client certificates are required/requested/ignored as configured, the
assignor sees the certificate's subject as the principal, and a failed handshake costs
nobody else anything. Certificates are generated for the test session (tests/e2e/pki.py)."""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
import time

import kafka.errors as kafka_errors
import pytest
from kafka import KafkaAdminClient

from kafka_replica_assignor.protocol.errors import ReplicaAssignorFailedError
from kafka_replica_assignor.protocol.secure_client import SecureReplicaAssignorAdminClient, SecurityOptions
from tests.e2e.pki import Pki, subject_name
from tests.e2e.security_plugins import TRIGGER_PARTITIONS
from tests.servers import ServerThread

ECHO = "tests.e2e.security_plugins.PrincipalEchoAssignor"


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki.create(tmp_path_factory.mktemp("pki"))


def _tls_server(pki: Pki, client_auth: str = "none", **extra: str) -> ServerThread:
    return ServerThread({"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": str(pki.server_keystore),
                         "ssl.truststore.location": str(pki.ca.path), "ssl.client.auth": client_auth,
                         "replica.assignor.class.name": ECHO, "replica.assignor.max.workers": "1", **extra})


@pytest.fixture(scope="module")
def tls_none(pki):
    with _tls_server(pki, "none") as server:
        yield server


@pytest.fixture(scope="module")
def tls_required(pki):
    with _tls_server(pki, "required") as server:
        yield server


@pytest.fixture(scope="module")
def tls_requested(pki):
    with _tls_server(pki, "requested") as server:
        yield server


def _options(pki: Pki, keystore=None) -> SecurityOptions:
    return SecurityOptions(security_protocol="SSL", ssl_cafile=str(pki.ca.path),
                           ssl_certfile=str(keystore) if keystore else None,
                           ssl_keyfile=str(keystore) if keystore else None)


def _valid(assignment: dict[int, list[int]], n: int, rf: int) -> None:
    assert sorted(assignment) == list(range(n))
    assert all(len(set(r)) == rf and set(r) <= set(range(6)) for r in assignment.values())


def _principal_seen(admin: SecureReplicaAssignorAdminClient) -> str:
    """The principal the assignor received (PrincipalEchoAssignor refuses, naming it)."""
    with pytest.raises(ReplicaAssignorFailedError) as refused:
        admin.create_replica_assignment(TRIGGER_PARTITIONS, 3)
    message = str(refused.value)
    return message[message.index("principal=<") + len("principal=<"):message.rindex(">")]


def test_kafka_python_ssl_client_bootstraps_and_our_client_is_anonymous_without_a_certificate(pki, tls_none):
    server = tls_none
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, security_protocol="SSL",
                             ssl_cafile=str(pki.ca.path), request_timeout_ms=10_000)
    try:
        cluster = admin.describe_cluster()
    finally:
        admin.close()
    assert cluster["cluster_id"] == "replica-assignor"
    assert [(b["host"], b["port"]) for b in cluster["brokers"]] == [("127.0.0.1", server.port)]
    with SecureReplicaAssignorAdminClient(server.bootstrap, _options(pki)) as ours:
        _valid(ours.create_replica_assignment(12, 3).assignments(), 12, 3)
        assert _principal_seen(ours) == "User:ANONYMOUS"


def test_required_client_certificate_becomes_the_principal(pki, tls_required):
    server = tls_required
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, security_protocol="SSL",
                             ssl_cafile=str(pki.ca.path), ssl_certfile=str(pki.client_cert),
                             ssl_keyfile=str(pki.client_key), request_timeout_ms=10_000)
    try:
        assert admin.describe_cluster()["cluster_id"] == "replica-assignor"
    finally:
        admin.close()
    with SecureReplicaAssignorAdminClient(server.bootstrap, _options(pki, pki.client_keystore)) as ours:
        _valid(ours.create_replica_assignment(6, 2).assignments(), 6, 2)
        assert _principal_seen(ours) == Pki.CLIENT_PRINCIPAL


@pytest.mark.parametrize("who", ["no certificate", "certificate from an untrusted CA"])
def test_required_client_certificate_refuses_others_and_keeps_serving(pki, tls_required, who):
    keystore = None if who == "no certificate" else pki.stranger_keystore
    server = tls_required
    with pytest.raises(kafka_errors.KafkaError):
        with SecureReplicaAssignorAdminClient(server.bootstrap, _options(pki, keystore),
                                              request_timeout_ms=5_000) as stranger:
            stranger.create_replica_assignment(3, 1)
    deadline = time.monotonic() + 5
    while server.server.state.connections and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not server.server.state.connections  # the refused one is gone (and was never let in)
    with SecureReplicaAssignorAdminClient(server.bootstrap, _options(pki, pki.client_keystore)) as ours:
        _valid(ours.create_replica_assignment(3, 1).assignments(), 3, 1)


def test_requested_client_certificate_is_optional(pki, tls_requested):
    server = tls_requested
    with SecureReplicaAssignorAdminClient(server.bootstrap, _options(pki)) as anonymous:
        assert _principal_seen(anonymous) == "User:ANONYMOUS"
    with SecureReplicaAssignorAdminClient(server.bootstrap, _options(pki, pki.client_keystore)) as known:
        assert _principal_seen(known) == Pki.CLIENT_PRINCIPAL


def test_client_certificate_is_ignored_when_client_auth_is_none(pki, tls_none):
    with SecureReplicaAssignorAdminClient(tls_none.bootstrap, _options(pki, pki.client_keystore)) as ours:
        assert _principal_seen(ours) == "User:ANONYMOUS"


def test_only_the_enabled_tls_versions_are_offered(pki):
    with _tls_server(pki, **{"ssl.enabled.protocols": "TLSv1.3", "replica.assignor.class.name": "default"}) as server:
        old = ssl.create_default_context(cafile=str(pki.ca.path))
        old.maximum_version = ssl.TLSVersion.TLSv1_2
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw:
            with pytest.raises(ssl.SSLError):
                old.wrap_socket(raw, server_hostname="127.0.0.1")
        new = ssl.create_default_context(cafile=str(pki.ca.path))
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw, \
                new.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            assert tls.version() == "TLSv1.3"


def test_plaintext_client_on_a_tls_listener_fails_fast_and_the_server_keeps_serving(pki, tls_none):
    server = tls_none
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        # an ApiVersions request in the clear: not a TLS record, the handshake fails
        sock.sendall(b"\x00\x00\x00\x0b\x00\x12\x00\x00\x00\x00\x00\x01\xff\xff\x00")
        started = time.monotonic()
        while sock.recv(4096):  # TLS alert, then EOF
            pass
        # refused at once, not left to the handshake timeout (ssl.handshake.timeout.ms, 10 s)
        assert time.monotonic() - started < server.config.ssl_handshake_timeout_ms / 1000 / 4
    with SecureReplicaAssignorAdminClient(server.bootstrap, _options(pki)) as ours:
        _valid(ours.create_replica_assignment(4, 3).assignments(), 4, 3)


def test_encrypted_private_key_with_ssl_key_password(pki, tmp_path):
    keystore, _ = pki.ca.issue(tmp_path, "locked", subject_name(CN="localhost"), server=True, password="k3y-pass")
    with ServerThread({"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": str(keystore),
                       "ssl.key.password": "k3y-pass"}) as server, \
            SecureReplicaAssignorAdminClient(server.bootstrap, _options(pki)) as ours:
        _valid(ours.create_replica_assignment(2, 2).assignments(), 2, 2)


@pytest.mark.parametrize(("overrides", "key"), [
    (["ssl.keystore.location=/nonexistent/server.pem"], "ssl.keystore.location"),
    (["ssl.keystore.location={server}", "ssl.key.password=wrong"], "ssl.keystore.location"),
])
def test_unusable_keystore_fails_start_up_with_one_line(pki, overrides, key):
    args = [sys.executable, "-m", "kafka_replica_assignor.server.main", "--override", "listeners=SSL://127.0.0.1:0"]
    for item in overrides:
        args += ["--override", item.format(server=pki.ca.path)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and key in lines[0]
    assert "server_started" not in proc.stdout
