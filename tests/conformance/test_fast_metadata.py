"""Metadata answers naming unknown topics (protocol/fast_metadata.py) are exactly the codec's, for
every version this server answers, whatever the names and the broker named."""

from __future__ import annotations

import kafka.errors as kafka_errors
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_replica_assignor.protocol.fast_metadata import unknown_topics_encoder
from kafka_replica_assignor.protocol.messages import MetadataResponse as Response

VERSIONS = range(0, 13)  # as server/handlers/metadata.py answers
# names of 0 to Kafka's longest 249 characters, any text (each name's length crosses one varint byte at 127)
names = st.lists(st.text(min_size=1, max_size=249), max_size=40)
hosts = st.sampled_from(["127.0.0.1", "broker-0.example.com", "\u00e9.example"])


def codec_body(version: int, host: str, port: int, topics: list[str]) -> bytes:
    return Response(
        version=version, throttle_time_ms=0,
        brokers=[Response.MetadataResponseBroker(node_id=7, host=host, port=port, rack=None)],
        cluster_id="replica-assignor", controller_id=7,
        topics=[Response.MetadataResponseTopic(error_code=kafka_errors.UnknownTopicOrPartitionError.errno, name=name,
                                               is_internal=False, partitions=[]) for name in topics],
    ).encode(version=version)


def encoder(version: int, host: str, port: int):
    return unknown_topics_encoder(lambda topics: codec_body(version, host, port, list(topics)),
                                  Response.flexible_version_q(version))


@settings(max_examples=200)
@given(version=st.sampled_from(VERSIONS), host=hosts, port=st.integers(0, 65535), topics=names)
def test_the_answer_is_byte_identical_to_the_codec(version, host, port, topics):
    assert encoder(version, host, port).body(topics) == codec_body(version, host, port, topics)


def test_the_topic_limit_decodes_back_in_every_version():
    topics = [f"topic-{i:05d}".ljust(249, "x") for i in range(10_000)]
    for version in VERSIONS:
        body = encoder(version, "127.0.0.1", 9095).body(topics)
        assert body == codec_body(version, "127.0.0.1", 9095, topics)
        assert [t.name for t in Response.decode(body, version=version).topics] == topics


def test_an_answer_of_another_shape_is_refused():
    """The encoder checks what it assumes against the codec's answers: an answer without a topics
    array where expected, or whose entries are not the same around their names, is refused."""
    def extra_byte_per_topic(topics):
        return codec_body(1, "h", 1, list(topics)) + b"\x00" * len(topics)

    for encode, flexible in [(lambda topics: codec_body(1, "h", 1, list(topics)), True),
                             (lambda topics: codec_body(9, "h", 1, list(topics)), False),
                             (extra_byte_per_topic, False)]:
        with pytest.raises(ValueError):
            unknown_topics_encoder(encode, flexible)
