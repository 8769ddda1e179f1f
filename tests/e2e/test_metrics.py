"""The Prometheus endpoint and the health checks, against a running server: request counts
and latency histograms by API and error code, open connections, refused and closed
connections, authentications, assignment durations; ``/health`` and
``replica-assignor-server --health-check`` (the container's HEALTHCHECK)."""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request

import kafka.errors as kafka_errors
import pytest
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from prometheus_client.parser import text_string_to_metric_families

from kafka_replica_assignor.protocol.client import ReplicaAssignorAdminClient
from kafka_replica_assignor.protocol.secure_client import SecureReplicaAssignorAdminClient, SecurityOptions
from kafka_replica_assignor.server.security.users import scram_credential, write_users_file
from tests.servers import ServerThread

_LEN = struct.Struct(">i")


def _scrape(server) -> dict[tuple[str, tuple], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=5) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _request(sock: socket.socket, request, cid: int) -> bytes:
    request.with_header(correlation_id=cid, client_id="metrics")
    sock.sendall(request.encode(header=True, framed=True))
    buf = b""
    while len(buf) < 4 or len(buf) < 4 + _LEN.unpack_from(buf)[0]:
        chunk = sock.recv(65536)
        assert chunk
        buf += chunk
    return buf[4:]


@pytest.fixture(scope="module")
def server():
    with ServerThread({"metrics.listener": "http://127.0.0.1:0", "max.connections": "6"}) as running:
        yield running


def test_requests_are_counted_and_timed_by_api_and_error_code(server):
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        for cid, version in enumerate([0, 1, 2, 3, 3, 0]):
            _request(sock, ApiVersionsRequest(version=version), cid)
        _request(sock, MetadataRequest(version=1, topics=[]), 10)
        # ApiVersions newer than we speak: the UNSUPPORTED_VERSION fallback (error 35)
        sock.sendall(_LEN.pack(10) + struct.pack(">hhih", 18, 9, 11, 0))
        assert _LEN.unpack_from(sock.recv(4096), 4)[0] == 11
    with ReplicaAssignorAdminClient(server.bootstrap) as admin:
        for _ in range(3):
            admin.create_replica_assignment(6, 3)
        with pytest.raises(kafka_errors.InvalidReplicationFactorError):
            admin.create_replica_assignment(6, 99)
    samples = _scrape(server)

    def count(api: str, code: int) -> float:
        return samples.get(("replica_assignor_requests_total", (("api", api), ("error_code", str(code)))), 0)

    assert count("ApiVersions", 0) >= 6 + 1  # ours, plus the admin client's handshake
    assert count("ApiVersions", 35) >= 1
    assert count("Metadata", 0) >= 1
    assert count("CreateReplicaAssignment", 0) >= 3
    assert count("CreateReplicaAssignment", 38) == 1
    histogram = ("replica_assignor_request_duration_seconds_count",
                 (("api", "CreateReplicaAssignment"), ("error_code", "0")))
    assert samples[histogram] == count("CreateReplicaAssignment", 0)
    assert samples[("replica_assignor_request_duration_seconds_bucket",
                    (("api", "CreateReplicaAssignment"), ("error_code", "0"), ("le", "+Inf")))] == samples[histogram]
    assigned = ("replica_assignor_assignment_duration_seconds_count", (("assignor", "default"), ("error_code", "0")))
    assert samples[assigned] == count("CreateReplicaAssignment", 0)
    assert samples[("replica_assignor_assignment_duration_seconds_count",
                    (("assignor", "default"), ("error_code", "38")))] == 1
    assert samples[("process_resident_memory_bytes", ())] > 10 * 1024 * 1024


def test_memo_lookups_are_counted():
    """Seeded, the same request draws the same numbers: the first is a miss, the rest hits."""
    with ServerThread({"metrics.listener": "http://127.0.0.1:0", "replica.assignor.random.seed": "3"}) as running:
        with ReplicaAssignorAdminClient(running.bootstrap) as client:
            answers = [client.create_replica_assignment(num_partitions=12, replication_factor=3).assignments()
                       for _ in range(5)]
        assert all(a == answers[0] for a in answers)
        samples = _scrape(running)
    assert samples[("replica_assignor_memo_lookups_total", (("result", "miss"),))] == 1
    assert samples[("replica_assignor_memo_lookups_total", (("result", "hit"),))] == 4
    assert samples[("replica_assignor_memo_entries", ())] == 1


