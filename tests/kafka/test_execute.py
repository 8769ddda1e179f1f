"""``replica-assignor execute`` on a real Apache Kafka cluster (the session's 5 brokers).

Topics are filled with incompressible records so that a move copies megabytes, and the
throttle is low enough that a move takes seconds: what an operator sees on a real cluster,
in miniature. Each test makes its plan directory with the planner's own writer
(:func:`planner.outputs.render_outputs`), so the executor reads exactly what ``balance``
writes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from assignors.snapshot import ClusterSnapshot
from planner.outputs import render_outputs, write_outputs
from planner.plan import MoveKind, Working
from planner.settings import PlanSettings
from protocol.cluster_reader import open_admin_client, read_cluster
from protocol.reassignment import ReassignmentAdmin
from planner.executor_throttles import BROKER_RATES, TOPIC_REPLICAS

REPO = Path(__file__).resolve().parents[2]
Key = tuple[str, int]


# ---- helpers (also used by bench/execute_throttled.py) ------------------------------------------

def admin_for(bootstrap: str) -> Any:
    return open_admin_client(bootstrap, 30_000)


def create_topic(bootstrap: str, name: str, assignment: Mapping[int, Sequence[int]]) -> None:
    from kafka.admin import NewTopic

    admin = admin_for(bootstrap)
    try:
        admin.create_topics([NewTopic(name, replica_assignments={p: list(r) for p, r in assignment.items()})],
                            timeout_ms=30_000)
    finally:
        admin.close()


def fill(bootstrap: str, topic: str, partitions: Sequence[int], bytes_per_partition: int,
         record_bytes: int = 64 * 1024) -> None:
    """Incompressible records, ``bytes_per_partition`` (rounded up to records) in each partition."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=20, max_request_size=2 * 1024 * 1024,
                             batch_size=512 * 1024, request_timeout_ms=60_000)
    try:
        count = -(-bytes_per_partition // record_bytes)
        for p in partitions:
            for _ in range(count):
                producer.send(topic, os.urandom(record_bytes), partition=p)
        producer.flush(120)
    finally:
        producer.close(10)


def snapshot_of(bootstrap: str, topics: Sequence[str]) -> ClusterSnapshot:
    admin = admin_for(bootstrap)
    try:
        snap = read_cluster(admin, with_sizes=True).snapshot
    finally:
        admin.close()
    return ClusterSnapshot(snap.brokers, tuple(p for p in snap.partitions if p.topic in topics))


def write_plan(out: Path, snapshot: ClusterSnapshot, targets: Mapping[Key, Sequence[int]],
               settings: PlanSettings | None = None) -> Path:
    """A plan directory exactly as ``balance --out`` writes it, moving ``targets``."""
    work = Working(snapshot)
    index = {(p.topic, p.partition): i for i, p in enumerate(snapshot.partitions)}
    for key, target in targets.items():
        i = index[key]
        old = list(work.original[i])
        came = [b for b in target if b not in old]
        went = [b for b in old if b not in target]
        for src, dst in zip(went, came, strict=True):
            work.record(i, src, dst, MoveKind.REPLICA)
        if not came and old[0] != target[0]:
            work.record(i, old[0], target[0], MoveKind.LEADER)
        work.replicas[i] = list(target)
    plan = work.plan()
    write_outputs(render_outputs(plan, settings or PlanSettings("replica"), charts=False), str(out))
    return out


def execute(*args: str, timeout: float = 170) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli.main", "execute", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def start_execute(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "cli.main", "execute", *args], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def throttle_configs(bootstrap: str, topics: Sequence[str]) -> dict[str, dict[str, str]]:
    admin = admin_for(bootstrap)
    try:
        return ReassignmentAdmin(admin).configs(range(5), topics, BROKER_RATES + TOPIC_REPLICAS)
    finally:
        admin.close()


def replicas_of(bootstrap: str, topics: Sequence[str]) -> dict[Key, tuple[int, ...]]:
    admin = admin_for(bootstrap)
    try:
        return ReassignmentAdmin(admin).replicas(topics)
    finally:
        admin.close()
