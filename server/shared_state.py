"""The server's shared state: one object, built at start-up, read by every connection."""

from __future__ import annotations

import asyncio
import secrets
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from kafka_replica_assignor.assignors import ReplicaAssignor
from kafka_replica_assignor.assignors.memo import PlacementMemo
from kafka_replica_assignor.assignors.registry import is_builtin
from kafka_replica_assignor.protocol.fast_metadata import UnknownTopicsEncoder

from .answer_memory import AnswerMemory
from .config import Listener, ServerConfig
from .connection_rate import ConnectionRate
from .metrics import Metrics
from .placement_slots import PlacementSlots

if TYPE_CHECKING:  # for typing only (no import at start-up, no cycle)
    from .cluster_source import ClusterSource
    from .connection import KafkaConnection
    from .logs import LogStream
    from .request_memory import RequestMemory
    from .security import UserStore


class PlacementSettings(NamedTuple):
    """What every placement job carries from the configuration, built once
    (kafka_replica_assignor.server.handlers.create_replica_assignment.PlacementJob)."""

    assignor_name: str  # resolved where the job runs (kafka_replica_assignor.server.isolation.worker_assignor)
    max_partitions: int  # max.partitions.per.request
    under_replicated: bool  # KIP-409: enable.under.replicated.topic.creation
    min_insync_replicas: int


@dataclass
class ServerState:
    config: ServerConfig
    # the assignor the process runs itself; None: a plug-in that runs only in the worker processes
    # (replica.assignor.isolation=process), never built here (kafka_replica_assignor.server.app)
    assignor: ReplicaAssignor | None
    assignor_name: str
    source: ClusterSource
    # runs the assignments that are not done inline, as calls of plain values (the handler's
    # run(job); this state never crosses to them): kafka_replica_assignor.server.isolation.AssignorPool, worker
    # processes (replica.assignor.isolation=process, the default), or a ThreadPoolExecutor (=thread)
    executor: Executor
    advertised: Listener
    cluster_id: str = "replica-assignor"
    # pre-encoded responses (ApiVersions per version, Metadata per version), built at start-up
    templates: dict[tuple[int, int], bytes] = field(default_factory=dict)
    # Metadata answers naming topics, per version and listener (kafka_replica_assignor.server.handlers.metadata)
    metadata_encoders: dict[tuple[int, Listener], UnknownTopicsEncoder] = field(default_factory=dict)
    connections: set[KafkaConnection] = field(default_factory=set)
    connections_by_ip: dict[str, int] = field(default_factory=dict)
    # set while no connection is open (the graceful shutdown waits for it)
    no_connections: asyncio.Event = field(default_factory=asyncio.Event)
    next_conn_id: int = 0
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    stopping: bool = False
    # the listener connections arrive on (its security protocol decides TLS and SASL)
    listener: Listener | None = None
    # SASL users (kafka_replica_assignor.server.security.UserStore), on SASL listeners only
    users: UserStore | None = None
    # per-process secret: decoy SCRAM salts for unknown users
    auth_secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    metrics: Metrics = field(default_factory=lambda: Metrics(enabled=False))
    # small placements, validated once per distinct draw (kafka_replica_assignor.assignors.memo); None: disabled
    # (replica.assignor.memo.max.entries=0)
    memo: PlacementMemo | None = None
    # queued.max.request.bytes: the request bytes all connections buffer (kafka_replica_assignor.server.request_memory);
    # built by the first connection when None
    request_memory: RequestMemory | None = None
    # the stream the process logs through (kafka_replica_assignor.server.logs.configure_logging), whose lines a
    # connection holds while it answers a read; None: logs are not batched (tests, embedding)
    log_stream: LogStream | None = None
    # queued.max.response.bytes: the unread answer bytes of all connections (kafka_replica_assignor.server.answer_memory)
    answer_memory: AnswerMemory = field(init=False)
    # the placements off the event loop, running and waiting (kafka_replica_assignor.server.placement_slots)
    placement_slots: PlacementSlots = field(init=False)
    # max.connection.creation.rate, overall and per address (kafka_replica_assignor.server.connection_rate)
    connection_rate: ConnectionRate = field(init=False)
    # max.failed.authentication.rate (the same turns)
    failed_authentications: ConnectionRate = field(init=False)

    # the assignor is one of ours (assignors.*): small requests may run it on the event loop,
    # and it needs no worker processes ready at start-up
    assignor_builtin: bool = field(init=False, default=False)
    placement_settings: PlacementSettings = field(init=False)

    def __post_init__(self) -> None:
        self.assignor_builtin = self.assignor is not None and is_builtin(type(self.assignor))
        cfg = self.config
        self.placement_settings = PlacementSettings(self.assignor_name, cfg.max_partitions_per_request,
                                                    cfg.enable_under_replicated_topic_creation,
                                                    cfg.min_insync_replicas)
        if not self.connections:
            self.no_connections.set()
        if self.listener is None:
            self.listener = self.advertised
        self.answer_memory = AnswerMemory(self.config.queued_max_response_bytes)
        # as many connections may wait for their turn as may be open (a socket each, not a slot)
        self.connection_rate = ConnectionRate(cfg.max_connection_creation_rate,
                                              cfg.max_connection_creation_rate_per_ip, cfg.max_connections,
                                              cfg.max_connection_creation_wait_ms / 1000.0)
        # max.failed.authentication.rate: failed authentications answered per second, in turns
        self.failed_authentications = ConnectionRate(cfg.max_failed_authentication_rate, -1, cfg.max_connections,
                                                     cfg.max_failed_authentication_wait_ms / 1000.0)
        self.placement_slots = PlacementSlots(self.config.assignor_max_workers,
                                              self.config.assignor_max_queued_placements)
        if self.memo is None and self.config.memo_max_entries > 0:
            self.memo = PlacementMemo(max_entries=self.config.memo_max_entries)

    def connection_opened(self, connection: KafkaConnection, ip: str) -> None:
        self.connections.add(connection)
        self.connections_by_ip[ip] = self.connections_by_ip.get(ip, 0) + 1
        self.no_connections.clear()

    def connection_closed(self, connection: KafkaConnection, ip: str) -> None:
        self.connections.discard(connection)
        n = self.connections_by_ip.get(ip, 1) - 1
        if n > 0:
            self.connections_by_ip[ip] = n
        else:
            self.connections_by_ip.pop(ip, None)
        if not self.connections:
            self.no_connections.set()

    def new_conn_id(self) -> int:
        self.next_conn_id += 1
        return self.next_conn_id
