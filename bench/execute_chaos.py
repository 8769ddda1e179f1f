#!/usr/bin/env python3
"""``replica-assignor execute`` under faults, runs in a row (issue 31): what
``--runs`` times each way, as a table (the suite runs each way once:
tests/kafka/test_execute_chaos.py).

Each run (tests/kafka/chaos.py): a topic of ``--partitions`` partitions, RF 3,
``min.insync.replicas=2``, a plan moving one replica of each; an idempotent producer
(``acks=all``) writes numbered records and a consumer reads them while a broker in a move in
flight is killed (SIGKILL) and restarted, then the active controller, then the executor
(``kill -9``), which is started again and left to finish (``finish``) or cancelled
(``cancel``). Columns:

- ``acked`` / ``read``: numbered records Kafka acknowledged / found in the log;
- ``lost``: acknowledged, never read; ``dup``: a number at two offsets of the log (in brackets,
  those Kafka's dump of the log shows written by one producer id in two epochs: the client's
  resend after its epoch bump, :class:`tests.kafka.chaos.Twice`, not a failure of the run);
- ``<minISR``: spells of a partition below ``min.insync.replicas`` (or leaderless), and the
  longest; ``restarts``: each crash until the node was back (registered, unfenced);
- ``outside``: partitions neither at their planned replicas (``finish``) nor at their starting
  or planned ones (``cancel``), order included; ``throttles``: throttle configs left;
- ``caps``: with ``--adaptive-cap``, the brokers' caps halved (``-``, a broker behind) and
  raised (``+``);
- ``wall``: the whole run, topic creation and fill included.

    python bench/execute_chaos.py [--runs 3] [--modes finish,cancel] [--partitions 60] [--dir DIR]
        [--adaptive-cap MAX] [--keep DIR]

Without ``--dir`` (a cluster of ``scripts/kafka-cluster.sh up``) a 5-broker cluster is started
for the runs and stopped after them. Exit 1 when a run broke a promise.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from scripts.kafka_cluster import KafkaCluster  # noqa: E402
from tests.kafka.chaos import ChaosOutcome, chaos_run, problems  # noqa: E402
from tests.kafka.conftest import RACKS  # noqa: E402
from tests.kafka.test_execute import admin_for  # noqa: E402


@contextlib.contextmanager
def cluster(directory: Path | None) -> Iterator[KafkaCluster]:
    if directory is not None:
        yield KafkaCluster.load(directory.resolve())
        return
    with tempfile.TemporaryDirectory(prefix="chaos-kafka-") as tmp:
        started = KafkaCluster(directory=Path(tmp) / "cluster", brokers=4, racks=RACKS)
        started.up(timeout=240)
        try:
            yield started
        finally:
            started.down()


def delete_topic(bootstrap: str, topic: str) -> None:
    admin = admin_for(bootstrap)
    try:
        if topic in admin.list_topics():
            admin.delete_topics([topic], timeout_ms=30_000)
    finally:
        admin.close()


def row(run: int, o: ChaosOutcome) -> str:
    restarts = " ".join(f"{role[0]}{node}:{s:.0f}s" for role, node, s in o.restarts)
    return (f"| {run} | {o.mode} | {o.moves} | {o.acked} | {o.read} | {o.lost} | {o.duplicated}"
            f"{f' ({o.client_duplicated} epoch)' if o.client_duplicated else ''} | "
            f"{o.min_isr_spells} ({o.longest_spell_s:.1f} s) | {restarts} | {len(o.outside_plan)} | "
            f"{len(o.throttles_left)} | -{o.caps_lowered} +{o.caps_raised} | {o.wall_s:.0f} s | "
            f"{'ok' if not problems(o) else 'FAILED'} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--modes", default="finish,cancel")
    parser.add_argument("--partitions", type=int, default=60)
    parser.add_argument("--dir", type=Path, help="a running cluster of scripts/kafka-cluster.sh (5 nodes)")
    parser.add_argument("--adaptive-cap", type=int, metavar="MAX",
                        help="run execute with --adaptive-cap MAX (from K = 2); the caps column counts its changes")
    parser.add_argument("--keep", type=Path, help="keep each run's plan and execute output under this directory")
    args = parser.parse_args()
    modes = args.modes.split(",")
    print("| run | mode | moves | acked | read | lost | dup | <minISR (longest) | restarts | outside | "
          "throttles | caps | wall | |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    broken = []
    began = time.monotonic()
    with cluster(args.dir) as kafka, tempfile.TemporaryDirectory(prefix="chaos-") as scratch:
        tmp = args.keep or scratch
        for run in range(1, args.runs + 1):
            for mode in modes:
                work = Path(tmp) / f"{mode}-{run}"
                work.mkdir(parents=True)
                topic = f"chaos-{uuid.uuid4().hex[:8]}"
                try:
                    outcome = chaos_run(kafka, work, topic, mode=mode, partitions=args.partitions,
                                        adaptive_cap=args.adaptive_cap)
                finally:
                    delete_topic(kafka.bootstrap, topic)
                print(row(run, outcome), flush=True)
                broken += [f"run {run} {mode}: {p}" for p in problems(outcome)]
    print(f"\n{args.runs} run(s) x {len(modes)} mode(s) in {time.monotonic() - began:.0f} s; "
          f"{'every promise kept' if not broken else f'{len(broken)} broken'}")
    for line in broken:
        print(line)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
