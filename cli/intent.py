"""KIP-409 on today's Kafka: create a topic under-replicated, keep what was meant, complete it later.

With brokers down, the assignor server (``enable.under.replicated.topic.creation=true``) answers
placeholders ``-1, -2, ...`` for the replicas it meant for them. Kafka's CreateTopics refuses
both placeholder ids ("no such broker is registered") and partitions of different replica
counts, so ``create-topic`` applies such an answer in three steps:

1. the **intent record** (``--intent-file FILE``, JSON, written atomically before anything is
   created) keeps the assignor's answer with its placeholders and the brokers alive then;
2. CreateTopics with each partition's first *k* alive replicas, *k* the fewest alive replicas
   of any partition (the leader, never a placeholder, stays first), then one
   AlterPartitionReassignments giving every partition all its alive replicas;
3. ``replica-assignor repair --intent-file FILE --bootstrap-server KAFKA --execute``, once the
   brokers are back, fills the placeholders through AlterPartitionReassignments, waits for the
   reassignment to finish and reads the topic back; completed topics leave the record.

Goals
    The topic ends exactly where the assignor meant it: every replica it named stays in its
    position (so the preferred leader too), and each placeholder is filled by a broker that was
    not alive when the topic was created and is alive now: the broker it stood for, when the
    same broker comes back.

Constraints
    - A placeholder is filled only from brokers that came back (alive and unfenced now, not
      alive at creation); several candidates are ranked by the project's one repair algorithm
      (:func:`kafka_replica_assignor.planner.replica_repair.repair`: new racks first, then the least-loaded broker).
    - All or nothing per partition: a partition whose placeholders cannot all be filled yet, or
      one of whose named brokers is down now, waits (it keeps, or gets back, its alive
      replicas only).
    - A partition already holding its intended replicas (named ones in place, every placeholder
      filled) is complete and never moved again: running ``repair`` twice changes nothing.

Example
    Broker 4 (rack b) is down at creation; brokers 0-3 are alive. The assignor answers
    ``0: [0, 1, 2]``, ``1: [2, 0, -1]``. CreateTopics gets ``0: [0, 1]``, ``1: [2, 0]``; the
    reassignment right after gives ``0: [0, 1, 2]``. When broker 4 is back, ``repair`` moves
    partition 1 to ``[2, 0, 4]``.

The record (``version`` 1)::

    {"version": 1, "topics": [{"topic": "orders", "created_at": "2026-11-26T04:00:00Z",
      "alive_brokers": [0, 1, 2, 3], "partitions": [{"partition": 0, "replicas": [0, 1, 2]},
      {"partition": 1, "replicas": [2, 0, -1]}]}]}

One file can hold several topics (a later create-topic with the same file adds its topic).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.replica_repair import repair

from .common import CommandError, error_message, print_json, reassignment_json, security_options

RECORD_VERSION = 1
CLIENT_ID = "replica-assignor-intent"


# -- the record --------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TopicIntent:
    """One topic as the assignor meant it (placeholders negative) and the brokers alive then."""

    topic: str
    replicas: Mapping[int, tuple[int, ...]]
    alive_brokers: frozenset[int]
    created_at: str = ""

    def __post_init__(self) -> None:
        if sorted(self.replicas) != list(range(len(self.replicas))) or not self.replicas:
            raise ValueError(f"topic {self.topic}: partitions must be 0..N-1, got {sorted(self.replicas)}")
        for p, reps in self.replicas.items():
            if not reps or reps[0] < 0 or len(set(reps)) != len(reps):
                raise ValueError(f"topic {self.topic} partition {p}: replicas {list(reps)} need a broker "
                                 "first and no id twice")

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "created_at": self.created_at, "alive_brokers": sorted(self.alive_brokers),
                "partitions": [{"partition": p, "replicas": list(r)} for p, r in sorted(self.replicas.items())]}

    @classmethod
    def from_json(cls, data: Any) -> TopicIntent:
        if not isinstance(data, Mapping) or not isinstance(data.get("topic"), str):
            raise ValueError("each topic needs a 'topic' name")
        parts = data.get("partitions")
        alive = data.get("alive_brokers")
        if not isinstance(parts, list) or not isinstance(alive, list) or not all(isinstance(b, int) for b in alive):
            raise ValueError(f"topic {data['topic']}: needs 'partitions' and 'alive_brokers' lists")
        replicas: dict[int, tuple[int, ...]] = {}
        for entry in parts:
            reps = entry.get("replicas") if isinstance(entry, Mapping) else None
            if (not isinstance(entry, Mapping) or not isinstance(entry.get("partition"), int)
                    or not isinstance(reps, list) or not all(isinstance(b, int) for b in reps)):
                raise ValueError(f"topic {data['topic']}: each partition needs an integer 'partition' and 'replicas'")
            replicas[entry["partition"]] = tuple(reps)
        return cls(data["topic"], replicas, frozenset(alive), str(data.get("created_at") or ""))


def read_record(path: str | Path, *, missing_ok: bool = False) -> list[TopicIntent]:
    """The topics of an intent record (exit 2 when it is unreadable or not one)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        if missing_ok:
            return []
        raise CommandError(f"cannot read intent file {path}: no such file", 2) from None
    except OSError as exc:
        raise CommandError(f"cannot read intent file {path}: {exc.strerror or exc}", 2) from None
    try:
        data = json.loads(text)
        if not isinstance(data, Mapping) or data.get("version") != RECORD_VERSION:
            raise ValueError(f"not an intent record of version {RECORD_VERSION}")
        topics = data.get("topics")
        if not isinstance(topics, list):
            raise ValueError("needs a 'topics' list")
        return [TopicIntent.from_json(t) for t in topics]
    except ValueError as exc:
        raise CommandError(f"intent file {path}: {exc}", 2) from None


