"""SASL on real sockets, the way Kafka brokers do it: kafka-python's SASL clients
(PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 over SASL_PLAINTEXT and SASL_SSL) bootstrap; the
assignor sees ``User:<name>``; wrong or unknown credentials get Kafka's message after the
failure delay and a closed connection; nothing but ApiVersions and the SASL APIs is
accepted before authentication; SaslHandshake v0's bare tokens work; the users file is
re-read while serving; the authoriser refuses principals not listed."""

from __future__ import annotations

import argparse
import socket
import struct
import time

import kafka.errors as kafka_errors
import pytest
from kafka import KafkaAdminClient
from kafka.net.sasl.scram import ScramClient
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from kafka_replica_assignor.cli import users as users_cli
from kafka_replica_assignor.protocol.errors import ReplicaAssignorFailedError
from kafka_replica_assignor.protocol.messages import CreateReplicaAssignmentRequest
from kafka_replica_assignor.protocol.secure_client import SecureReplicaAssignorAdminClient, SecurityOptions
from kafka_replica_assignor.server.security.users import read_users_file, scram_credential, write_users_file
from tests.e2e.pki import Pki
from tests.e2e.security_plugins import TRIGGER_PARTITIONS
from tests.servers import ServerProcess, ServerThread, read_frame

ECHO = "tests.e2e.security_plugins.PrincipalEchoAssignor"
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
INVALID = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"
_LEN = struct.Struct(">i")


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki.create(tmp_path_factory.mktemp("pki"))


