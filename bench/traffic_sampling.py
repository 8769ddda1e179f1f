#!/usr/bin/env python3
"""The CPU of sampling traffic (``state --sample-seconds``) on a real Apache Kafka cluster with
10,000 partitions and 20 consumer groups, beyond the sample window.

Target (issue 34): under 5 s of our CPU beyond the window. ``--topics`` topics of
``--partitions-per-topic`` partitions (replication factor 1, so that a 5-node cluster on a small
heap holds them) are created once, with a few records in each partition so that every log has a
size and offsets; ``--groups`` consumer groups each commit an offset for every partition (through
the admin client's OffsetCommit: no consumer runs). No load runs: the CPU of a sample does not
depend on the rates, only on how many partitions and committed offsets it reads. Columns:

- ``read cpu``: the cluster read before any sample (DescribeCluster, Metadata, DescribeLogDirs),
  which ``state`` does without ``--sample-seconds`` too;
- ``sample cpu``: :func:`sample_traffic` (two samples, the log extent, the arithmetic) in
  ``time.process_time`` seconds, all threads of this process (kafka-python's I/O thread decoding
  the answers included); the window is a sleep and costs none;
- ``arithmetic cpu``: :func:`traffic_rates` and :func:`snapshot_with_rates` alone on the same
  samples;
- ``wall beyond window``: the sampler's wall time minus the window.

    python bench/traffic_sampling.py [--bootstrap-server HOST:PORT] [--topics 100]
        [--partitions-per-topic 100] [--groups 20] [--window 2] [--runs 3]

Without ``--bootstrap-server`` a 5-node cluster is started for the run (scripts/kafka_cluster.py)
and stopped after it; with it, the bench's topics (``traffic-bench-*``) and groups are made
there if missing and left in place for the next run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafka_replica_assignor.protocol.cluster_reader import open_admin_client, read_cluster  # noqa: E402
from kafka_replica_assignor.protocol.traffic_sampler import (  # noqa: E402
    read_extent,
    sample_traffic,
    snapshot_with_rates,
    take_sample,
    traffic_rates,
)
from scripts.kafka_cluster import KafkaCluster  # noqa: E402

PREFIX = "traffic-bench"


@contextlib.contextmanager
def cluster(bootstrap: str | None) -> Iterator[str]:
    if bootstrap:
        yield bootstrap
        return
    with tempfile.TemporaryDirectory(prefix="traffic-bench-") as tmp:
        kafka = KafkaCluster(directory=Path(tmp) / "cluster", brokers=4, racks=("r1", "r2", "r3"))
        kafka.up(timeout=300)
        try:
            yield kafka.bootstrap
        finally:
            kafka.down()


def prepare(bootstrap: str, topics: int, per_topic: int, groups: int) -> None:
    """The bench's topics, a few records in every partition, and every group's commits."""
    from kafka import KafkaProducer, TopicPartition
    from kafka.admin import NewTopic
    from kafka.structs import OffsetAndMetadata

    names = [f"{PREFIX}-{i:03d}" for i in range(topics)]
    admin = open_admin_client(bootstrap, 120_000)
    try:
        missing = sorted(set(names) - set(admin.list_topics()))
        for i in range(0, len(missing), 10):
            admin.create_topics([NewTopic(n, per_topic, 1) for n in missing[i:i + 10]], timeout_ms=120_000)
            print(f"created {min(i + 10, len(missing))}/{len(missing)} topics", file=sys.stderr)
        if missing:
            time.sleep(5)
            producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=50, batch_size=1 << 16)
            for name in missing:
                for p in range(per_topic):
                    for _ in range(3):
                        producer.send(name, b"r" * 200, partition=p)
            producer.flush(timeout=300)
            producer.close()
        known = {g["group_id"] for g in admin.list_groups()}
        offsets = {TopicPartition(n, p): OffsetAndMetadata(1, "", -1) for n in names for p in range(per_topic)}
        for g in range(groups):
            group = f"{PREFIX}-group-{g:02d}"
            if group not in known:
                admin.alter_group_offsets(group, offsets)
        print(f"{len(names)} topics x {per_topic} partitions, {groups} groups ready", file=sys.stderr)
    finally:
        admin.close()


def measure(bootstrap: str, window: float) -> dict[str, float]:
    admin = open_admin_client(bootstrap, 120_000)
    try:
        cpu, wall = time.process_time(), time.perf_counter()
        read = read_cluster(admin, with_sizes=True)
        read_cpu = time.process_time() - cpu
        cpu, wall = time.process_time(), time.perf_counter()
        snapshot, rates = sample_traffic(admin, read.snapshot, window)
        sample_cpu, sample_wall = time.process_time() - cpu, time.perf_counter() - wall
        # the arithmetic alone, on samples of the same size
        led = [(p.topic, p.partition) for p in read.snapshot.partitions if p.leader is not None]
        first = take_sample(admin, led)
        second = take_sample(admin, led)
        extent = read_extent(admin, led)
        cpu = time.process_time()
        snapshot_with_rates(read.snapshot, traffic_rates(first, second, extent))
        arithmetic_cpu = time.process_time() - cpu
        committed = sum(len(offsets) for offsets in second.committed.values())
    finally:
        admin.close()
    return {"partitions": len(led), "groups": rates.groups, "committed": committed, "window": window,
            "read_cpu": read_cpu, "sample_cpu": sample_cpu, "arithmetic_cpu": arithmetic_cpu,
            "beyond": sample_wall - window}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-server")
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--partitions-per-topic", type=int, default=100)
    parser.add_argument("--groups", type=int, default=20)
    parser.add_argument("--window", type=float, default=2.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    with cluster(args.bootstrap_server) as bootstrap:
        prepare(bootstrap, args.topics, args.partitions_per_topic, args.groups)
        rows = [measure(bootstrap, args.window) for _ in range(args.runs)]
    print("real Apache Kafka 4.3.1, 5 nodes on one 2-core machine (shared); CPU = time.process_time of this process")
    print(f"{'partitions':>10} {'groups':>6} {'committed':>9} {'window s':>8} {'read cpu':>8} {'sample cpu':>10} "
          f"{'arith cpu':>9} {'wall beyond window':>18}")
    for r in rows:
        print(f"{r['partitions']:>10} {r['groups']:>6} {r['committed']:>9} {r['window']:>8.1f} {r['read_cpu']:>8.2f} "
              f"{r['sample_cpu']:>10.2f} {r['arithmetic_cpu']:>9.3f} {r['beyond']:>18.2f}")
    worst = max(r["sample_cpu"] for r in rows)
    print(f"target: sampling under 5 s of CPU beyond the window: worst {worst:.2f} s "
          f"({'met' if worst < 5 else 'NOT met'})")
    return 0 if worst < 5 else 1


if __name__ == "__main__":
    sys.exit(main())
