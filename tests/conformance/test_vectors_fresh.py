"""The published vectors are what the code produces now, and cover the whole contract.

If this fails after a deliberate change to a schema, a handler, an error message or an
assignor, regenerate the file with ``python -m protocol.vectors --write`` and review the
diff: every changed byte is a change other implementations will see.
"""

from __future__ import annotations

import json
from importlib import resources

import pytest

from kafka_replica_assignor import schemas
from kafka_replica_assignor.conformance.generator import generate
from kafka_replica_assignor.conformance.vectors import (
    API_NAMES,
    FORMAT_VERSION,
    REGENERATE,
    VECTORS_RESOURCE,
    VectorFileError,
    default_vectors_path,
    dumps,
    load_vectors,
    parse_vectors,
)
from kafka_replica_assignor.protocol.messages import CreateReplicaAssignmentRequest
from kafka_replica_assignor.server.dispatch import supported_versions

PUBLISHED = resources.files(schemas).joinpath(VECTORS_RESOURCE)


def test_the_file_is_what_the_generator_writes_now():
    assert PUBLISHED.is_file()
    fresh = dumps(generate())
    published = PUBLISHED.read_text(encoding="utf-8")
    assert published == fresh, f"schemas/{VECTORS_RESOURCE} is stale: run `{REGENERATE}` and review the diff"


def test_every_supported_message_and_version_has_a_vector():
    """The contract's APIs (ApiVersions, Metadata, CreateReplicaAssignment); SASL is Kafka's own."""
    vectors = load_vectors()
    served = supported_versions()
    answered = {(v.api_key, v.api_version) for v in vectors.vectors if v.response is not None}
    assert {spec["api_key"] for spec in vectors.apis.values()} == set(API_NAMES)
    for name, spec in vectors.apis.items():
        key = spec["api_key"]
        lo, hi = served[key]
        assert tuple(spec["versions"]) == (lo, hi), f"{name}: the file says {spec['versions']}, the server v{lo}-v{hi}"
        missing = [v for v in range(lo, hi + 1) if (key, v) not in answered]
        assert not missing, f"{name}: no vector for versions {missing}"
        newer = [v for v in vectors.for_role("server") if v.api_key == key and v.api_version > hi]
        assert newer, f"{name}: no vector for a version above v{hi}"
    assert vectors.apis["CreateReplicaAssignment"]["versions"] == list(CreateReplicaAssignmentRequest.valid_versions)


def test_every_assignment_version_has_successes_and_each_documented_error():
    vectors = load_vectors()
    for version in range(CreateReplicaAssignmentRequest.max_version + 1):
        codes = {v.expect["error_code"] for v in vectors.vectors
                 if v.api_key == 68 and v.api_version == version and v.response is not None}
        assert 0 in codes and {7, 37, 38, 39, 1000} & codes, (version, codes)
    every = {v.expect["error_code"] for v in vectors.vectors if v.api_key == 68 and v.response is not None}
    assert every == {0, 7, 8, 37, 38, 39, 1000}


def test_the_default_path_is_the_packaged_file():
    assert default_vectors_path() == str(PUBLISHED)
    assert load_vectors().format_version == FORMAT_VERSION


def test_other_format_versions_are_refused(tmp_path):
    data = json.loads(PUBLISHED.read_text(encoding="utf-8"))
    data["format_version"] = FORMAT_VERSION + 1
    with pytest.raises(VectorFileError, match="format version"):
        parse_vectors(data)
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    with pytest.raises(VectorFileError, match="not valid JSON"):
        load_vectors(broken)