def _write_users(path):
    write_users_file(path, {name: {m: scram_credential(m, f"{name}-secret", iterations=4096)
                                   for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")} for name in ("alice", "bob")})
    return path


@pytest.fixture
def users_file(tmp_path):
    return _write_users(tmp_path / "users.json")


@pytest.fixture(scope="module")
def shared_users(tmp_path_factory):
    """Read-only: for the servers shared by a module's tests."""
    return _write_users(tmp_path_factory.mktemp("users") / "users.json")


@pytest.fixture(scope="module")
def echo_server(shared_users, pki):
    """SASL_SSL, every mechanism, an assignor that names the principal it receives."""
    with _server("SASL_SSL", shared_users, pki, **{"replica.assignor.class.name": ECHO}) as server:
        yield server


@pytest.fixture(scope="module")
def slow_failures(shared_users):
    """SASL_PLAINTEXT with a failed-authentication delay long enough to measure."""
    with _server("SASL_PLAINTEXT", shared_users, **{"connection.failed.authentication.delay.ms": "300"}) as server:
        yield server


def _server(protocol: str, users_file, pki=None, **extra: str) -> ServerThread:
    props = {"listeners": f"{protocol}://127.0.0.1:0", "sasl.users.file": str(users_file),
             "sasl.enabled.mechanisms": ",".join(MECHANISMS), "replica.assignor.max.workers": "2", **extra}
    if pki is not None:
        props["ssl.keystore.location"] = str(pki.server_keystore)
    return ServerThread(props)


def _client(server, protocol: str, mechanism: str, user: str, password: str, pki=None, **kwargs):
    options = SecurityOptions(security_protocol=protocol, sasl_mechanism=mechanism, sasl_username=user,
                              sasl_password=password, ssl_cafile=str(pki.ca.path) if pki else None)
    return SecureReplicaAssignorAdminClient(server.bootstrap, options, **kwargs)


def _principal_seen(admin) -> str:
    with pytest.raises(ReplicaAssignorFailedError) as refused:
        admin.create_replica_assignment(TRIGGER_PARTITIONS, 3)
    message = str(refused.value)
    return message[message.index("principal=<") + len("principal=<"):message.rindex(">")]


class Wire:
    """A bare socket speaking Kafka frames, for the steps clients never take."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.cid = 0

    def send(self, request, version_header: bool = True) -> int:
        self.cid += 1
        request.with_header(correlation_id=self.cid, client_id="wire")
        self.sock.sendall(request.encode(header=True, framed=True))
        return self.cid

    def send_raw(self, token: bytes) -> None:
        self.sock.sendall(_LEN.pack(len(token)) + token)

    def receive(self) -> bytes:
        return read_frame(self.sock)

    def closed_by_server(self, within: float = 5.0) -> bool:
        self.sock.settimeout(within)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False

    def api_versions(self) -> ApiVersionsResponse:
        self.send(ApiVersionsRequest(version=0))
        return ApiVersionsResponse.decode(self.receive()[4:], version=0)

    def handshake(self, mechanism: str, version: int = 1) -> SaslHandshakeResponse:
        self.send(SaslHandshakeRequest(version=version, mechanism=mechanism))
        return SaslHandshakeResponse.decode(self.receive()[4:], version=version)

    def authenticate(self, token: bytes, version: int = 2) -> SaslAuthenticateResponse:
        self.send(SaslAuthenticateRequest(version=version, auth_bytes=token))
        return SaslAuthenticateResponse.decode(self.receive()[4 + (version >= 2):], version=version)

    def close(self) -> None:
        self.sock.close()


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_sasl_clients_bootstrap(users_file, pki, protocol, mechanism):
    tls = pki if protocol == "SASL_SSL" else None
    with _server(protocol, users_file, tls) as server:
        admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, security_protocol=protocol,
                                 sasl_mechanism=mechanism, sasl_plain_username="alice",
                                 sasl_plain_password="alice-secret", request_timeout_ms=10_000,
                                 **({"ssl_cafile": str(pki.ca.path)} if tls else {}))
        try:
            cluster = admin.describe_cluster()
        finally:
            admin.close()
        assert cluster["cluster_id"] == "replica-assignor"
        assert cluster["brokers"][0]["port"] == server.port


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_the_assignor_sees_the_sasl_user(echo_server, pki, mechanism):
    for user in ("alice", "bob"):
        with _client(echo_server, "SASL_SSL", mechanism, user, f"{user}-secret", pki) as admin:
            assignment = admin.create_replica_assignment(6, 3).assignments()
            assert sorted(assignment) == list(range(6))
            assert _principal_seen(admin) == f"User:{user}"


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("user", ["alice", "nobody"])
def test_bad_credentials_get_kafkas_message_after_the_delay_then_the_connection_closes(
        slow_failures, mechanism, user):
    server = slow_failures
    wire = Wire(server.port)
    try:
        assert wire.handshake(mechanism).error_code == 0
        if mechanism == "PLAIN":
            started = time.monotonic()
            response = wire.authenticate(f"\0{user}\0wrong".encode())
        else:
            scram = ScramClient(user, "wrong", mechanism)
            first = wire.authenticate(scram.first_message())
            assert first.error_code == 0  # an unknown user is not told apart here
            scram.process_server_first_message(first.auth_bytes)
            started = time.monotonic()
            response = wire.authenticate(scram.final_message())
        assert time.monotonic() - started >= 0.28
        assert response.error_code == kafka_errors.SaslAuthenticationFailedError.errno
        expected = ("Authentication failed: Invalid username or password" if mechanism == "PLAIN"
                    else INVALID.format(mechanism))
        assert response.error_message == expected
        assert wire.closed_by_server()
    finally:
        wire.close()
    with _client(server, "SASL_PLAINTEXT", mechanism, "alice", "alice-secret") as good:
        assert sorted(good.create_replica_assignment(3, 2).assignments()) == [0, 1, 2]


def test_unsupported_mechanism_lists_the_enabled_ones_then_closes(users_file):
    with _server("SASL_PLAINTEXT", users_file, **{"sasl.enabled.mechanisms": "SCRAM-SHA-512"}) as server:
        wire = Wire(server.port)
        try:
            response = wire.handshake("PLAIN")
            assert response.error_code == kafka_errors.UnsupportedSaslMechanismError.errno
            assert response.mechanisms == ["SCRAM-SHA-512"]
            assert wire.closed_by_server()
        finally:
            wire.close()


@pytest.mark.parametrize("first", ["Metadata", "CreateReplicaAssignment", "SaslAuthenticate"])
def test_only_api_versions_and_sasl_handshake_are_accepted_before_authentication(users_file, first):
    requests = {
        "Metadata": MetadataRequest(version=1, topics=[]),
        "CreateReplicaAssignment": CreateReplicaAssignmentRequest(
            version=0, num_partitions=3, replication_factor=1, force_simple_assignment=False, node_id=[],
            timeout_ms=1000),
        "SaslAuthenticate": SaslAuthenticateRequest(version=1, auth_bytes=b"\0alice\0alice-secret"),
    }
    with ServerProcess("--override", "listeners=SASL_PLAINTEXT://127.0.0.1:0",
                       "--override", f"sasl.users.file={users_file}") as server:
        wire = Wire(server.port)
        try:
            assert wire.api_versions().error_code == 0
            wire.send(requests[first])
            assert wire.closed_by_server()
        finally:
            wire.close()
        line = server.wait_for_line(lambda r: r.get("reason") == "unexpected request during SASL authentication")
        assert line["event"] == "connection_closed" and line["sasl_state"] == "handshake"
        # and a second ApiVersions is one too many, as on a Kafka broker
        wire = Wire(server.port)
        try:
            wire.api_versions()
            wire.send(ApiVersionsRequest(version=0))
            assert wire.closed_by_server()
        finally:
            wire.close()


def test_frames_before_authentication_are_limited_to_sasl_server_max_receive_size(users_file):
    with _server("SASL_PLAINTEXT", users_file, **{"sasl.server.max.receive.size": "1024"}) as server:
        wire = Wire(server.port)
        try:
            wire.sock.sendall(_LEN.pack(1025) + b"\0" * 1025)
            assert wire.closed_by_server()
        finally:
            wire.close()
        # once authenticated, socket.request.max.bytes applies: a 2 KiB request is fine
        wire = Wire(server.port)
        try:
            assert wire.handshake("PLAIN").error_code == 0
            assert wire.authenticate(b"\0alice\0alice-secret").error_code == 0
            request = MetadataRequest(version=1, topics=[MetadataRequest.MetadataRequestTopic(name="t" * 2000)])
            wire.send(request)
            assert len(wire.receive()) > 2000
        finally:
            wire.close()


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "PLAIN"])
def test_sasl_handshake_v0_exchanges_bare_tokens(users_file, mechanism):
    with _server("SASL_PLAINTEXT", users_file) as server:
        wire = Wire(server.port)
        try:
            assert wire.handshake(mechanism, version=0).error_code == 0
            if mechanism == "PLAIN":
                wire.send_raw(b"\0alice\0alice-secret")
                assert wire.receive() == b""
            else:
                scram = ScramClient("alice", "alice-secret", mechanism)
                wire.send_raw(scram.first_message())
                scram.process_server_first_message(wire.receive())
                wire.send_raw(scram.final_message())
                scram.process_server_final_message(wire.receive())  # raises if the server's proof is wrong
            cid = wire.send(MetadataRequest(version=1, topics=[]))
            assert _LEN.unpack(wire.receive()[:4])[0] == cid
        finally:
            wire.close()
        wire = Wire(server.port)  # a failure in v0 is silent: the connection just closes
        try:
            assert wire.handshake("PLAIN", version=0).error_code == 0
            wire.send_raw(b"\0alice\0wrong")
            assert wire.closed_by_server()
        finally:
            wire.close()


def test_sasl_apis_after_authentication_and_on_plaintext_are_illegal_state(users_file):
    illegal = kafka_errors.IllegalSaslStateError.errno
    with _server("SASL_PLAINTEXT", users_file) as server:
        wire = Wire(server.port)
        try:
            assert wire.handshake("SCRAM-SHA-512").error_code == 0
            scram = ScramClient("bob", "bob-secret", "SCRAM-SHA-512")
            scram.process_server_first_message(wire.authenticate(scram.first_message()).auth_bytes)
            final = wire.authenticate(scram.final_message())
            assert final.error_code == 0 and final.session_lifetime_ms == 0
            scram.process_server_final_message(final.auth_bytes)
            assert wire.handshake("PLAIN").error_code == illegal
            again = wire.authenticate(b"x")
            assert again.error_code == illegal and "after successful authentication" in again.error_message
        finally:
            wire.close()
    with ServerThread() as plain:
        wire = Wire(plain.port)
        try:
            assert {k.api_key for k in wire.api_versions().api_keys} >= {17, 36}
            assert wire.handshake("PLAIN").error_code == illegal
        finally:
            wire.close()


def test_users_file_changes_apply_without_a_restart(users_file):
    with _server("SASL_PLAINTEXT", users_file, **{"replica.assignor.class.name": ECHO}) as server:
        with pytest.raises(kafka_errors.SaslAuthenticationFailedError):
            with _client(server, "SASL_PLAINTEXT", "SCRAM-SHA-256", "carol", "carol-secret") as carol:
                carol.create_replica_assignment(1, 1)
        users = read_users_file(users_file)
        users["carol"] = {"SCRAM-SHA-256": scram_credential("SCRAM-SHA-256", "carol-secret")}
        del users["bob"]
        write_users_file(users_file, users)
        with _client(server, "SASL_PLAINTEXT", "SCRAM-SHA-256", "carol", "carol-secret") as carol:
            assert _principal_seen(carol) == "User:carol"
        with pytest.raises(kafka_errors.SaslAuthenticationFailedError):
            with _client(server, "SASL_PLAINTEXT", "SCRAM-SHA-256", "bob", "bob-secret") as bob:
                bob.create_replica_assignment(1, 1)


def test_authorizer_allows_only_the_listed_principals(users_file):
    with _server("SASL_PLAINTEXT", users_file, **{"authorizer.allowed.principals": "User:alice"}) as server:
        with _client(server, "SASL_PLAINTEXT", "SCRAM-SHA-256", "alice", "alice-secret") as alice:
            assert sorted(alice.create_replica_assignment(4, 2).assignments()) == [0, 1, 2, 3]
        with _client(server, "SASL_PLAINTEXT", "SCRAM-SHA-256", "bob", "bob-secret") as bob:
            with pytest.raises(kafka_errors.ClusterAuthorizationFailedError) as refused:
                bob.create_replica_assignment(4, 2)
            assert refused.value.errno == 31 and "User:bob" in str(refused.value)
            # Metadata and ApiVersions stay open to any authenticated principal
            assert bob.api_version is not None


def _users(*argv: str, stdin: str | None = None, monkeypatch=None) -> int:
    parser = argparse.ArgumentParser()
    users_cli.add_parser(parser.add_subparsers())
    args = parser.parse_args(["users", *argv])
    if stdin is not None:
        import io

        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    return args.run(args)


def test_users_command_writes_credentials_a_kafka_client_can_use(tmp_path, monkeypatch, capsys):
    path = tmp_path / "users.json"
    assert _users("add", "--file", str(path), "--user", "dave", "--password-stdin",
                  stdin="dave's pass\n", monkeypatch=monkeypatch) == 0
    assert _users("add", "--file", str(path), "--user", "erin", "--mechanism", "SCRAM-SHA-512",
                  "--password", "erin-pass") == 0
    assert "dave's pass" not in path.read_text()
    capsys.readouterr()
    assert _users("list", "--file", str(path)) == 0
    assert capsys.readouterr().out.strip() == '{"dave": ["SCRAM-SHA-256", "SCRAM-SHA-512"], "erin": ["SCRAM-SHA-512"]}'
    with _server("SASL_PLAINTEXT", path, **{"replica.assignor.class.name": ECHO}) as server:
        admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, security_protocol="SASL_PLAINTEXT",
                                 sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="erin",
                                 sasl_plain_password="erin-pass", request_timeout_ms=10_000)
        admin.close()
        with _client(server, "SASL_PLAINTEXT", "PLAIN", "dave", "dave's pass") as dave:
            assert _principal_seen(dave) == "User:dave"
    assert _users("delete", "--file", str(path), "--user", "dave") == 0
    assert set(read_users_file(path)) == {"erin"}
    assert _users("delete", "--file", str(path), "--user", "dave") == 1
    assert "no user 'dave'" in capsys.readouterr().err
