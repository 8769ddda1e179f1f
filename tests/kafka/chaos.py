"""A plan executed while brokers crash, and the traffic that shows nothing was lost (issue 31).

Run by ``tests/kafka/test_execute_chaos.py`` (each way once) and ``bench/execute_chaos.py`` (runs
in a row, a table). One run, :func:`chaos_run`:

1. A topic of RF 3 with ``min.insync.replicas=2``, filled with incompressible records so that a
   move copies bytes, and a plan that moves one replica of every partition (half of them the
   leader's, so the order matters).
2. :class:`Traffic` starts: an idempotent producer (``acks=all``) writes numbered records, a
   consumer reads them, and a watcher samples every partition's ISR (Metadata, every 0.5 s),
   timing each spell below ``min.insync.replicas`` (or without a leader).
3. ``execute`` runs at a low throttle. Once moves are in flight, a broker that is a source or a
   destination of one is killed (SIGKILL) and started again; once every partition is whole
   again, the same for the active controller (DescribeQuorum's leader); then the executor
   itself is killed (``kill -9``) and started again, and either left to finish (at a higher
   throttle) or cancelled (``execute --cancel``) while moves are in flight.
4. The producer stops and flushes; the consumer reads up to every partition's high watermark,
   asked again 2 s later until it stays (a leader elected a moment ago, by the plan's leader
   election, can show one behind its predecessor's).

:class:`ChaosOutcome` holds what the assertions and the table need: records acknowledged, read,
lost (acknowledged, never read) and duplicated (one number at two offsets of the log; of those,
the ones Kafka's ``kafka-dump-log`` shows written by one producer id in two epochs, the client's
resend after an epoch bump: :class:`Twice`; the producer's idempotence log is kept beside the
plan, ``producer-eos.log``), the
longest spell below ``min.insync.replicas`` and each restart's time, the partitions outside the
plan, the throttles and reassignments left, and the run's wall time.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_replica_assignor.planner.request import PlanRequest
from scripts.kafka_cluster import KafkaCluster
from tests.kafka.test_execute import (
    REPO,
    admin_for,
    events,
    fill,
    ongoing,
    replicas_of,
    snapshot_of,
    throttle_configs,
    write_plan,
)

Key = tuple[str, int]
RF = 3
MIN_ISR = 2
BROKERS = 5


def _quiet(name: str, to: Path | None = None) -> logging.Logger:
    """librdkafka's logs (brokers refusing connections: expected here) to a logger of their own,
    dropped, or written to ``to``."""
    logger = logging.getLogger(f"chaos.{name}.{uuid.uuid4().hex[:6]}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    if to is None:
        logger.addHandler(logging.NullHandler())
    else:
        handler = logging.FileHandler(to)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        logger.addHandler(handler)
    return logger


class Producer(threading.Thread):
    """Numbered records (key and value: the number as text), idempotent, ``acks=all``, at about
    ``rate`` a second; ``acked`` the numbers Kafka acknowledged, ``failed`` those it did not."""

    def __init__(self, bootstrap: str, topic: str, rate: float, log: Path | None = None) -> None:
        from confluent_kafka import Producer as KafkaProducer

        super().__init__(name="chaos-producer", daemon=True)
        self.topic, self.rate = topic, rate
        self.fatal: list[str] = []
        # with ``log``: librdkafka's idempotence events (producer id, epoch bumps, retries) there
        self.producer = KafkaProducer({
            "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 5,
            "message.timeout.ms": 300_000, "retry.backoff.ms": 100, "logger": _quiet("producer", log),
            "error_cb": self._error, **({"debug": "eos"} if log is not None else {})})
        self.stop = threading.Event()
        self.sent = 0
        self.acked: list[int] = []
        self.placed: dict[int, tuple[int, int]] = {}     # acknowledged number -> (partition, offset)
        self.failed: dict[int, str] = {}
        self.unflushed = 0

    def _error(self, err: Any) -> None:
        if err.fatal():
            self.fatal.append(str(err))

    def _delivered(self, err: Any, msg: Any) -> None:
        number = int(msg.key())
        if err is None:
            self.acked.append(number)
            self.placed[number] = (msg.partition(), msg.offset())
        else:
            self.failed[number] = str(err)

    def run(self) -> None:
        every = 1.0 / self.rate
        due = time.monotonic()
        while not self.stop.is_set():
            text = str(self.sent).encode()
            try:
                self.producer.produce(self.topic, key=text, value=text, on_delivery=self._delivered)
            except BufferError:
                self.producer.poll(0.1)
                continue
            self.sent += 1
            self.producer.poll(0)
            due += every
            self.stop.wait(max(0.0, due - time.monotonic()))
        self.unflushed = self.producer.flush(120)


class Consumer(threading.Thread):
    """Every record of ``topic`` from the beginning, by partition and offset (a record read twice
    at one offset is one record of the log); the numbered ones in ``numbers``. After
    ``draining``, reads up to each partition's high watermark (asked until it stays) and ends."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        from confluent_kafka import Consumer as KafkaConsumer

        super().__init__(name="chaos-consumer", daemon=True)
        self.topic, self.partitions = topic, partitions
        self.consumer = KafkaConsumer({
            "bootstrap.servers": bootstrap, "group.id": f"chaos-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False, "auto.offset.reset": "earliest", "logger": _quiet("consumer"),
            "error_cb": lambda err: None})
        self.numbers: dict[tuple[int, int], int] = {}
        self.next_offset: dict[int, int] = {}
        self.draining = threading.Event()
        self.caught_up = False
        self.errors: list[str] = []

    def run(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        self.consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in range(self.partitions)])
        ends: dict[int, int] | None = None
        deadline = 0.0
        try:
            while True:
                for msg in self.consumer.consume(1000, timeout=0.3):
                    if msg.error():
                        self.errors.append(str(msg.error()))
                        continue
                    part, offset = msg.partition(), msg.offset()
                    self.next_offset[part] = max(self.next_offset.get(part, 0), offset + 1)
                    if msg.key() is not None:
                        self.numbers[(part, offset)] = int(msg.key())
                if self.draining.is_set() and ends is None:
                    ends = self.high_watermarks()
                    deadline = time.monotonic() + 120
                if ends is not None:
                    if all(self.next_offset.get(p, 0) >= end for p, end in ends.items()):
                        # a leader elected a moment ago can show a high watermark behind its
                        # predecessor's until its followers fetch again: ask again, a while later
                        time.sleep(2.0)
                        again = self.high_watermarks()
                        if again == ends and len(ends) == self.partitions:
                            self.caught_up = True
                            return
                        ends = again
                    if time.monotonic() > deadline:
                        return
        finally:
            self.consumer.close()

    def high_watermarks(self) -> dict[int, int]:
        from confluent_kafka import TopicPartition

        ends = {}
        for p in range(self.partitions):
            for _ in range(30):
                try:
                    ends[p] = self.consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=5)[1]
                    break
                except Exception:  # noqa: BLE001 - a leader moving: ask again
                    time.sleep(0.5)
        return ends