def test_the_cluster_the_server_follows(tmp_path):
    """Alive, fenced and offline brokers, refreshes and their failures, the view's age: no
    labels, whatever the cluster. The snapshot here has broker 2 down (offline); a broken file
    is a failed refresh, and the last good view ages (fenced brokers: tests/kafka/test_fencing.py)."""
    snap = tmp_path / "cluster.json"
    snap.write_text(json.dumps({"brokers": [{"id": 0, "rack": "a"}, {"id": 1, "rack": "b"},
                                            {"id": 2, "rack": "c", "alive": False}], "partitions": []}))
    with ServerThread({"metrics.listener": "http://127.0.0.1:0", "cluster.metadata.file": str(snap),
                       "metadata.refresh.interval.ms": "50"}) as running:
        samples = _scrape(running)
        assert {name: samples[(name, ())] for name in CLUSTER_GAUGES} == {
            "replica_assignor_cluster_alive_brokers": 2, "replica_assignor_cluster_fenced_brokers": 0,
            "replica_assignor_cluster_offline_brokers": 1, "replica_assignor_cluster_refresh_failures_total": 0}
        assert samples[("replica_assignor_cluster_refreshes_total", ())] >= 1
        assert 0 <= samples[("replica_assignor_cluster_view_age_seconds", ())] < 5
        assert not [key for key in samples if key[0].startswith("replica_assignor_cluster_") and key[1]]
        snap.write_text("{not json")
        deadline = time.monotonic() + 10
        while _scrape(running)[("replica_assignor_cluster_refresh_failures_total", ())] < 2:
            assert time.monotonic() < deadline, "the failed refreshes were not counted"
            time.sleep(0.05)
        time.sleep(0.3)
        later = _scrape(running)
        assert later[("replica_assignor_cluster_view_age_seconds", ())] >= 0.3
        assert later[("replica_assignor_cluster_alive_brokers", ())] == 2  # the last good view


CLUSTER_GAUGES = ("replica_assignor_cluster_alive_brokers", "replica_assignor_cluster_fenced_brokers",
                  "replica_assignor_cluster_offline_brokers", "replica_assignor_cluster_refresh_failures_total")


def test_connections_gauge_refusals_and_closes(server):
    def gauge() -> float:
        return _scrape(server)[("replica_assignor_connections", ())]

    def settle(expected: float) -> None:
        deadline = time.monotonic() + 5
        while gauge() != expected:
            assert time.monotonic() < deadline, f"connections gauge stays at {gauge()}, expected {expected}"
            time.sleep(0.02)

    base = gauge()
    socks = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(3)]
    try:
        for i, sock in enumerate(socks):
            _request(sock, ApiVersionsRequest(version=0), i)  # each is accepted by now
        assert gauge() == base + 3
        room = 6 - int(base) - 3  # max.connections=6
        extra = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(room)]
        for i, sock in enumerate(extra):
            _request(sock, ApiVersionsRequest(version=0), 20 + i)
        with socket.create_connection(("127.0.0.1", server.port)) as refused:
            refused.settimeout(5)
            try:
                assert refused.recv(1) == b""
            except ConnectionResetError:
                pass
        for sock in extra:
            sock.close()
        settle(base + 3)
        with socket.create_connection(("127.0.0.1", server.port)) as bad:
            bad.sendall(_LEN.pack(10) + struct.pack(">hhih", 99, 0, 1, -1))  # unknown api key
            assert bad.recv(1) == b""
    finally:
        for sock in socks:
            sock.close()
    settle(base)
    samples = _scrape(server)
    assert samples[("replica_assignor_connections_refused_total", (("reason", "max.connections reached"),))] == 1
    assert samples[("replica_assignor_connections_closed_total", (("reason", "unknown api key"),))] == 1


