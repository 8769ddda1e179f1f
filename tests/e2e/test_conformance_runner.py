"""``replica-assignor conformance`` end to end, on real sockets.

What the runner says about each kind of server (documented in docs/conformance.md):

* our server with the vectors' reference properties (seed 42): everything passes, in exact
  and in property mode;
* our server with another seed, or none: exact mode fails on the seed-dependent success
  vectors (bytes differ, properties hold), property mode passes;
* the Tansu broker, which has no apiKey 68: fails cleanly, non-zero exit, no traceback,
  the report saying apiKey 68 is not implemented;
* client role: our own admin client, and kafka-python's, against ``--role client`` get
  exactly the vectors' answers, and a request no vector has fails the run;
* a server that accepts but never answers ends the run in bounded time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import socket
import subprocess
import sys
import time

import kafka.errors as kafka_errors
import pytest
from kafka.net.compat import KafkaNetClient

from kafka_replica_assignor.cli import conformance as conformance_cli
from kafka_replica_assignor.conformance.generator import REFERENCE_PROPERTIES
from kafka_replica_assignor.conformance.listener import VectorListener
from kafka_replica_assignor.conformance.results import FAIL, PASS
from kafka_replica_assignor.conformance.runner import check_server
from kafka_replica_assignor.conformance.vectors import load_vectors, message_from_fields
from kafka_replica_assignor.protocol.client import (
    AsyncReplicaAssignorAdminClient,
    CreateReplicaAssignmentOptions,
    ReplicaAssignorAdminClient,
)
from kafka_replica_assignor.protocol.errors import error_for_code
from kafka_replica_assignor.protocol.messages import CreateReplicaAssignmentRequest
from tests.servers import ServerThread

VECTORS = load_vectors()
SERVER_VECTORS = [v.name for v in VECTORS.for_role("server")]
SEED = REFERENCE_PROPERTIES["replica.assignor.random.seed"]


@pytest.fixture(scope="module")
def cluster_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("conformance") / "cluster.json"
    path.write_text(json.dumps(VECTORS.reference["cluster"]), encoding="utf-8")
    return str(path)


def _server(cluster_file: str, seed: str | None) -> ServerThread:
    props = {"cluster.metadata.file": cluster_file,
             "replica.assignor.class.name": REFERENCE_PROPERTIES["replica.assignor.class.name"]}
    if seed is not None:
        props["replica.assignor.random.seed"] = seed
    return ServerThread(props)


def _run_cli(argv: list[str], capsys) -> tuple[int, dict[str, tuple[str, str]], str]:
    parser = argparse.ArgumentParser()
    conformance_cli.add_parser(parser.add_subparsers())
    args = parser.parse_args(["conformance", *argv])
    code = args.run(args)
    out = capsys.readouterr().out
    return code, _rows(out), out


def _rows(out: str) -> dict[str, tuple[str, str]]:
    """vector name -> (status, detail), from the printed table."""
    rows = {}
    for line in out.splitlines():
        parts = line.split(None, 3)
        if len(parts) == 4 and parts[0] in {PASS, FAIL, "SKIP"} and parts[1] != "discovery":
            rows[parts[1]] = (parts[0], parts[3])
    return rows


@pytest.mark.parametrize("exact", [True, False], ids=["exact", "properties"])
def test_the_reference_server_passes_everything(cluster_file, capsys, exact):
    with _server(cluster_file, SEED) as server:
        code, rows, out = _run_cli(["--bootstrap-server", server.bootstrap] + (["--exact"] if exact else []), capsys)
    assert code == 0, out
    assert sorted(rows) == sorted(SERVER_VECTORS)
    assert {status for status, _ in rows.values()} == {PASS}
    assert "0 failed, 0 skipped" in out
    if exact:
        assert rows["create-replica-assignment-v0-rack-aware"][1].startswith("identical")


def test_another_seed_fails_exact_mode_on_placements_only(cluster_file, capsys):
    with _server(cluster_file, "7") as server:
        code, rows, out = _run_cli(["--bootstrap-server", server.bootstrap, "--exact"], capsys)
        assert code == 1
        failed = {name for name, (status, _) in rows.items() if status == FAIL}
        assert "create-replica-assignment-v0-rack-aware" in failed
        for name in failed:  # only success responses, whose bytes depend on the seed
            vector = VECTORS.named(name)
            assert vector.api_key == 68 and vector.expect["error_code"] == 0, name
            assert "properties hold" in rows[name][1]
        errors = [v.name for v in VECTORS.for_role("server") if v.api_key == 68 and v.expect.get("error_code")]
        assert all(rows[name][0] == PASS for name in errors)
        code, rows, out = _run_cli(["--bootstrap-server", server.bootstrap], capsys)
    assert code == 0, out
    assert {status for status, _ in rows.values()} == {PASS}


def test_an_unseeded_server_passes_property_mode(cluster_file):
    with _server(cluster_file, None) as server:
        report = check_server(VECTORS, "127.0.0.1", server.port)
    assert report.ok, report.format()
    assert report.mode == "properties" and report.count(PASS) == len(report.outcomes)


def test_property_mode_catches_a_server_over_another_cluster(tmp_path):
    # brokers 10-15 on one rack: placements land outside the vectors' brokers, NodeId 0 is unknown
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"brokers": [{"id": i, "rack": "/dc1/r"} for i in range(10, 16)]}), encoding="utf-8")
    with ServerThread({"cluster.metadata.file": str(other), "replica.assignor.random.seed": SEED}) as server:
        report = check_server(VECTORS, "127.0.0.1", server.port)
    assert not report.ok
    failed = {o.vector: o.detail for o in report.outcomes if o.status == FAIL}
    assert "is not in the cluster view" in failed["create-replica-assignment-v0-rack-aware"]
    assert "error code 8, expected 0" in failed["create-replica-assignment-v0-broker-list"]
    assert "create-replica-assignment-v0-zero-partitions" not in failed


def test_nothing_listening_is_one_clean_failure(capsys):
    with _server_port_closed() as port:
        report = check_server(VECTORS, "127.0.0.1", port)
        code, _rows_, out = _run_cli(["--bootstrap-server", f"127.0.0.1:{port}"], capsys)
    assert not report.ok and "cannot connect" in report.format()
    assert code == 1 and out == ""  # the command line: one line on stderr, before any table


class _server_port_closed:
    def __enter__(self) -> int:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        return self._sock.getsockname()[1]

    def __exit__(self, *exc) -> None:
        self._sock.close()


@pytest.mark.tansu
def test_tansu_fails_cleanly_saying_apikey_68_is_not_implemented(tansu):
    proc = subprocess.run([sys.executable, "-m", "kafka_replica_assignor.cli.main", "conformance", "--bootstrap-server", tansu.bootstrap,
                           "--timeout-ms", "3000"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "apiKey 68 (CreateReplicaAssignment) is not implemented: ApiVersions does not list it" in proc.stdout
    rows = _rows(proc.stdout)
    for name in SERVER_VECTORS:
        if VECTORS.named(name).api_key == 68:
            assert rows[name][0] == FAIL and rows[name][1].startswith("not sent"), name
    assert rows["api-versions-v3"][0] == PASS  # it is a Kafka-protocol server, just not this contract


def _client_call(admin, vector):
    f = vector.request.fields
    current = {c["PartitionId"]: c["Replicas"] for c in f["CurrentAssignment"]} or None
    pending = {t["TopicName"]: {p["PartitionId"]: p["Replicas"] for p in t["Partitions"]}
               for t in f.get("PendingTopics") or ()} or None
    return admin.create_replica_assignment(
        f["NumPartitions"], f["ReplicationFactor"], f["NodeId"],
        CreateReplicaAssignmentOptions(force_simple_assignment=f["ForceSimpleAssignment"], timeout_ms=f["timeoutMs"]),
        topic=f["TopicName"], current_assignment=current, pending_topics=pending)


def _expected(vector):
    fields = vector.response.fields
    return {e["PartitionId"]: e["Replicas"] for e in fields["ReplicaAssignment"]}, fields["ErrorCode"], \
        fields["ErrorMessage"]


# our client negotiates v1 (the newest both sides have), so it can ask for every v1 vector
def _client_vectors(version: int) -> list:
    return [v for v in VECTORS.for_role("client") if v.api_key == 68 and v.api_version == version
            and len({t["TopicName"] for t in v.request.fields.get("PendingTopics") or ()})
            == len(v.request.fields.get("PendingTopics") or ())]   # a dict cannot repeat a pending topic


@pytest.mark.parametrize("version", [1, 2])
def test_our_client_gets_the_vectors_answers_from_the_client_role(version: int):
    vectors = _client_vectors(version)
    assert vectors
    proc = subprocess.Popen([sys.executable, "-m", "kafka_replica_assignor.cli.main", "conformance", "--role", "client",
                             "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        assert first.startswith("listening on 127.0.0.1:"), first + proc.stderr.read()
        bootstrap = first.split()[-1]
        with ReplicaAssignorAdminClient(bootstrap, api_version=version) as admin:
            for vector in vectors:
                assignment, code, message = _expected(vector)
                if code:
                    with pytest.raises(error_for_code(code)) as raised:
                        _client_call(admin, vector)
                    assert message in str(raised.value)
                else:
                    assert _client_call(admin, vector).assignments() == assignment
            assert admin.api_version == version
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out + err
    assert "Traceback" not in err
    rows = _rows(out)
    for vector in vectors:
        assert rows[vector.name][0] == PASS and "served 1x" in rows[vector.name][1]
    assert rows["api-versions-v3"][0] == PASS


async def test_a_request_no_vector_has_fails_the_client_run():
    lines: list[str] = []
    listener = VectorListener(VECTORS, "127.0.0.1", 0, on_event=lines.append)
    await listener.start()
    _idle_reader, idle = await asyncio.open_connection("127.0.0.1", listener.port)  # stays silent
    try:
        async with AsyncReplicaAssignorAdminClient(f"127.0.0.1:{listener.port}") as admin:
            with pytest.raises(kafka_errors.KafkaConnectionError):
                await admin.create_replica_assignment(7, 2)  # no vector asks for 7 partitions
    finally:
        listener.request_stop()
        await asyncio.wait_for(listener.serve(), 10)  # the idle connection does not hold it up
        idle.close()
    report = listener.report()
    assert not report.ok
    failures = [o for o in report.outcomes if o.status == FAIL]
    assert any("matches no vector" in o.detail and "'NumPartitions': 7" in o.detail for o in failures)
    assert any("no CreateReplicaAssignment request matched" in o.detail for o in failures)
    assert "served api-versions-v3" in lines[0]


def test_a_server_that_never_answers_ends_the_run_in_bounded_time(capsys):
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # accepts (the kernel does), reads nothing, answers nothing
        started = time.monotonic()
        out = check_server(VECTORS, "127.0.0.1", silent.getsockname()[1], timeout=0.3).format()
        assert time.monotonic() - started < 5
        rows = _rows(out)
        started = time.monotonic()
        code, _rows_, cli_out = _run_cli(["--bootstrap-server", f"127.0.0.1:{silent.getsockname()[1]}",
                                          "--timeout-ms", "300"], capsys)
        assert time.monotonic() - started < 5
    assert "ApiVersions v3: no answer in time" in out
    assert {status for status, _ in rows.values()} == {FAIL}
    assert all(detail == "not sent: the server did not answer ApiVersions" for _, detail in rows.values())
    assert code == 1 and cli_out == ""  # the command line says it in one line, not a table


def test_kafka_pythons_client_bootstraps_against_the_client_role():
    vector = VECTORS.named("create-replica-assignment-v1-new-topic")
    proc = subprocess.Popen([sys.executable, "-m", "kafka_replica_assignor.cli.main", "conformance", "--role", "client",
                             "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        assert first.startswith("listening on 127.0.0.1:"), first + proc.stderr.read()
        host, port = first.split()[-1].rsplit(":", 1)
        client = KafkaNetClient(bootstrap_servers=[f"{host}:{port}"])
        try:
            assert client.check_version(timeout_ms=10_000) is not None
            assert [(b.host, b.port) for b in client.cluster.brokers()] == [(host, int(port))]
            request = message_from_fields(CreateReplicaAssignmentRequest, 1, vector.request.fields)
            response = client.send_and_receive(0, request, timeout_ms=10_000)
        finally:
            client.close()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert {e.partition_id: list(e.replicas) for e in response.replica_assignment} == _expected(vector)[0]
    assert proc.returncode == 0, out + err
    rows = _rows(out)
    # kafka-python opens with ApiVersions v4: the fallback, then v3, then Metadata
    assert rows["api-versions-v4-unsupported"][0] == PASS and rows["api-versions-v3"][0] == PASS
    assert any(name.startswith("metadata-v") and status == PASS for name, (status, _) in rows.items())
    assert rows[vector.name][0] == PASS
