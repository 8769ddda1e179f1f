"""The fast response encoder (protocol/fast.py) writes exactly the codec's bytes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_replica_assignor.protocol.fast import encode_assignment_body, encode_assignment_frame
from kafka_replica_assignor.protocol.frame import frame
from kafka_replica_assignor.protocol.messages import CreateReplicaAssignmentResponse as Response

replicas = st.lists(st.integers(-(2**31), 2**31 - 1), max_size=8)
# 126..128 replicas: the compact-array length crosses from one varint byte to two
long_replicas = st.integers(126, 128).map(lambda n: list(range(-3, n - 3)))
assignments = st.dictionaries(st.integers(0, 2**31 - 1), replicas | long_replicas, max_size=30)


def codec_body(version: int, assignment) -> bytes:
    entries = [Response.ReplicaAssignment(partition_id=p, replicas=list(r)) for p, r in sorted(assignment.items())]
    return Response(version=version, replica_assignment=entries).encode(version=version)


@settings(max_examples=150)
@given(version=st.sampled_from([0, 1]), assignment=assignments)
def test_body_is_byte_identical_to_the_codec(version, assignment):
    assert encode_assignment_body(version, assignment) == codec_body(version, assignment)


@settings(max_examples=60)
@given(version=st.sampled_from([0, 1]), assignment=assignments, cid=st.integers(-(2**31), 2**31 - 1))
def test_frame_is_header_v1_plus_body(version, assignment, cid):
    assert encode_assignment_frame(version, cid, assignment) == frame(cid, codec_body(version, assignment), True)


def test_large_uniform_assignment_decodes_back():
    assignment = {p: [p % 1000, (p + 1) % 1000, (p + 2) % 1000] for p in range(20_000)}
    for version in (0, 1):
        decoded = Response.decode(encode_assignment_body(version, assignment), version=version)
        assert decoded.error_code == 0 and decoded.error_message is None
        assert {e.partition_id: list(e.replicas) for e in decoded.replica_assignment} == assignment


def test_unsorted_keys_are_written_in_partition_order():
    assert encode_assignment_body(1, {2: [1], 0: [3], 1: [2]}) == codec_body(1, {0: [3], 1: [2], 2: [1]})