def write_record(path: str | Path, topics: Iterable[TopicIntent]) -> None:
    """Write the record atomically (a crash leaves the old file or the new one, never half)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as out:
            out.write(record_text(topics))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise CommandError(f"cannot write intent file {path}: {exc.strerror or exc}", 1) from None


def record_text(topics: Iterable[TopicIntent]) -> str:
    """The record as JSON, one partition a line (readable, and diffable when kept in a repository)."""
    blocks = []
    for t in topics:
        head = json.dumps({k: v for k, v in t.to_json().items() if k != "partitions"})[:-1]
        parts = ",\n".join(f"   {json.dumps({'partition': p, 'replicas': list(r)})}"
                           for p, r in sorted(t.replicas.items()))
        blocks.append(f' {head}, "partitions": [\n{parts}]}}')
    body = ",\n".join(blocks)
    return f'{{"version": {RECORD_VERSION}, "topics": [' + (f"\n{body}]}}\n" if blocks else "]}\n")


def with_topic(topics: Sequence[TopicIntent], intent: TopicIntent) -> list[TopicIntent]:
    return [t for t in topics if t.topic != intent.topic] + [intent]


# -- what to create, what to complete (pure) ----------------------------------------------------
def has_placeholders(assignment: Mapping[int, Sequence[int]]) -> bool:
    return any(b < 0 for reps in assignment.values() for b in reps)


def alive_replicas(replicas: Sequence[int]) -> list[int]:
    return [b for b in replicas if b >= 0]


def creatable(assignment: Mapping[int, Sequence[int]]) -> dict[int, list[int]]:
    """What CreateTopics accepts: each partition's first *k* alive replicas, *k* the fewest
    alive replicas of any partition (Kafka wants one replica count for all partitions)."""
    k = min(len(alive_replicas(r)) for r in assignment.values())
    return {p: alive_replicas(r)[:k] for p, r in assignment.items()}


def is_complete(intended: Sequence[int], current: Sequence[int]) -> bool:
    """The named replicas in place and every placeholder filled by another broker."""
    return (len(current) == len(intended) and all(b >= 0 for b in current)
            and all(c == i for c, i in zip(current, intended, strict=True) if i >= 0))


@dataclass(frozen=True, slots=True)
class Completion:
    """What completing one topic means now: ``targets`` the partitions to reassign (to their new
    replica lists), ``complete`` those already complete, ``waiting`` those that cannot be
    completed yet (with the reason), ``filled`` the brokers that take placeholders."""

    topic: str
    targets: Mapping[int, tuple[int, ...]]
    complete: tuple[int, ...]
    waiting: Mapping[int, str]
    filled: Mapping[int, tuple[int, ...]] = field(default_factory=dict)


def plan_completion(intent: TopicIntent, snapshot: ClusterSnapshot, fenced: Iterable[int] = ()) -> Completion:
    """The completion of ``intent`` on the cluster ``snapshot`` (a live read: every broker it
    lists is registered; ``fenced`` ones are not counted as back). See the module doc."""
    topic = intent.topic
    current = {p.partition: p.replicas for p in snapshot.partitions if p.topic == topic}
    missing = sorted(set(intent.replicas) - set(current))
    if missing:
        raise CommandError(f"topic {topic} lacks partitions {missing} on the cluster: was it deleted?", 1)
    up = {b.id for b in snapshot.brokers} - set(fenced)
    returned = up - intent.alive_brokers
    complete: list[int] = []
    waiting: dict[int, str] = {}
    open_parts: dict[int, tuple[int, ...]] = {}
    for p, intended in sorted(intent.replicas.items()):
        if is_complete(intended, current[p]):
            complete.append(p)
            continue
        down = [b for b in intended if b >= 0 and b not in up]
        if down:
            waiting[p] = f"broker(s) {down} down"
            continue
        open_parts[p] = intended
    # one repair run over the whole cluster (its loads), the open partitions as intended; only
    # the brokers that came back may take a placeholder, everyone else's replicas stay
    others = tuple(e for e in snapshot.partitions if e.topic != topic or e.partition not in open_parts)
    mine = tuple(PartitionEntry(topic, p, reps) for p, reps in open_parts.items())
    brokers = tuple(BrokerEntry(b.id, b.rack, b.id in returned, b.host, b.port) for b in snapshot.brokers)
    plan = repair(ClusterSnapshot(brokers, others + mine), keep=up - returned)
    targets: dict[int, tuple[int, ...]] = {}
    filled: dict[int, tuple[int, ...]] = {}
    for p, intended in open_parts.items():
        target = plan.assignments.get((topic, p))
        if target is None and has_placeholders({p: intended}):
            waiting[p] = "no broker back to take its placeholder(s)" if not returned else \
                "not enough brokers back to take its placeholder(s)"
            target = tuple(alive_replicas(intended))
        elif target is None:
            target = intended
        else:
            filled[p] = tuple(b for b, i in zip(target, intended, strict=True) if i < 0)
        if tuple(target) != tuple(current[p]):
            targets[p] = tuple(target)
    return Completion(topic, targets, tuple(complete), dict(sorted(waiting.items())), filled)


# -- talking to Kafka ---------------------------------------------------------------------------
def open_admin(bootstrap: str, timeout_ms: int, command_config: str | None) -> Any:
    import kafka.errors as kafka_errors

    from kafka_replica_assignor.protocol.cluster_reader import open_admin_client

    configs = {"client_id": CLIENT_ID, **security_options(command_config).kafka_configs()}
    try:
        return open_admin_client(bootstrap, timeout_ms, configs)
    except (kafka_errors.KafkaError, OSError, ValueError) as exc:
        raise CommandError(f"cannot connect to {bootstrap}: {error_message(exc)}", 1) from None


def reassign_and_wait(admin: Any, topic: str, targets: Mapping[int, Sequence[int]], timeout_ms: int) -> None:
    """AlterPartitionReassignments to ``targets``, then wait until Kafka lists none of them in
    progress and DescribeTopics shows every target (exit 1 naming what is not there in time)."""
    from kafka import TopicPartition

    from kafka_replica_assignor.protocol.cluster_reader import read_cluster

    if not targets:
        return
    wanted = {TopicPartition(topic, p): list(r) for p, r in targets.items()}
    deadline = time.monotonic() + timeout_ms / 1000
    while True:  # a topic created a moment ago may not be known to the controller yet
        answer = admin.alter_partition_reassignments(wanted, timeout_ms=timeout_ms)
        errors = {tp: err for tp, err in answer.items() if err is not None}
        if not errors:
            break
        retriable = all(getattr(err, "retriable", False) for err in errors.values())
        if not retriable or time.monotonic() > deadline:
            tp, err = next(iter(sorted(errors.items())))
            raise CommandError(f"the cluster refused to reassign {tp.topic}-{tp.partition}: {err.__name__}", 1)
        time.sleep(0.2)
    differ: dict[int, tuple[int, ...]] = {}
    while time.monotonic() < deadline:
        moving = admin.list_partition_reassignments(list(wanted), timeout_ms=timeout_ms)
        if not moving:
            now = {e.partition: e.replicas for e in read_cluster(admin).snapshot.partitions if e.topic == topic}
            differ = {p: now.get(p, ()) for p, r in targets.items() if tuple(now.get(p, ())) != tuple(r)}
            if not differ:
                return
        time.sleep(0.2)
    shown = ", ".join(f"{topic}-{p}" for p in sorted(targets))
    raise CommandError(f"the reassignment of {shown} did not finish within {timeout_ms} ms"
                       + (f" ({', '.join(f'{topic}-{p} holds {list(r)}' for p, r in differ.items())})"
                          if differ else "") + ": run the same command again to check", 1)


def read_topic_back(admin: Any, topic: str, created: Mapping[int, Sequence[int]], timeout_ms: int) -> Any:
    """The cluster once DescribeTopics shows ``topic`` exactly as ``created`` (the brokers'
    metadata may lag a moment behind CreateTopics); exit 1 naming every partition that differs."""
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        read = _read(admin)
        now = {e.partition: list(e.replicas) for e in read.snapshot.partitions if e.topic == topic}
        differ = {p: now.get(p) for p, r in created.items() if now.get(p) != list(r)}
        if not differ:
            return read
        if time.monotonic() > deadline:
            shown = "; ".join(f"{topic}-{p}: {r if r is not None else 'missing'} instead of {list(created[p])}"
                              for p, r in sorted(differ.items()))
            raise CommandError(f"the cluster does not hold topic {topic} as created: {shown} (the intent "
                               "record is kept: check the topic, then run repair --intent-file)", 1)
        time.sleep(0.2)


def _read(admin: Any) -> Any:
    from kafka_replica_assignor.protocol.cluster_reader import read_cluster

    return read_cluster(admin)


# -- create-topic -------------------------------------------------------------------------------
def add_intent_argument(parser: argparse.ArgumentParser) -> None:
    """``--intent-file`` of ``create-topic``."""
    parser.add_argument("--intent-file", metavar="FILE",
                        help="where to record the intended placement when the assignor answers placeholders "
                             "(KIP-409, brokers down): the topic is created with its alive replicas and "
                             "'replica-assignor repair --intent-file FILE --bootstrap-server ... --execute' "
                             "adds the others once the brokers are back")


def create_under_replicated(args: argparse.Namespace, assignment: Mapping[int, Sequence[int]],
                            configs: Mapping[str, str], topic: str | None = None) -> int:
    """``create-topic`` when the assignor answered placeholders (steps 1 and 2 of the module doc),
    for ``topic`` (default ``args.topic``). Raises :class:`CommandError`; returns 0 once the
    topic holds its alive replicas."""
    topic, path = topic or args.topic, getattr(args, "intent_file", None)
    placeholders = sum(b < 0 for reps in assignment.values() for b in reps)
    first = creatable(assignment)
    alive = {p: alive_replicas(r) for p, r in assignment.items()}
    if args.dry_run:
        print_json(reassignment_json(topic, alive))
        print(f"dry run: {placeholders} placeholder(s) for brokers that are down (KIP-409); would create {topic} "
              f"with {len(first[0])} replica(s) per partition, reassign to the alive replicas above and "
              f"record the placement in {path or 'the --intent-file'}", file=sys.stderr)
        return 0
    if not path:
        raise CommandError(f"the assignor answered {placeholders} placeholder(s) for brokers that are down "
                           "(KIP-409): Kafka cannot create them; give --intent-file FILE to create the topic "
                           "with its alive replicas and complete it later with replica-assignor repair", 2)
    earlier = read_record(path, missing_ok=True)
    admin = open_admin(args.bootstrap_server, args.timeout_ms, args.command_config)
    try:
        read = _read(admin)
        up = frozenset(b.id for b in read.snapshot.brokers) - read.fenced
        intent = TopicIntent(topic, {p: tuple(r) for p, r in assignment.items()}, up,
                             datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        write_record(path, with_topic(earlier, intent))  # first: a crash after creating keeps it
        answer = admin.create_topics({topic: {"assignments": first, "configs": dict(configs)}},
                                     timeout_ms=args.timeout_ms, raise_errors=False)
        result = next((t for t in answer.get("topics") or () if t.get("name") == topic), None)
        if result is None or result.get("error_code"):
            if earlier:  # the record as it was
                write_record(path, earlier)
            else:
                Path(path).unlink(missing_ok=True)
            import kafka.errors as kafka_errors

            code = result.get("error_code") if result else -1
            detail = f": {result.get('error_message')}" if result and result.get("error_message") else ""
            raise CommandError(f"the cluster refused to create topic {topic}: "
                               f"{kafka_errors.for_code(code).__name__} ({code}){detail}", 1)
        after = read_topic_back(admin, topic, first, args.timeout_ms)
        completion = plan_completion(intent, after.snapshot, after.fenced)
        reassign_and_wait(admin, topic, completion.targets, args.timeout_ms)
    finally:
        admin.close()
    print_json(reassignment_json(topic, {p: completion.targets.get(p, first[p]) for p in first}))
    print(f"created topic {topic} under-replicated: {len(assignment)} partition(s), {placeholders} of "
          f"{sum(map(len, assignment.values()))} replica(s) wait for brokers that are down; the intended placement "
          f"is in {path}. When the brokers are back: replica-assignor repair --intent-file {path} "
          f"--bootstrap-server {args.bootstrap_server} --execute", file=sys.stderr)
    return 0


# -- repair --intent-file -----------------------------------------------------------------------
def run_complete(args: argparse.Namespace) -> int:
    """``repair --intent-file FILE --bootstrap-server KAFKA [--execute]`` (step 3 of the module doc).

    Prints Kafka's reassignment JSON of what completes the recorded topics now, and a summary
    on stderr. With ``--execute`` applies it, waits, and drops the completed topics from the
    record; exit 1 when some partitions still wait for brokers."""
    prog = "replica-assignor repair"
    intents = read_record(args.intent_file)
    admin = open_admin(args.bootstrap_server, args.timeout_ms, args.command_config)
    try:
        read = _read(admin)
        completions = [plan_completion(intent, read.snapshot, read.fenced) for intent in intents]
        print_json({"version": 1, "partitions": [
            {"topic": c.topic, "partition": p, "replicas": list(r)}
            for c in completions for p, r in sorted(c.targets.items())]})
        for c in completions:
            print(f"{prog}: {summary(c)}", file=sys.stderr)
        if not args.execute:
            return 0
        for c in completions:
            reassign_and_wait(admin, c.topic, c.targets, args.timeout_ms)
    finally:
        admin.close()
    left = [i for i, c in zip(intents, completions, strict=True) if c.waiting]
    write_record(args.intent_file, left)
    done = [c.topic for c in completions if not c.waiting]
    if done:
        print(f"{prog}: complete, removed from {args.intent_file}: {', '.join(done)}", file=sys.stderr)
    if left:
        raise CommandError(f"{sum(len(c.waiting) for c in completions)} partition(s) of "
                           f"{', '.join(t.topic for t in left)} still wait for brokers; they stay in "
                           f"{args.intent_file}: run the same command again when the brokers are back", 1)
    return 0


def summary(c: Completion) -> str:
    parts = [f"topic {c.topic}: {len(c.targets)} partition(s) to reassign"]
    if c.filled:
        brokers = sorted({b for f in c.filled.values() for b in f})
        parts.append(f"{sum(map(len, c.filled.values()))} placeholder(s) filled by broker(s) {brokers}")
    parts.append(f"{len(c.complete)} complete")
    if c.waiting:
        shown = "; ".join(f"{c.topic}-{p}: {why}" for p, why in list(c.waiting.items())[:5])
        more = f" and {len(c.waiting) - 5} more" if len(c.waiting) > 5 else ""
        parts.append(f"{len(c.waiting)} waiting ({shown}{more})")
    return ", ".join(parts)
