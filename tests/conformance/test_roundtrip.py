"""Round trips over generated CreateReplicaAssignment messages of every version:
encode then decode gives the message back, framed with its header too; the tagged error
fields are on the wire exactly when they differ from their defaults (v0) and never (v1);
fields a version lacks, or a sender left unset, read as the schema's defaults."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kafka_replica_assignor.conformance.vectors import (
    fields_of,
    message_from_fields,
    request_body,
    request_frame,
    response_frame,
)
from kafka_replica_assignor.protocol.messages import CreateReplicaAssignmentRequest as Request
from kafka_replica_assignor.protocol.messages import CreateReplicaAssignmentResponse as Response

VERSIONS = st.sampled_from(range(Request.max_version + 1))
int16 = st.integers(-(2**15), 2**15 - 1)
int32 = st.integers(-(2**31), 2**31 - 1)
broker_ids = st.lists(int32, max_size=12)
names = st.none() | st.text(max_size=40)
current = st.lists(st.builds(lambda p, r: Request.CurrentPartition(partition_id=p, replicas=r), int32, broker_ids),
                   max_size=8)


@st.composite
def requests(draw, version=None):
    version = draw(VERSIONS) if version is None else version
    kwargs = dict(num_partitions=draw(int32), replication_factor=draw(int16),
                  force_simple_assignment=draw(st.booleans()), node_id=draw(broker_ids), timeout_ms=draw(int32))
    if version >= 1:
        kwargs.update(topic_name=draw(names), current_assignment=draw(current))
    return Request(version=version, **kwargs)


@st.composite
def responses(draw, version=None):
    version = draw(VERSIONS) if version is None else version
    entries = draw(st.lists(st.builds(lambda p, r: Response.ReplicaAssignment(partition_id=p, replicas=r),
                                      int32, broker_ids), max_size=10))
    kwargs = dict(error_code=draw(st.just(0) | int16), error_message=draw(names), replica_assignment=entries)
    if version >= 1:
        kwargs["throttle_time_ms"] = draw(int32)
    return Response(version=version, **kwargs)


@given(message=requests())
def test_requests_round_trip(message):
    version = message.version
    decoded = Request.decode(message.encode(version=version), version=version)
    assert decoded == message
    assert fields_of(decoded, Request.json["fields"], version) == fields_of(message, Request.json["fields"], version)


@given(message=responses())
def test_responses_round_trip(message):
    version = message.version
    decoded = Response.decode(message.encode(version=version), version=version)
    assert decoded == message
    assert not decoded.unknown_tags


@given(message=requests(), correlation_id=int32, client_id=st.none() | st.text(max_size=20))
def test_framed_requests_round_trip_with_their_header(message, correlation_id, client_id):
    frame = request_frame(message, correlation_id, client_id=client_id)
    decoded = Request.decode(frame, version=message.version, header=True, framed=True)
    assert decoded == message
    assert (decoded.header.request_api_key, decoded.header.request_api_version) == (68, message.version)
    assert (decoded.header.correlation_id, decoded.header.client_id) == (correlation_id, client_id)
    assert Request.decode(request_body(frame), version=message.version) == message


@given(message=responses(), correlation_id=int32)
def test_framed_responses_round_trip_with_their_header(message, correlation_id):
    frame = response_frame(message, correlation_id)
    decoded = Response.decode(frame, version=message.version, header=True, framed=True)
    assert decoded == message and decoded.header.correlation_id == correlation_id


@given(message=responses(version=0))
def test_v0_error_fields_are_tagged_only_when_set(message):
    body = message.encode(version=0)
    decoded = Response.decode(body, version=0)
    expected = {name for name, default in (("error_code", 0), ("error_message", None))
                if getattr(message, name) != default}
    assert set(decoded.tags or ()) == expected
    # the message ends with the tag section: its count, then tag 0 before tag 1
    without = Response(version=0, replica_assignment=message.replica_assignment).encode(version=0)
    assert body[:len(without) - 1] == without[:-1]
    assert body[len(without) - 1] == len(expected)


@given(message=responses(version=1))
def test_v1_error_fields_are_regular_and_never_tagged(message):
    body = message.encode(version=1)
    decoded = Response.decode(body, version=1)
    assert not decoded.tags
    assert body[-1] == 0  # an empty tag section
    assert int.from_bytes(body[4:6], "big", signed=True) == message.error_code  # right after ThrottleTimeMs


@given(message=responses(version=0))
def test_v1_success_is_v0_plus_throttle_and_error_fields(message):
    message.error_code, message.error_message = 0, None
    v0 = message.encode(version=0)
    v1 = Response(version=1, throttle_time_ms=0, error_code=0, error_message=None,
                  replica_assignment=message.replica_assignment).encode(version=1)
    assert v1 == bytes(4) + bytes(2) + b"\x00" + v0  # ThrottleTimeMs 0, ErrorCode 0, ErrorMessage null


@given(n=int32, rf=int16, version=VERSIONS)
def test_unset_request_fields_read_as_defaults(n, rf, version):
    sent = Request(version=version, num_partitions=n, replication_factor=rf, node_id=[])
    decoded = Request.decode(sent.encode(version=version), version=version)
    assert (decoded.num_partitions, decoded.replication_factor) == (n, rf)
    assert decoded.force_simple_assignment is False
    assert decoded.timeout_ms == 60000
    assert decoded.topic_name is None and decoded.current_assignment == []


@given(message=requests(version=0))
def test_fields_a_version_lacks_read_as_defaults(message):
    decoded = Request.decode(message.encode(version=0), version=0)
    assert decoded.topic_name is None and decoded.current_assignment == []
    response = Response.decode(Response(version=0, replica_assignment=[]).encode(version=0), version=0)
    assert (response.throttle_time_ms, response.error_code, response.error_message) == (0, 0, None)


@given(message=requests() | responses())
def test_schema_named_fields_rebuild_the_message(message):
    cls = type(message)
    fields = fields_of(message, cls.json["fields"], message.version)
    assert message_from_fields(cls, message.version, fields) == message
