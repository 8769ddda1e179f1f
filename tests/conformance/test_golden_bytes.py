"""Golden bytes for every message and version, with headers and framing.

Three sources of truth are held against each other:

* a short table written by hand from Kafka's encoding rules (each byte annotated), so that
  the codec and the published vectors are checked against something they did not produce;
* the published vectors (``schemas/vectors/``): every frame must be exactly what the codec
  makes of the vector's decoded fields, and decode back to them;
* KIP-879's own schema (seed 000, ``seed_schemas/``): a class generated from it must read
  our v0 success responses byte for byte, and our v0 error responses without failing.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.api_header import ResponseClassRegistry
from kafka.protocol.api_message import ApiMessage

from kafka_replica_assignor.conformance.vectors import (
    CREATE_REPLICA_ASSIGNMENT,
    decode_response,
    fields_of,
    load_vectors,
    message_from_fields,
    request_body,
    request_class,
    request_frame,
    response_class,
    response_frame,
    tagged_fields_present,
)
from kafka_replica_assignor.protocol.errors import ReplicaAssignorFailedError
from kafka_replica_assignor.protocol.frame import peek_header
from kafka_replica_assignor.protocol.messages import CreateReplicaAssignmentRequest as Request
from kafka_replica_assignor.protocol.messages import CreateReplicaAssignmentResponse as Response
from tests.conformance import seed_schemas

VECTORS = load_vectors()


def _seed_classes():
    """Classes built from KIP-879's exact JSON; kafka-python's global response registry is
    put back afterwards, as protocol/messages.py does, so apiKey 68 stays what it was."""
    registry = ResponseClassRegistry._response_class_registry
    before = dict(registry)
    owner = registry.get(CREATE_REPLICA_ASSIGNMENT)
    try:
        class CreateReplicaAssignmentRequest(ApiMessage, load_json=seed_schemas):
            pass

        class CreateReplicaAssignmentResponse(ApiMessage, load_json=seed_schemas):
            pass

        CreateReplicaAssignmentRequest[0], CreateReplicaAssignmentResponse[0]
    finally:
        registry.clear()
        registry.update(before)
    return CreateReplicaAssignmentRequest, CreateReplicaAssignmentResponse, owner


SeedRequest, SeedResponse, APIKEY_68_BEFORE = _seed_classes()


def _hex(*parts: str) -> bytes:
    return bytes.fromhex("".join(parts))


# -- written by hand ---------------------------------------------------------------------

HAND_WRITTEN = [
    pytest.param(
        Request(version=0, num_partitions=3, replication_factor=2, force_simple_assignment=False,
                node_id=[0, 1, 2], timeout_ms=1000),
        _hex("00000025",                    # frame length 37
             "0044", "0000", "00000007",    # apiKey 68, version 0, correlation id 7
             "0001", "78",                  # client id "x" (int16 length: header v2 keeps it non-compact)
             "00",                          # header tagged fields: none
             "00000003",                    # NumPartitions 3
             "0002",                        # ReplicationFactor 2
             "00",                          # ForceSimpleAssignment false
             "04", "00000000", "00000001", "00000002",  # NodeId: compact array, length 3 + 1
             "000003e8",                    # timeoutMs 1000
             "00"),                         # tagged fields: none
        id="request-v0"),
    pytest.param(
        Request(version=1, num_partitions=2, replication_factor=2, force_simple_assignment=True, node_id=[],
                timeout_ms=60000, topic_name="t",
                current_assignment=[Request.CurrentPartition(partition_id=0, replicas=[1, 2])]),
        _hex("0000002a", "0044", "0001", "00000007", "0001", "78", "00",
             "00000002", "0002", "01",      # NumPartitions 2, ReplicationFactor 2, ForceSimpleAssignment true
             "01",                          # NodeId: empty compact array
             "0000ea60",                    # timeoutMs 60000
             "02", "74",                    # TopicName "t": compact string, length 1 + 1
             "02",                          # CurrentAssignment: one entry
             "00000000", "03", "00000001", "00000002", "00",  # PartitionId 0, Replicas [1, 2], no tags
             "00"),
        id="request-v1"),
    pytest.param(
        Response(version=0, replica_assignment=[Response.ReplicaAssignment(partition_id=0, replicas=[1, 2])]),
        _hex("00000015",                    # frame length 21
             "00000007", "00",              # correlation id 7, response header v1 tagged fields: none
             "02",                          # ReplicaAssignment: one entry
             "00000000", "03", "00000001", "00000002", "00",
             "00"),                         # no tagged field: ErrorCode 0 and ErrorMessage null are defaults
        id="response-v0-success"),
    pytest.param(
        Response(version=0, error_code=38, error_message="bad", replica_assignment=[]),
        _hex("00000011", "00000007", "00",
             "01",                          # ReplicaAssignment: empty
             "02",                          # two tagged fields
             "00", "02", "0026",            # tag 0 (ErrorCode), 2 bytes: 38
             "01", "04", "04626164"),       # tag 1 (ErrorMessage), 4 bytes: compact string "bad"
        id="response-v0-error"),
    pytest.param(
        Response(version=1, throttle_time_ms=0, error_code=ReplicaAssignorFailedError.errno, error_message="x",
                 replica_assignment=[]),
        _hex("0000000f", "00000007", "00",
             "00000000",                    # ThrottleTimeMs 0
             "03e8",                        # ErrorCode 1000 (REPLICA_ASSIGNOR_FAILED), a regular field in v1
             "02", "78",                    # ErrorMessage "x"
             "01", "00"),
        id="response-v1-error"),
]


@pytest.mark.parametrize(("message", "frame"), HAND_WRITTEN)
def test_hand_written_frames_match_the_codec_both_ways(message, frame):
    version = message.version
    if message.is_request():
        assert request_frame(message, 7, client_id="x") == frame
        decoded = type(message).decode(frame, version=version, header=True, framed=True)
        assert (decoded.header.request_api_key, decoded.header.client_id) == (CREATE_REPLICA_ASSIGNMENT, "x")
    else:
        assert response_frame(message, 7) == frame
        decoded = type(message).decode(frame, version=version, header=True, framed=True)
    assert decoded.header.correlation_id == 7
    assert decoded == message


# -- the published vectors ---------------------------------------------------------------

REQUESTS = [pytest.param(v, id=v.name) for v in VECTORS.vectors if v.request.fields is not None]
RESPONSES = [pytest.param(v, id=v.name) for v in VECTORS.vectors if v.response is not None]


@pytest.mark.parametrize("vector", [pytest.param(v, id=v.name) for v in VECTORS.vectors])
def test_frames_carry_their_length_and_header(vector):
    req = vector.request.frame
    assert struct.unpack(">i", req[:4])[0] == len(req) - 4
    head = peek_header(req[4:])
    assert (head.api_key, head.api_version) == (vector.api_key, vector.api_version)
    assert head.correlation_id == vector.request.correlation_id
    assert head.client_id == vector.request.header["ClientId"]
    if vector.response is not None:
        resp = vector.response.frame
        assert struct.unpack(">i", resp[:4])[0] == len(resp) - 4
        assert struct.unpack(">i", resp[4:8])[0] == vector.request.correlation_id == vector.response.correlation_id


@pytest.mark.parametrize("vector", REQUESTS)
def test_request_fields_encode_to_the_vector_and_back(vector):
    cls = request_class(vector.api_key)
    version = vector.request.version
    message = message_from_fields(cls, version, vector.request.fields)
    if vector.request.header["RequestApiVersion"] == version:
        assert request_frame(message, vector.request.correlation_id) == vector.request.frame
    else:  # an unsupported-version case: a valid body under a newer version number
        assert message.encode(version=version) == vector.request_body
    assert fields_of(cls.decode(vector.request_body, version=version), cls.json["fields"], version) \
        == vector.request.fields


@pytest.mark.parametrize("vector", RESPONSES)
def test_response_fields_encode_to_the_vector_and_back(vector):
    cls = response_class(vector.api_key)
    version = vector.response.version
    message = message_from_fields(cls, version, vector.response.fields)
    assert response_frame(message, vector.response.correlation_id) == vector.response.frame
    decoded = decode_response(vector.api_key, version, vector.response.frame)
    assert decoded.header.correlation_id == vector.response.correlation_id
    assert fields_of(decoded, cls.json["fields"], version) == vector.response.fields
    assert tagged_fields_present(decoded, cls, version) == list(vector.response.tagged_fields)


def test_the_vectors_cover_tagged_and_regular_error_fields():
    errors = [v for v in VECTORS.vectors if v.api_key == CREATE_REPLICA_ASSIGNMENT and v.response is not None
              and v.response.fields["ErrorCode"]]
    by_version = {0: set(), 1: set(), 2: set()}
    for v in errors:
        by_version[v.response.version].add(v.response.tagged_fields)
    assert by_version[0] == {("ErrorCode", "ErrorMessage")}  # v0: both tagged, always
    assert by_version[1] == by_version[2] == {()}  # v1 and v2: regular fields, never tagged
    successes = [v for v in VECTORS.vectors if v.api_key == CREATE_REPLICA_ASSIGNMENT and v.response is not None
                 and not v.response.fields["ErrorCode"]]
    assert successes and all(v.response.tagged_fields == () for v in successes)


# -- KIP-879's own schema ----------------------------------------------------------------

SEED_V0 = [v for v in VECTORS.vectors if v.api_key == CREATE_REPLICA_ASSIGNMENT and v.request.version == 0]


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def _response_body(frame: bytes) -> bytes:
    return frame[9:]  # length, correlation id, empty header tagged fields


def test_seed_classes_leave_the_response_registry_alone():
    assert SeedResponse.json["validVersions"] == "0" and "ErrorCode" not in str(SeedResponse.json)
    now = ResponseClassRegistry._response_class_registry.get(CREATE_REPLICA_ASSIGNMENT)
    assert now is APIKEY_68_BEFORE  # whatever kafka-python had (if anything), not the seed's class


@pytest.mark.parametrize("vector", [pytest.param(v, id=v.name) for v in SEED_V0
                                    if v.response is not None and not v.response.fields["ErrorCode"]])
def test_seed_schema_reads_v0_success_byte_for_byte(vector):
    body = _response_body(vector.response.frame)
    seen = SeedResponse.decode(body, version=0)
    assert not seen.unknown_tags
    assert [{"PartitionId": e.partition_id, "Replicas": list(e.replicas)} for e in seen.replica_assignment] \
        == vector.response.fields["ReplicaAssignment"]
    assert seen.encode() == body  # decoded messages carry their version


@pytest.mark.parametrize("vector", [pytest.param(v, id=v.name) for v in SEED_V0
                                    if v.response is not None and v.response.fields["ErrorCode"]])
def test_seed_schema_reads_v0_errors_and_skips_the_tags(vector):
    seen = SeedResponse.decode(_response_body(vector.response.frame), version=0)
    assert seen.replica_assignment == []
    # the seed knows no tag 0 or 1: it keeps them as unknown tagged fields, raw
    assert struct.unpack(">h", seen.unknown_tags["_0"])[0] == vector.response.fields["ErrorCode"]
    message = vector.response.fields["ErrorMessage"].encode()
    assert seen.unknown_tags["_1"] == _uvarint(len(message) + 1) + message  # a compact string


@pytest.mark.parametrize("vector", [pytest.param(v, id=v.name) for v in SEED_V0 if v.request.fields is not None])
def test_seed_schema_writes_and_reads_our_v0_requests(vector):
    fields = vector.request.fields
    seed = SeedRequest(version=0, num_partitions=fields["NumPartitions"],
                       replication_factor=fields["ReplicationFactor"],
                       force_simple_assignment=fields["ForceSimpleAssignment"], node_id=fields["NodeId"],
                       timeout_ms=fields["timeoutMs"])
    assert seed.encode(version=0) == vector.request_body
    ours = Request.decode(seed.encode(version=0), version=0)
    assert (ours.num_partitions, ours.node_id, ours.timeout_ms) == (
        fields["NumPartitions"], fields["NodeId"], fields["timeoutMs"])


assignments = st.dictionaries(st.integers(0, 2**31 - 1),
                              st.lists(st.integers(-(2**31), 2**31 - 1), max_size=6), max_size=20)


@settings(max_examples=150)
@given(assignment=assignments)
def test_any_v0_success_is_seed_bytes(assignment):
    entries = sorted(assignment.items())
    ours = Response(version=0, replica_assignment=[
        Response.ReplicaAssignment(partition_id=p, replicas=r) for p, r in entries]).encode(version=0)
    seed = SeedResponse(version=0, replica_assignment=[
        SeedResponse.ReplicaAssignment(partition_id=p, replicas=r) for p, r in entries]).encode(version=0)
    assert ours == seed


def test_a_seed_request_round_trips_through_the_server_codec():
    frame = request_frame(SeedRequest(version=0, num_partitions=4, replication_factor=3, node_id=[5, 4, 3]), 11)
    decoded = Request.decode(request_body(frame), version=0)
    assert (decoded.num_partitions, decoded.replication_factor, decoded.node_id) == (4, 3, [5, 4, 3])
    assert (decoded.force_simple_assignment, decoded.timeout_ms) == (False, 60000)
