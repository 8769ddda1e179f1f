"""ApiVersions: v0-v3 answered, anything newer gets UNSUPPORTED_VERSION with a v0 body
listing ApiVersions' own range (Kafka's fallback), so that clients retry at a version the
server has. Checked on a real server socket against the published fallback vector, and
with kafka-python's own client, which opens with ApiVersions v4."""

from __future__ import annotations

import struct

import kafka.errors as kafka_errors
import pytest
from kafka.net.compat import KafkaNetClient

from kafka_replica_assignor.conformance.exchange import Exchange
from kafka_replica_assignor.conformance.vectors import FEATURE_NAME, load_vectors
from kafka_replica_assignor.protocol.frame import patch_correlation_id
from kafka_replica_assignor.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateReplicaAssignmentRequest,
    CreateReplicaAssignmentResponse,
)
from kafka_replica_assignor.server.dispatch import supported_versions

API_VERSIONS = 18
VECTORS = load_vectors()
FALLBACK = next(v for v in VECTORS.vectors if v.api_key == API_VERSIONS and v.expect["error_code"])


def _send(server, frame: bytes) -> bytes:
    exchange = Exchange("127.0.0.1", server.port)
    try:
        answer = exchange(frame)
    finally:
        exchange.close()
    assert answer is not None, "the server closed the connection"
    return answer


def _request(version: int, correlation_id: int = 5) -> bytes:
    body_version = min(version, ApiVersionsRequest.max_version)
    request = ApiVersionsRequest(version=body_version, client_software_name="t", client_software_version="1")
    request.with_header(correlation_id=correlation_id, client_id="fallback-test")
    frame = bytearray(request.encode(header=True, framed=True))
    struct.pack_into(">h", frame, 6, version)  # the api version in the header: newer than any codec knows
    return bytes(frame)


def test_the_fallback_vector_is_what_kafka_sends():
    assert FALLBACK.api_version > supported_versions()[API_VERSIONS][1]
    fields = FALLBACK.response.fields
    assert FALLBACK.response.version == 0
    assert fields["ErrorCode"] == kafka_errors.UnsupportedVersionError.errno
    assert fields["ApiKeys"] == [{"ApiKey": API_VERSIONS, "MinVersion": 0, "MaxVersion": 3}]


@pytest.mark.parametrize("version", [4, 5, 127, 32767])
def test_newer_versions_get_the_fallback(server, version):
    answer = _send(server, _request(version, correlation_id=41))
    assert answer == patch_correlation_id(FALLBACK.response.frame, 41)
    decoded = ApiVersionsResponse.decode(answer, version=0, header=True, framed=True)
    assert decoded.error_code == kafka_errors.UnsupportedVersionError.errno
    assert [(k.api_key, k.min_version, k.max_version) for k in decoded.api_keys] == [
        (API_VERSIONS, *supported_versions()[API_VERSIONS])]


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_supported_versions_list_create_replica_assignment(server, version):
    answer = _send(server, _request(version))
    decoded = ApiVersionsResponse.decode(answer, version=version, header=True, framed=True)
    assert decoded.error_code == 0 and decoded.header.correlation_id == 5
    apis = {k.api_key: (k.min_version, k.max_version) for k in decoded.api_keys}
    assert apis == supported_versions()
    assert apis[68] == CreateReplicaAssignmentRequest.valid_versions
    features = {f.name: (f.min_version, f.max_version) for f in decoded.supported_features or []}
    assert (FEATURE_NAME in features) == (version >= 3)


def test_the_fallback_answers_after_an_earlier_request_on_the_same_connection(server):
    exchange = Exchange("127.0.0.1", server.port)
    try:
        first = exchange(_request(3, correlation_id=1))
        second = exchange(_request(9, correlation_id=2))
        third = exchange(_request(3, correlation_id=3))
    finally:
        exchange.close()
    assert ApiVersionsResponse.decode(first, version=3, header=True, framed=True).error_code == 0
    assert second == patch_correlation_id(FALLBACK.response.frame, 2)
    assert third == patch_correlation_id(first, 3)


def test_kafka_pythons_client_falls_back_and_then_speaks_apikey_68(server):
    # kafka-python opens with its newest ApiVersions, which this server does not have
    assert ApiVersionsRequest.max_version > supported_versions()[API_VERSIONS][1]
    client = KafkaNetClient(bootstrap_servers=[server.bootstrap])
    try:
        assert client.check_version(timeout_ms=10_000) is not None
        request = CreateReplicaAssignmentRequest(version=1, num_partitions=3, replication_factor=2, node_id=[],
                                                 timeout_ms=5_000, topic_name=None, current_assignment=[])
        response = client.send_and_receive(0, request, timeout_ms=10_000)
    finally:
        client.close()
    assert isinstance(response, CreateReplicaAssignmentResponse)
    assert response.error_code == 0
    assert sorted(e.partition_id for e in response.replica_assignment) == [0, 1, 2]
