"""The published wire vectors: the file's format, loading it, and the codec both ways.

``schemas/vectors/create-replica-assignment-v1.json`` (shipped in the package; ``-v1`` is the
version of the file format, not of a message) holds, for every message and version this
server speaks, one or more exchanges: the request frame and the response frame in hex
(length, header and body), the decoded fields of both under the schemas' own field names,
which tagged fields were on the wire, and what a server must do (``expect``), so that an
implementation that is not byte-identical can still be held to the same properties.

Most vectors come from the reference server (``source: "server"``), a few from the codec
alone (``source: "codec"``); :mod:`kafka_replica_assignor.conformance.generator` records them. API keys and header
flexibility come from the message classes (that is, from the JSON schemas).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, cast

from kafka.protocol.api_message import ApiMessage
from kafka.protocol.schemas import BaseField

from kafka_replica_assignor.protocol.frame import peek_header, skip_tagged_fields
from kafka_replica_assignor.protocol.messages import (
    REPLICA_ASSIGNMENT_FEATURE,
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateReplicaAssignmentRequest,
    CreateReplicaAssignmentResponse,
    MetadataRequest,
    MetadataResponse,
)

FORMAT = "kafka-replica-assignor/conformance-vectors"
FORMAT_VERSION = 1
VECTORS_RESOURCE = "vectors/create-replica-assignment-v1.json"
CLIENT_ID = "conformance-kit"
FEATURE_NAME = REPLICA_ASSIGNMENT_FEATURE
REGENERATE = "python -m kafka_replica_assignor.conformance.generator --write"

# the contract's APIs, in the order the file lists them
_MESSAGES: tuple[tuple[type[ApiMessage], type[ApiMessage]], ...] = (
    (ApiVersionsRequest, ApiVersionsResponse),
    (MetadataRequest, MetadataResponse),
    (CreateReplicaAssignmentRequest, CreateReplicaAssignmentResponse),
)
API_VERSIONS = ApiVersionsRequest.API_KEY
METADATA = MetadataRequest.API_KEY
CREATE_REPLICA_ASSIGNMENT = CreateReplicaAssignmentRequest.API_KEY
API_NAMES: dict[int, str] = {request.API_KEY: request.name.removesuffix("Request") for request, _ in _MESSAGES}
_CLASSES = {request.API_KEY: (request, response) for request, response in _MESSAGES}


class VectorFileError(ValueError):
    """The vectors file is missing, of an unknown format version, or malformed."""


# -- the codec, both ways, under the schemas' own field names ---------------------------

def request_class(api_key: int) -> type[ApiMessage]:
    return _CLASSES[api_key][0]


def response_class(api_key: int) -> type[ApiMessage]:
    return _CLASSES[api_key][1]


def request_header_flexible(api_key: int, version: int) -> bool:
    """Request header v2 (with tagged fields) from the first flexible version on."""
    cls = request_class(api_key)
    return bool(cls.flexible_version_q(min(version, cls.max_version)))



def _versions(spec: str | None) -> tuple[int, int] | None:
    return cast("tuple[int, int] | None", BaseField.parse_versions(spec))


def _in(version: int, spec: str | None) -> bool:
    rng = _versions(spec)
    return rng is not None and rng[0] <= version <= rng[1]


def _to_json(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if kind == "uuid":
        return str(value)
    if kind == "bitfield":
        return sorted(value)
    if kind in {"bytes", "records"}:
        return bytes(value).hex()
    return value


def _from_json(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if kind == "uuid":
        return uuid.UUID(value)
    if kind == "bitfield":
        return set(value)
    if kind in {"bytes", "records"}:
        return bytes.fromhex(value)
    return value


def fields_of(message: Any, schema_fields: Sequence[Mapping[str, Any]], version: int) -> dict[str, Any]:
    """A decoded message as ``{SchemaFieldName: value}``, fields of ``version`` only, in schema order."""
    out: dict[str, Any] = {}
    for spec in schema_fields:
        if not _in(version, spec["versions"]):
            continue
        value = getattr(message, BaseField.underscore_name(spec["name"]))
        kind = spec["type"]
        if "fields" in spec:
            if kind.startswith("[]"):
                value = None if value is None else [fields_of(v, spec["fields"], version) for v in value]
            else:
                value = None if value is None else fields_of(value, spec["fields"], version)
        elif kind.startswith("[]"):
            value = None if value is None else [_to_json(v, kind[2:]) for v in value]
        else:
            value = _to_json(value, kind)
        out[spec["name"]] = value
    return out


def _kwargs(holder: Any, schema_fields: Sequence[Mapping[str, Any]], values: Mapping[str, Any]) -> dict[str, Any]:
    known = {spec["name"]: spec for spec in schema_fields}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise VectorFileError(f"unknown fields {unknown} for {getattr(holder, '__name__', holder)}")
    kwargs: dict[str, Any] = {}
    for name, value in values.items():
        spec = known[name]
        kind = spec["type"]
        if "fields" in spec and value is not None:
            child = getattr(holder, kind[2:] if kind.startswith("[]") else kind)
            if kind.startswith("[]"):
                value = [child(**_kwargs(child, spec["fields"], v)) for v in value]
            else:
                value = child(**_kwargs(child, spec["fields"], value))
        elif kind.startswith("[]") and value is not None:
            value = [_from_json(v, kind[2:]) for v in value]
        else:
            value = _from_json(value, kind)
        kwargs[BaseField.underscore_name(name)] = value
    return kwargs


def message_from_fields(cls: type[ApiMessage], version: int, values: Mapping[str, Any]) -> ApiMessage:
    """The message of class ``cls`` at ``version`` holding ``values`` (schema field names)."""
    return cls(version=version, **_kwargs(cls, cls.json["fields"], values))


def tagged_fields_present(message: ApiMessage, cls: type[ApiMessage], version: int) -> list[str]:
    """Schema names of the top-level tagged fields the decoded message carried on the wire."""
    present = set(message.tags or ())
    return [spec["name"] for spec in cls.json["fields"]
            if _in(version, spec.get("taggedVersions")) and BaseField.underscore_name(spec["name"]) in present]


def request_frame(message: ApiMessage, correlation_id: int, client_id: str | None = CLIENT_ID) -> bytes:
    """A framed request (length, request header, body) through the codec."""
    message.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(message.encode(header=True, framed=True))


def response_frame(message: ApiMessage, correlation_id: int) -> bytes:
    """A framed response (length, response header, body) through the codec."""
    message.with_header(correlation_id=correlation_id)
    return bytes(message.encode(header=True, framed=True))


def request_body(frame: bytes) -> bytes:
    """The body of a framed request: what is left after the length and the request header."""
    payload = memoryview(frame)[4:]
    head = peek_header(payload)
    offset = head.body_offset
    if head.api_key in _CLASSES and request_header_flexible(head.api_key, head.api_version):
        offset = skip_tagged_fields(payload, offset)
    return bytes(payload[offset:])


def decode_response(api_key: int, body_version: int, frame: bytes) -> ApiMessage:
    """A framed response decoded by the codec (header included)."""
    return response_class(api_key).decode(frame, version=body_version, header=True, framed=True)


# -- the vectors file --------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class WireMessage:
    """One side of an exchange."""

    version: int  # the version the body is encoded in (the fallback answers v0 to a v4 request)
    header: Mapping[str, Any]
    fields: Mapping[str, Any] | None  # None for a request that is malformed on purpose
    tagged_fields: tuple[str, ...]
    frame: bytes

    @property
    def correlation_id(self) -> int:
        return int(self.header["CorrelationId"])


@dataclass(frozen=True, slots=True)
class Vector:
    name: str
    summary: str
    api_key: int
    api_version: int
    roles: tuple[str, ...]  # "server": asked of servers under test; "client": served to clients
    source: str  # "server" (the reference server's bytes) or "codec"
    deterministic: bool  # False when bytes depend on the deployment (Metadata: host, port)
    request: WireMessage
    response: WireMessage | None  # None: the server closes the connection
    expect: Mapping[str, Any]

    @property
    def api_name(self) -> str:
        return API_NAMES.get(self.api_key, str(self.api_key))

    @property
    def expects_disconnect(self) -> bool:
        return self.response is None

    @property
    def request_body(self) -> bytes:
        return request_body(self.request.frame)


@dataclass(frozen=True, slots=True)
class VectorSet:
    format_version: int
    reference: Mapping[str, Any]
    apis: Mapping[str, Any]
    vectors: tuple[Vector, ...]
    path: str = ""

    def for_role(self, role: str) -> tuple[Vector, ...]:
        return tuple(v for v in self.vectors if role in v.roles)

    def named(self, name: str) -> Vector:
        for v in self.vectors:
            if v.name == name:
                return v
        raise KeyError(name)

    @property
    def brokers(self) -> dict[int, str | None]:
        return {b["id"]: b.get("rack") for b in self.reference["cluster"]["brokers"]}


def default_vectors_path() -> str:
    from kafka_replica_assignor import schemas

    return str(resources.files(schemas).joinpath(VECTORS_RESOURCE))


def _message(data: Mapping[str, Any]) -> WireMessage:
    return WireMessage(version=data["version"], header=dict(data["header"]), fields=data.get("fields"),
                       tagged_fields=tuple(data.get("tagged_fields", ())), frame=bytes.fromhex(data["hex"]))


def parse_vectors(data: Mapping[str, Any], path: str = "") -> VectorSet:
    if data.get("format") != FORMAT:
        raise VectorFileError(f"{path or 'vectors'}: not a conformance vectors file (format {data.get('format')!r})")
    if data.get("format_version") != FORMAT_VERSION:
        raise VectorFileError(f"{path or 'vectors'}: format version {data.get('format_version')!r}; "
                              f"this kit reads version {FORMAT_VERSION}")
    try:
        vectors = tuple(
            Vector(name=v["name"], summary=v["summary"], api_key=v["api_key"], api_version=v["api_version"],
                   roles=tuple(v["roles"]), source=v["source"], deterministic=v["deterministic"],
                   request=_message(v["request"]),
                   response=None if v["response"] is None else _message(v["response"]),
                   expect=dict(v["expect"]))
            for v in data["vectors"])
    except (KeyError, TypeError, ValueError) as exc:
        raise VectorFileError(f"{path or 'vectors'}: malformed vector: {type(exc).__name__}: {exc}") from None
    names = [v.name for v in vectors]
    if len(set(names)) != len(names):
        raise VectorFileError(f"{path or 'vectors'}: duplicate vector names")
    return VectorSet(data["format_version"], data["reference_server"], data["apis"], vectors, path)


def load_vectors(path: str | os.PathLike[str] | None = None) -> VectorSet:
    """The published vectors (or the file at ``path``)."""
    where = str(path) if path is not None else default_vectors_path()
    try:
        text = Path(where).read_text(encoding="utf-8")
    except OSError as exc:
        raise VectorFileError(f"cannot read vectors {where}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise VectorFileError(f"vectors {where} is not valid JSON: {exc}") from None
    return parse_vectors(data, where)


def dumps(data: Mapping[str, Any]) -> str:
    """Stable, reviewable JSON: one line per small object or list, two-space indents."""
    return _dump(data, 0) + "\n"


def _dump(value: Any, indent: int) -> str:
    flat = json.dumps(value, ensure_ascii=False)
    if not isinstance(value, (dict, list)) or len(flat) + indent <= 100 or not value:
        return flat
    pad, inner = " " * indent, " " * (indent + 2)
    if isinstance(value, list):
        items = [inner + _dump(v, indent + 2) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    items = [f"{inner}{json.dumps(k)}: {_dump(v, indent + 2)}" for k, v in value.items()]
    return "{\n" + ",\n".join(items) + "\n" + pad + "}"

