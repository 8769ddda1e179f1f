"""The client role: a listener that answers a client under test with the vectors' responses.

A CreateReplicaAssignment request is served only if its body is byte-identical to a
vector's request; anything else is a failure and closes the connection, as a Kafka broker
closes on a request it cannot read.
"""

from __future__ import annotations

import asyncio
import struct
from collections import Counter
from collections.abc import Callable
from typing import Any

import kafka.errors as kafka_errors

from kafka_replica_assignor.protocol.frame import MalformedFrameError, patch_correlation_id, peek_header
from kafka_replica_assignor.protocol.messages import MetadataResponse

from .results import FAIL, PASS, SKIP, Outcome, Report
from .vectors import (
    API_NAMES,
    API_VERSIONS,
    CREATE_REPLICA_ASSIGNMENT,
    METADATA,
    Vector,
    VectorSet,
    fields_of,
    message_from_fields,
    request_body,
    request_class,
    response_frame,
)

_LEN = struct.Struct(">i")
_UNKNOWN_TOPIC = kafka_errors.UnknownTopicOrPartitionError.errno


class VectorListener:
    """Answers a client under test with the vectors' responses.

    ``await start()`` binds (port 0 works; see :attr:`port`), ``await serve()`` runs until
    :meth:`request_stop` or ``max_requests`` requests, then :meth:`report` tells what was
    served and what did not match.
    """

    def __init__(self, vectors: VectorSet, host: str = "127.0.0.1", port: int = 0,
                 max_requests: int | None = None, on_event: Callable[[str], None] | None = None) -> None:
        self.vectors = vectors
        self.host, self.port = host, port
        self.max_requests = max_requests
        self.on_event = on_event or (lambda line: None)
        self.served: Counter[str] = Counter()
        self.failures: list[Outcome] = []
        self.requests = 0
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._stop = asyncio.Event()
        client = vectors.for_role("client")
        self._answers = [v for v in client if v.response is not None]
        self._metadata_unknown_topic = next(
            (v for v in self._answers if v.api_key == METADATA and v.expect["topic_error_codes"]), None)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._connection, self.host, self.port)
        self.host, self.port = self._server.sockets[0].getsockname()[:2]

    def request_stop(self) -> None:
        self._stop.set()

    async def serve(self) -> None:
        if self._server is None:
            await self.start()
        server = self._server
        assert server is not None  # set by start()
        try:
            await self._stop.wait()
        finally:
            server.close()
            for writer in list(self._writers):  # idle clients too: wait_closed waits for them
                writer.close()
            await asyncio.wait_for(server.wait_closed(), 5)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host, port = writer.get_extra_info("peername")[:2]
        peer = f"{host}:{port}"
        self._writers.add(writer)
        try:
            while not self._stop.is_set():
                try:
                    (size,) = _LEN.unpack(await reader.readexactly(4))
                    payload = await reader.readexactly(size) if 0 <= size <= 1 << 24 else None
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                if payload is None:
                    self._fail("frame", f"frame size {size} from {peer}")
                    return
                answer = self._answer(payload, peer)
                self.requests += 1
                if answer is None:
                    return
                writer.write(answer)
                await writer.drain()
                if self.max_requests is not None and self.requests >= self.max_requests:
                    self.request_stop()
        finally:
            self._writers.discard(writer)
            writer.close()

    def _fail(self, check: str, detail: str) -> None:
        self.failures.append(Outcome("client request", check, FAIL, detail))
        self.on_event(f"FAIL {check}: {detail}")

    def _serve(self, vector: Vector, correlation_id: int, peer: str, frame: bytes | None = None) -> bytes:
        self.served[vector.name] += 1
        self.on_event(f"served {vector.name} to {peer}")
        response = vector.response
        assert response is not None  # only vectors with an answer (self._answers) are served
        return patch_correlation_id(frame or response.frame, correlation_id)

    def _answer(self, payload: bytes, peer: str) -> bytes | None:
        try:
            head = peek_header(payload)
        except MalformedFrameError as exc:
            self._fail("header", f"malformed request header from {peer}: {exc}")
            return None
        key, version = head.api_key, head.api_version
        what = f"{API_NAMES.get(key, f'apiKey {key}')} v{version}"
        if key == API_VERSIONS:
            wanted = [v for v in self._answers if v.api_key == key and
                      (v.api_version == version if version <= 3 else v.expect["error_code"] != 0)]
            if not wanted:
                self._fail(what, f"no vector answers {what}")
                return None
            return self._serve(wanted[0], head.correlation_id, peer)
        if key not in (METADATA, CREATE_REPLICA_ASSIGNMENT):
            self._fail(what, f"apiKey {key} is not part of the contract (from {peer})")
            return None
        candidates = [v for v in self._answers if v.api_key == key and v.api_version == version]
        if not candidates:
            self._fail(what, f"{what} is not advertised by this server; the client should not send it")
            return None
        frame = b"\0\0\0\0" + payload
        try:
            body = request_body(frame)
            request = request_class(key).decode(body, version=version)
        except Exception as exc:
            self._fail(what, f"undecodable {what} request: {type(exc).__name__}: {exc}")
            return None
        if key == METADATA:
            base = next((v for v in candidates if not v.expect["topic_error_codes"]), candidates[0])
            return self._serve(base, head.correlation_id, peer, self._metadata(base, version, request))
        for vector in candidates:
            if vector.request_body == body:
                return self._serve(vector, head.correlation_id, peer)
        fields = fields_of(request, request_class(key).json["fields"], version)
        self._fail(what, f"matches no vector (the body must equal a vector's byte for byte): {fields}")
        return None

    def _metadata(self, vector: Vector, version: int, request: Any) -> bytes:
        """The vector's Metadata answer, with this listener as the broker and the named topics unknown."""
        response = vector.response
        assert response is not None and response.fields is not None  # one of self._answers: decoded fields
        fields = dict(response.fields)
        fields["Brokers"] = [{**b, "Host": self.host, "Port": self.port} for b in fields["Brokers"]]
        fields["Topics"] = []
        message = message_from_fields(MetadataResponse, version, fields)
        names = [t.name for t in request.topics or [] if t.name]
        message.topics = [MetadataResponse.MetadataResponseTopic(
            error_code=self._unknown_topic_code(), name=n, is_internal=False, partitions=[]) for n in names]
        return response_frame(message, 0)

    def _unknown_topic_code(self) -> int:
        vector = self._metadata_unknown_topic
        return int(next(iter(vector.expect["topic_error_codes"].values()))) if vector else _UNKNOWN_TOPIC

    def report(self) -> Report:
        outcomes: list[Outcome] = []
        for vector in self._answers:
            count = self.served.get(vector.name, 0)
            if count:
                outcomes.append(Outcome(vector.name, "served", PASS, f"served {count}x: {vector.summary}"))
            elif vector.api_key == CREATE_REPLICA_ASSIGNMENT:
                outcomes.append(Outcome(vector.name, "served", SKIP, "not requested"))
        if not any(self.served.get(v.name) for v in self._answers if v.api_key == CREATE_REPLICA_ASSIGNMENT):
            outcomes.append(Outcome("client", "requests", FAIL,
                                    "no CreateReplicaAssignment request matched a vector"))
        outcomes += self.failures
        return Report(f"on {self.host}:{self.port}", "client", "request bytes", tuple(outcomes))