def test_authentications_are_counted(tmp_path):
    users = tmp_path / "users.json"
    write_users_file(users, {"alice": {"SCRAM-SHA-256": scram_credential("SCRAM-SHA-256", "pw")}})
    with ServerThread({"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.users.file": str(users),
                       "connection.failed.authentication.delay.ms": "0",
                       "metrics.listener": "http://127.0.0.1:0"}) as server:
        for password in ("pw", "wrong", "pw"):
            options = SecurityOptions(security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                                      sasl_username="alice", sasl_password=password)
            try:
                with SecureReplicaAssignorAdminClient(server.bootstrap, options) as admin:
                    admin.create_replica_assignment(1, 1)
            except kafka_errors.SaslAuthenticationFailedError:
                assert password == "wrong"
        samples = _scrape(server)
    by_result = {dict(labels)["result"]: value for (name, labels), value in samples.items()
                 if name == "replica_assignor_authentications_total"}
    assert by_result == {"success": 2, "failure": 1}
    assert samples[("replica_assignor_requests_total", (("api", "SaslAuthenticate"), ("error_code", "58")))] == 1


def _handshake(port: int, mechanism: str) -> None:
    name = mechanism.encode()
    request = struct.pack(">hhih", 17, 1, 1, 1) + b"m" + struct.pack(">h", len(name)) + name
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(_LEN.pack(len(request)) + request)
        while sock.recv(65536):  # answered, then closed: an unsupported mechanism fails authentication
            pass


def test_mechanism_names_a_client_makes_up_are_one_unknown_label(tmp_path):
    """Mechanism names are the client's input: each made-up name once became a label of its own
    (2,015 in 20 s grew /metrics to 121 MB). The labels are a fixed set; a scrape stays as large as
    after the first made-up name, however many more come."""
    users = tmp_path / "users.json"
    write_users_file(users, {"alice": {"SCRAM-SHA-256": scram_credential("SCRAM-SHA-256", "pw")}})
    with ServerThread({"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.users.file": str(users),
                       "connection.failed.authentication.delay.ms": "0",
                       "metrics.listener": "http://127.0.0.1:0"}) as server:
        _handshake(server.port, "made-up-0")
        first = _scrape(server)
        for i in range(1, 40):
            _handshake(server.port, f"made-up-{i}")
        samples = _scrape(server)
    mechanisms = {dict(labels)["mechanism"]: value for (name, labels), value in samples.items()
                  if name == "replica_assignor_authentications_total"}
    assert mechanisms == {"unknown": 40}
    assert len(samples) == len(first)


def test_health_endpoint(server):
    with urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/health", timeout=5) as response:
        assert response.status == 200
        body = response.read().decode()
    assert '"status": "ok"' in body and f"127.0.0.1:{server.port}" in body
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/nothing", timeout=5)
    missing.value.close()
    assert missing.value.code == 404
    with pytest.raises(urllib.error.HTTPError) as post:
        urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{server.metrics_port}/metrics",
                                                      data=b"x", method="POST"), timeout=5)
    post.value.close()
    assert post.value.code == 405


def test_metrics_are_off_by_default():
    with ServerThread() as plain:
        assert plain.metrics_port is None
        assert not plain.server.state.metrics.enabled


def _health_check(*overrides: str) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "kafka_replica_assignor.server.main", "--health-check"]
    for item in overrides:
        args += ["--override", item]
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


def test_health_check_command_over_kafka_and_over_http():
    with ServerThread({"metrics.listener": "http://127.0.0.1:0"}) as server:
        kafka = _health_check(f"listeners=PLAINTEXT://0.0.0.0:{server.port}")
        assert kafka.returncode == 0 and "healthy" in kafka.stdout and "ApiVersions" in kafka.stdout
        http = _health_check(f"metrics.listener=http://127.0.0.1:{server.metrics_port}")
        assert http.returncode == 0 and "/health answered 200" in http.stdout
        port, metrics_port = server.port, server.metrics_port
    down = _health_check(f"listeners=PLAINTEXT://127.0.0.1:{port}")
    assert down.returncode == 1 and down.stderr.startswith("unhealthy")
    down = _health_check(f"metrics.listener=http://127.0.0.1:{metrics_port}")
    assert down.returncode == 1 and down.stderr.startswith("unhealthy")