class IsrWatch(threading.Thread):
    """Every partition's ISR (Metadata) every ``every`` seconds; ``spells`` the finished spells
    below ``min.insync.replicas`` or without a leader, ``(partition, seconds)``."""

    def __init__(self, bootstrap: str, topic: str, every: float = 0.5) -> None:
        from confluent_kafka.admin import AdminClient

        super().__init__(name="chaos-isr", daemon=True)
        self.topic, self.every = topic, every
        self.admin = AdminClient({"bootstrap.servers": bootstrap, "logger": _quiet("isr"),
                                  "error_cb": lambda err: None})
        self.stop = threading.Event()
        self.since: dict[int, float] = {}
        self.spells: list[tuple[int, float]] = []
        self.isr: dict[int, int] = {}
        self.sampled_at = 0.0
        self.samples = 0

    def run(self) -> None:
        while not self.stop.wait(self.every):
            try:
                meta = self.admin.list_topics(self.topic, timeout=5).topics[self.topic]
            except Exception:  # noqa: BLE001 - no broker answered this time
                continue
            if meta.error is not None:
                continue
            now = time.monotonic()
            for p, pm in meta.partitions.items():
                low = pm.leader < 0 or len(pm.isrs) < MIN_ISR
                if low:
                    self.since.setdefault(p, now)
                elif p in self.since:
                    self.spells.append((p, now - self.since.pop(p)))
                self.isr[p] = len(pm.isrs)
            self.sampled_at, self.samples = now, self.samples + 1
        now = time.monotonic()
        self.spells += [(p, now - began) for p, began in self.since.items()]

    def whole(self, after: float) -> bool:
        """Every partition had its whole ISR (RF replicas or more) in a sample taken after ``after``."""
        return self.sampled_at > after and bool(self.isr) and min(self.isr.values()) >= RF


