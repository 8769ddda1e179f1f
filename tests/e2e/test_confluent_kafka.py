"""librdkafka (through confluent-kafka's ``AdminClient``) against the real server on a real
socket, on every kind of listener the server has: PLAINTEXT, SASL_PLAINTEXT (PLAIN,
SCRAM-SHA-256, SCRAM-SHA-512), SSL, SASL_SSL and mutual TLS.

librdkafka is a third client implementation beside kafka-python and aiokafka (tested in
test_kafka_clients.py, test_sasl.py and test_tls.py), written in C from Kafka's protocol
guide: its own ApiVersions negotiation, SASL state machine, SCRAM and TLS code.

Each server advertises ``localhost`` while the client bootstraps from ``127.0.0.1``: both
reach the same socket, but librdkafka names a broker by the address it was given, so the
broker list it reports, and the broker that answered, show that it followed the advertised
listener. The test certificates name both (tests/e2e/pki.py), so librdkafka's default
hostname verification stays on.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient
from structlog.testing import capture_logs

from kafka_replica_assignor.server.security.users import scram_credential, write_users_file
from tests.e2e.pki import Pki
from tests.servers import ServerThread

ADVERTISED_HOST = "localhost"  # bootstrap is 127.0.0.1: a distinct name for the same socket
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
TIMEOUT_S = 10


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki.create(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def users_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("users") / "users.json"
    write_users_file(path, {"alice": {m: scram_credential(m, "alice-secret", iterations=4096)
                                      for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")}})
    return path


def _server(protocol: str, pki: Pki, users_file, *, client_auth: str = "none") -> ServerThread:
    props = {"listeners": f"{protocol}://127.0.0.1:0",
             "advertised.listeners": f"{protocol}://{ADVERTISED_HOST}:0",  # port 0: the bound one
             "replica.assignor.max.workers": "1"}
    if protocol in ("SSL", "SASL_SSL"):
        props |= {"ssl.keystore.location": str(pki.server_keystore),
                  "ssl.truststore.location": str(pki.ca.path), "ssl.client.auth": client_auth}
    if protocol.startswith("SASL_"):
        props |= {"sasl.users.file": str(users_file), "sasl.enabled.mechanisms": ",".join(MECHANISMS)}
    return ServerThread(props)


def _client_config(server: ServerThread, protocol: str, pki: Pki, *, mechanism: str | None = None,
                   password: str = "alice-secret", certificate: bool = False) -> dict:
    config = {"bootstrap.servers": server.bootstrap, "security.protocol": protocol,
              "broker.address.family": "v4",  # localhost is 127.0.0.1 only, wherever ::1 comes first
              "socket.timeout.ms": TIMEOUT_S * 1000, "socket.connection.setup.timeout.ms": TIMEOUT_S * 1000,
              "reconnect.backoff.ms": 50, "log_level": 3}
    if protocol in ("SSL", "SASL_SSL"):
        config |= {"ssl.ca.location": str(pki.ca.path), "ssl.endpoint.identification.algorithm": "https"}
    if certificate:
        config |= {"ssl.certificate.location": str(pki.client_cert), "ssl.key.location": str(pki.client_key)}
    if mechanism is not None:
        config |= {"sasl.mechanism": mechanism, "sasl.username": "alice", "sasl.password": password}
    return config


def _principals(server: ServerThread) -> set[str]:
    """The principals of the server's open connections (the set changes in the server's thread)."""
    while True:
        try:
            return {conn.principal for conn in server.server.state.connections}
        except RuntimeError:  # changed size during iteration: look again
            continue


def _bootstrap(server: ServerThread, protocol: str, config: dict) -> set[str]:
    """Bootstrap librdkafka's admin client, check what it reports, and return the principals
    the server gave its connections. The client is destroyed (its sockets closed) on return."""
    port = server.port
    admin = AdminClient(config)
    try:
        metadata = admin.list_topics(timeout=TIMEOUT_S)
        assert metadata.cluster_id == "replica-assignor"
        assert metadata.controller_id == 0
        assert {i: (b.id, b.host, b.port) for i, b in metadata.brokers.items()} == {0: (0, ADVERTISED_HOST, port)}
        assert metadata.topics == {}
        cluster = admin.describe_cluster(request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
        assert cluster.cluster_id == "replica-assignor"
        assert (cluster.controller.id, cluster.controller.host, cluster.controller.port) == (0, ADVERTISED_HOST, port)
        assert [(n.id, n.host, n.port, n.rack) for n in cluster.nodes] == [(0, ADVERTISED_HOST, port, None)]
        # once it knows the cluster, librdkafka drops the bootstrap broker ("127.0.0.1:<port>/bootstrap")
        # and asks the advertised one, by the name it was given ("[<protocol>://]host:port/<node id>")
        scheme = "" if protocol == "PLAINTEXT" else f"{protocol.lower()}://"
        assert admin.list_topics(timeout=TIMEOUT_S).orig_broker_name == f"{scheme}{ADVERTISED_HOST}:{port}/0"
        principals = _principals(server)
    finally:
        admin = None  # rd_kafka_destroy: closes the client's sockets before the server stops
    deadline = time.monotonic() + TIMEOUT_S
    while server.server.state.connections and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not server.server.state.connections
    return principals


def test_plaintext(pki, users_file):
    with _server("PLAINTEXT", pki, users_file) as server:
        assert _bootstrap(server, "PLAINTEXT", _client_config(server, "PLAINTEXT", pki)) == {"User:ANONYMOUS"}


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_sasl(pki, users_file, protocol, mechanism):
    with _server(protocol, pki, users_file) as server, capture_logs() as logs:
        principals = _bootstrap(server, protocol, _client_config(server, protocol, pki, mechanism=mechanism))
    assert principals == {"User:alice"}
    succeeded = [(e["principal"], e["mechanism"]) for e in logs if e["event"] == "authentication_succeeded"]
    assert succeeded and set(succeeded) == {("User:alice", mechanism)}


def test_ssl(pki, users_file):
    with _server("SSL", pki, users_file) as server:
        assert _bootstrap(server, "SSL", _client_config(server, "SSL", pki)) == {"User:ANONYMOUS"}


def test_mutual_tls(pki, users_file):
    with _server("SSL", pki, users_file, client_auth="required") as server:
        principals = _bootstrap(server, "SSL", _client_config(server, "SSL", pki, certificate=True))
    assert principals == {Pki.CLIENT_PRINCIPAL}


def _first_error(config: dict) -> KafkaError:
    """The first error librdkafka reports (through ``error_cb``) for a client that cannot get in."""
    errors: list[KafkaError] = []
    admin = AdminClient({**config, "error_cb": errors.append})
    try:
        admin.describe_cluster(request_timeout=TIMEOUT_S)  # something to connect for; never answered
        deadline = time.monotonic() + TIMEOUT_S
        while not errors and time.monotonic() < deadline:
            admin.poll(0.05)
    finally:
        admin = None
    assert errors, "librdkafka reported no error"
    return errors[0]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_wrong_password_is_an_authentication_error_with_kafkas_message(pki, users_file, mechanism):
    with _server("SASL_PLAINTEXT", pki, users_file) as server:
        config = _client_config(server, "SASL_PLAINTEXT", pki, mechanism=mechanism, password="wrong")
        error = _first_error(config)
    assert error.code() == KafkaError._AUTHENTICATION, error
    expected = ("Authentication failed: Invalid username or password" if mechanism == "PLAIN" else
                f"Authentication failed during authentication due to invalid credentials with SASL mechanism "
                f"{mechanism}")
    assert expected in error.str()


def test_mutual_tls_without_a_certificate_is_refused(pki, users_file):
    with _server("SSL", pki, users_file, client_auth="required") as server:
        error = _first_error(_client_config(server, "SSL", pki))
    assert error.code() in (KafkaError._SSL, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN), error