@dataclass
class Traffic:
    producer: Producer
    consumer: Consumer
    watch: IsrWatch

    @classmethod
    def start(cls, bootstrap: str, topic: str, partitions: int, rate: float,
              producer_log: Path | None = None) -> Traffic:
        traffic = cls(Producer(bootstrap, topic, rate, producer_log), Consumer(bootstrap, topic, partitions),
                      IsrWatch(bootstrap, topic))
        for thread in (traffic.watch, traffic.consumer, traffic.producer):
            thread.start()
        return traffic

    def finish(self) -> None:
        self.producer.stop.set()
        self.producer.join(150)
        self.consumer.draining.set()
        self.consumer.join(150)
        self.watch.stop.set()
        self.watch.join(30)


@dataclass
class ChaosOutcome:
    mode: str
    moves: int
    acked: int = 0
    read: int = 0
    lost: int = 0
    duplicated: int = 0
    client_duplicated: int = 0     # of ``duplicated``: copies the client wrote in two epochs (Twice.epoch_bump)
    not_acked: int = 0
    unflushed: int = 0
    fatal: list[str] = field(default_factory=list)
    consumer_caught_up: bool = False
    min_isr_spells: int = 0
    longest_spell_s: float = 0.0
    restarts: list[tuple[str, int, float]] = field(default_factory=list)   # (role, node, seconds down)
    outside_plan: list[str] = field(default_factory=list)
    throttles_left: dict[str, dict[str, str]] = field(default_factory=dict)
    reassignments_left: int = 0
    exit_codes: list[int] = field(default_factory=list)
    poll_failures: int = 0
    cancelled: int = 0
    caps_lowered: int = 0          # --adaptive-cap: a broker's cap halved (behind), raised
    caps_raised: int = 0
    wall_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def longest_restart_s(self) -> float:
        return max((s for _, _, s in self.restarts), default=0.0)


class Execution:
    """``replica-assignor execute`` in the background, its JSON lines in a file."""

    def __init__(self, out: Path, *args: str) -> None:
        self.out = out
        self.stdout = open(out, "w")  # noqa: SIM115 - closed in wait()
        self.proc = subprocess.Popen([sys.executable, "-m", "kafka_replica_assignor.cli.main", "execute", *args],
                                     cwd=REPO, stdout=self.stdout, stderr=subprocess.PIPE, text=True)

    def events(self, name: str) -> list[dict[str, Any]]:
        return [e for e in events(self.out.read_text()) if e["event"] == name]

    def running(self) -> bool:
        return self.proc.poll() is None

    def wait(self, timeout: float) -> tuple[int, str]:
        try:
            _, err = self.proc.communicate(timeout=timeout)
        finally:
            self.stdout.close()
        return self.proc.returncode, err

    def kill(self) -> None:
        if self.running():
            os.kill(self.proc.pid, signal.SIGKILL)
        self.wait(30)


def _until(what: str, check: Callable[[], bool], timeout: float, every: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def active_controller(bootstrap: str) -> int:
    """The leader of the metadata quorum (DescribeQuorum): DescribeCluster's ``controller_id`` is
    any broker under KRaft."""
    admin = admin_for(bootstrap)
    try:
        return int(admin.describe_metadata_quorum()["topics"][0]["partitions"][0]["leader_id"])
    finally:
        admin.close()


def _moving_brokers(bootstrap: str, topic: str) -> tuple[set[int], set[int]]:
    """(adding, removing) brokers of the topic's reassignments in progress."""
    adding: set[int] = set()
    removing: set[int] = set()
    for (t, _), r in ongoing(bootstrap).items():
        if t == topic:
            adding |= set(r.adding)
            removing |= set(r.removing)
    return adding, removing


def plan_topic(cluster: KafkaCluster, topic: str, partitions: int, size: int
               ) -> tuple[dict[Key, tuple[int, ...]], dict[Key, tuple[int, ...]]]:
    """The topic (RF 3, ``min.insync.replicas=2``) created and filled; its starting replicas and
    the targets: even partitions move their last follower one broker on, odd ones their leader
    (the new replica leads)."""
    from kafka.admin import NewTopic

    start = {p: (p % BROKERS, (p + 1) % BROKERS, (p + 2) % BROKERS) for p in range(partitions)}
    admin = admin_for(cluster.bootstrap)
    try:
        admin.create_topics([NewTopic(topic, replica_assignments={p: list(r) for p, r in start.items()},
                                      topic_configs={"min.insync.replicas": str(MIN_ISR)})], timeout_ms=30_000)
    finally:
        admin.close()
    fill(cluster.bootstrap, topic, range(partitions), size, record_bytes=50_000)
    targets = {(topic, p): ((a, b, (p + 3) % BROKERS) if p % 2 == 0 else ((p + 3) % BROKERS, b, c))
               for p, (a, b, c) in start.items()}
    return {(topic, p): r for p, r in start.items()}, targets


def _whole(traffic: Traffic, when: str) -> None:
    asked = time.monotonic()
    _until(f"every partition's whole ISR {when}", lambda: traffic.watch.whole(asked), 90)


def _crash(cluster: KafkaCluster, node_id: int, role: str, outcome: ChaosOutcome, down_s: float) -> None:
    began = time.monotonic()
    cluster.kill_node(node_id)
    time.sleep(down_s)
    cluster.start_node(node_id)
    cluster.wait_ready(timeout=150)
    outcome.restarts.append((role, node_id, round(time.monotonic() - began, 1)))


def chaos_run(cluster: KafkaCluster, workdir: Path, topic: str, *, mode: str = "finish", partitions: int = 60,
              size: int = 150_000, throttle: int = 20_000, resumed_throttle: int = 5_000_000,
              per_broker: int = 2, rate: float = 150.0, down_s: float = 3.0,
              adaptive_cap: int | None = None) -> ChaosOutcome:
    """One run (module doc); ``mode`` ``finish`` or ``cancel``. Every node it killed is running
    again and no execution it started is left when it returns or raises."""
    assert mode in ("finish", "cancel")
    began = time.monotonic()
    outcome = ChaosOutcome(mode=mode, moves=partitions)
    start, targets = plan_topic(cluster, topic, partitions, size)
    plan = write_plan(workdir / "plan", snapshot_of(cluster.bootstrap, [topic]), targets,
                      PlanRequest("replica", throttle=throttle))
    args = ("--plan", str(plan), "--bootstrap-server", cluster.bootstrap, "--max-moves-per-broker",
            str(per_broker), "--poll-interval-ms", "300",
            *(("--adaptive-cap", str(adaptive_cap)) if adaptive_cap else ()))
    traffic = Traffic.start(cluster.bootstrap, topic, partitions, rate, workdir / "producer-eos.log")
    runs: list[Execution] = []
    try:
        first = Execution(workdir / "first.jsonl", *args)
        runs.append(first)
        _until("moves in flight", lambda: bool(first.events("moves_submitted")) or not first.running(), 90)
        _whole(traffic, "before the first crash")
        controller = active_controller(cluster.bootstrap)
        victims: list[int] = []

        def in_a_move() -> bool:
            # Kafka's replication quota measures the rate over a window of samples (11 of 1 s), so
            # the first bytes after the throttle is set pass at full speed: a small move of the
            # first wave can end before it is seen; wait for one that is
            adding, removing = _moving_brokers(cluster.bootstrap, topic)
            victims[:] = sorted(adding - {controller}) or sorted(removing - {controller})
            return bool(victims) or not first.running()

        _until(f"a broker besides the controller {controller} in a move in flight", in_a_move, 60)
        assert first.running(), first.wait(30)
        _crash(cluster, victims[0], "broker", outcome, down_s)
        _whole(traffic, "after the broker's restart")
        assert first.running(), f"the plan ended before the controller's crash: {first.wait(30)}"
        controller = active_controller(cluster.bootstrap)
        _crash(cluster, controller, "controller", outcome, down_s)
        _whole(traffic, "after the controller's restart")
        assert first.running(), f"the plan ended before the executor's kill: {first.wait(30)}"
        _until("moves in flight again", lambda: bool(_moving_brokers(cluster.bootstrap, topic)[0]), 60)
        first.kill()
        outcome.exit_codes.append(first.proc.returncode)
        # finish: at a throttle that ends it quickly; cancel: slow still, so that moves are in flight
        second = Execution(workdir / "second.jsonl", *args, "--throttle",
                           str(resumed_throttle if mode == "finish" else throttle))
        runs.append(second)
        if mode == "cancel":
            _until("the resumed run's moves in flight",
                   lambda: bool(second.events("execution_started")) and bool(_moving_brokers(cluster.bootstrap,
                                                                                             topic)[0])
                   or not second.running(), 90)
            cancel = subprocess.run([sys.executable, "-m", "kafka_replica_assignor.cli.main", "execute", "--plan",
                                     str(plan), "--cancel"], cwd=REPO, capture_output=True, text=True, timeout=200)
            outcome.notes.append(f"cancel exit {cancel.returncode}: {cancel.stderr.strip()[-300:]}")
        code, err = second.wait(240)
        outcome.exit_codes.append(code)
        if code != 0:
            outcome.notes.append(err.strip()[-500:])
        outcome.cancelled = sum(len(e["partitions"]) for e in second.events("cancelling"))
        outcome.poll_failures = sum(len(run.events("poll_failed")) for run in runs)
        changes = [v for run in runs for e in run.events("caps_changed") for v in e["brokers"].values()]
        outcome.caps_lowered = sum(1 for v in changes if v["why"].startswith("behind"))
        outcome.caps_raised = len(changes) - outcome.caps_lowered
    finally:
        for run in runs:
            if run.running():
                run.kill()
        down = [node.node_id for node in cluster.nodes if not cluster.alive(node.node_id)]
        for node_id in down:
            cluster.start_node(node_id)
        if down:
            cluster.wait_ready(timeout=150)
        traffic.finish()
    _account(outcome, traffic, cluster, topic, start, targets)
    outcome.wall_s = round(time.monotonic() - began, 1)
    return outcome


def _account(outcome: ChaosOutcome, traffic: Traffic, cluster: KafkaCluster, topic: str,
             start: Mapping[Key, tuple[int, ...]], targets: Mapping[Key, tuple[int, ...]]) -> None:
    producer, consumer, watch = traffic.producer, traffic.consumer, traffic.watch
    acked = Counter(producer.acked)
    at_offsets = Counter(consumer.numbers.values())
    outcome.acked = len(acked)
    outcome.read = len(at_offsets)
    lost = sorted(n for n in acked if n not in at_offsets)
    outcome.lost = len(lost)
    for n in lost[:10]:     # acknowledged at (partition, offset): what the log holds there, how far it was read
        part, offset = producer.placed[n]
        outcome.notes.append(f"lost {n} (of 0..{max(acked)}), acknowledged at {part}:{offset}; read there: "
                             f"{consumer.numbers.get((part, offset))}; read up to {consumer.next_offset.get(part)}")
    outcome.duplicated = sum(1 for n, c in at_offsets.items() if c > 1) + sum(1 for c in acked.values() if c > 1)
    twice = {n for n, c in at_offsets.items() if c > 1}
    if twice:
        found = find_twice(cluster, topic, consumer.numbers, twice)
        outcome.client_duplicated = sum(1 for t in found if t.epoch_bump)
        outcome.notes += [t.text() for t in found[:10]]
    outcome.not_acked = len(producer.failed)
    outcome.unflushed = producer.unflushed
    outcome.fatal = producer.fatal
    outcome.consumer_caught_up = consumer.caught_up
    outcome.min_isr_spells = len(watch.spells)
    outcome.longest_spell_s = round(max((s for _, s in watch.spells), default=0.0), 1)
    now = replicas_of(cluster.bootstrap, [topic])
    for key, target in targets.items():
        allowed = (target,) if outcome.mode == "finish" else (target, start[key])
        if now.get(key) not in allowed:
            outcome.outside_plan.append(f"{key[0]}-{key[1]}: {list(now.get(key, ()))}")
    outcome.throttles_left = throttle_configs(cluster.bootstrap, [topic])
    outcome.reassignments_left = sum(1 for t, _ in ongoing(cluster.bootstrap) if t == topic)


@dataclass(frozen=True)
class Twice:
    """A number found at two offsets of a partition's log, and the record batches that hold each
    copy as Kafka's own ``kafka-dump-log`` shows them on a replica: ``(producerId, producerEpoch,
    baseSequence)``, or none when the dump did not show it."""

    number: int
    partition: int
    offsets: tuple[int, ...]
    batches: tuple[tuple[int, int, int] | None, ...]

    @property
    def epoch_bump(self) -> bool:
        """The copies were written by one producer id in different epochs: the client sent the
        record again after bumping its epoch (librdkafka does so on an out-of-order-sequence
        answer for any partition, issue 4953 of librdkafka), which the broker cannot tell from a
        new record by design. Anything else (one epoch twice, two producer ids, a copy the dump
        did not show) is a record the log took twice for another reason."""
        if any(b is None for b in self.batches):
            return False
        ids = {b[0] for b in self.batches if b is not None}
        epochs = {b[1] for b in self.batches if b is not None}
        return len(ids) == 1 and len(epochs) == len(self.batches)

    def text(self) -> str:
        copies = ", ".join(f"offset {o}: " + ("not in the dump" if b is None else
                                              f"producer {b[0]} epoch {b[1]} sequence {b[2]}")
                           for o, b in zip(self.offsets, self.batches, strict=True))
        why = "the client's epoch bump" if self.epoch_bump else "not the client's epoch bump"
        return f"twice {self.number} in partition {self.partition} ({copies}): {why}"


_BATCH = re.compile(r"baseOffset: (\d+) lastOffset: (\d+) .*?baseSequence: (-?\d+) .*?"
                    r"producerId: (-?\d+) producerEpoch: (-?\d+)")


def dump_batches(cluster: KafkaCluster, topic: str, partition: int) -> list[tuple[int, int, int, int, int]] | None:
    """``(baseOffset, lastOffset, producerId, producerEpoch, baseSequence)`` of every record batch
    of a partition, from ``kafka-dump-log`` on the first replica's log found; None when none is."""
    found = [d / f"{topic}-{partition}" for node in cluster.nodes for d in cluster.log_dirs(node.node_id)
             if (d / f"{topic}-{partition}").is_dir()]
    if not found:
        return None
    files = sorted(str(f) for f in found[0].glob("*.log"))
    dump = cluster.tool("kafka-dump-log", "--files", ",".join(files))
    out = []
    for line in dump.stdout.splitlines():
        match = _BATCH.search(line)
        if match:
            base, last, sequence, pid, epoch = map(int, match.groups())
            out.append((base, last, pid, epoch, sequence))
    return out


def find_twice(cluster: KafkaCluster, topic: str, numbers: Mapping[tuple[int, int], int],
               twice: Collection[int]) -> list[Twice]:
    """Each number of ``twice`` (found at two offsets by the consumer: ``numbers``), with the
    batches that hold its copies (:class:`Twice`)."""
    where: dict[int, list[tuple[int, int]]] = {}
    for (part, offset), n in sorted(numbers.items()):
        if n in twice:
            where.setdefault(n, []).append((part, offset))
    out = []
    dumps: dict[int, list[tuple[int, int, int, int, int]] | None] = {}
    for n, places in where.items():
        part = places[0][0]
        if part not in dumps:
            dumps[part] = dump_batches(cluster, topic, part)
        batches = dumps[part] or []
        held = []
        for p, offset in places:
            batch = next(((pid, epoch, seq) for base, last, pid, epoch, seq in batches
                          if p == part and base <= offset <= last), None)
            held.append(batch)
        out.append(Twice(n, part, tuple(o for _, o in places), tuple(held)))
    return out


def problems(outcome: ChaosOutcome) -> list[str]:
    """What the run broke; empty when it kept every promise (module doc)."""
    found = []
    if outcome.lost or outcome.duplicated > outcome.client_duplicated:
        found.append(f"{outcome.lost} acknowledged record(s) lost, {outcome.duplicated} duplicated "
                     f"({outcome.client_duplicated} by the client's epoch bump)")
        found += [n for n in outcome.notes if n.startswith(("lost ", "twice "))]
    if outcome.acked == 0 or outcome.fatal or outcome.unflushed:
        found.append(f"the producer: {outcome.acked} acked, {outcome.unflushed} unflushed, fatal {outcome.fatal}")
    if not outcome.consumer_caught_up:
        found.append("the consumer did not reach every partition's high watermark")
    if outcome.longest_spell_s > outcome.longest_restart_s:
        found.append(f"a partition spent {outcome.longest_spell_s} s below min.insync.replicas, longer than a "
                     f"restart ({outcome.longest_restart_s} s)")
    if outcome.outside_plan:
        found.append(f"{len(outcome.outside_plan)} partition(s) outside the plan: {outcome.outside_plan[:5]}")
    if outcome.throttles_left or outcome.reassignments_left:
        found.append(f"left: throttles {outcome.throttles_left}, {outcome.reassignments_left} reassignment(s)")
    want = [-signal.SIGKILL, 0 if outcome.mode == "finish" else 1]
    if outcome.exit_codes != want:
        found.append(f"executor exit codes {outcome.exit_codes}, expected {want}: {outcome.notes}")
    if outcome.mode == "cancel" and not outcome.cancelled:
        found.append("nothing was in flight at the cancel")
    return found
