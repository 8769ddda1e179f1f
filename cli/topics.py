"""``replica-assignor create-topic`` and ``add-partitions``: placement applied to a Kafka cluster.

    replica-assignor create-topic --bootstrap-server KAFKA --assignor HOST:PORT --topic T [--topic T2 ...] \\
        --partitions 12 --replication-factor 3 [--config retention.ms=86400000 ...] [--dry-run]
    replica-assignor create-topic --bootstrap-server KAFKA --assignor HOST:PORT --topics-file FILE
    replica-assignor add-partitions --bootstrap-server KAFKA --assignor HOST:PORT --topic T \\
        --partitions 24 [--dry-run]

create-topic asks the assignor server where the new topic's replicas go (CreateReplicaAssignment
with the topic's name), then creates the topic with CreateTopics carrying that explicit
assignment, as kafka-topics.sh --create --replica-assignment does. Several topics (--topic
repeated, or a file of 'NAME PARTITIONS REPLICATION_FACTOR' lines) are one batch: each is placed
with the earlier ones in the assignor's view (CreateReplicaAssignment v2), then all are created
with one CreateTopics. add-partitions reads the
topic's current assignment from the cluster, sends it as CreateReplicaAssignment v1's current
assignment (so the assignor continues the topic where it left off), and adds the new partitions
with CreatePartitions. Both print the assignment applied (Kafka reassignment JSON) on stdout,
then read the topic back (DescribeTopics): a partition whose replicas differ from the assignment
(a broker that ignored it) is named and the command exits 1. With --dry-run they print the
assignment and change nothing.

--command-config holds the Kafka client properties of the Kafka cluster,
--assignor-command-config those of the assignor server. A broker that refuses (the topic
exists, a policy, an API it does not support) is one line with its error, exit code 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .common import (
    EXIT_CODES,
    INT16_MAX,
    INT32_MAX,
    CommandError,
    add_connection_arguments,
    bounded,
    error_message,
    fail,
    help_text,
    host_port,
    print_json,
    reassignment_json,
    security_options,
)
from .intent import add_intent_argument, create_under_replicated, has_placeholders
from .probe import explain_topics_failure

CLIENT_ID = "replica-assignor-topics"
#: Kafka's types: a partition count is int32, a replication factor int16
PARTITIONS = bounded(1, INT32_MAX, "int32")
REPLICATION_FACTOR = bounded(1, INT16_MAX, "int16")


def add_parser(sub: Any) -> None:
    create = sub.add_parser("create-topic", help="create topics placed by the assignor server",
                            description=help_text(__doc__), epilog=EXIT_CODES,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    _common_arguments(create, several=True)
    create.add_argument("--partitions", type=PARTITIONS, metavar="N",
                        help="partition count (with --topic)")
    create.add_argument("--replication-factor", type=REPLICATION_FACTOR, metavar="R",
                        help="replicas per partition (with --topic)")
    create.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="a topic configuration (repeatable), as kafka-topics.sh --config")
    create.add_argument("--disable-rack-aware", action="store_true",
                        help="Kafka's rack-unaware assignment (forceSimpleAssignment)")
    add_intent_argument(create)  # KIP-409: an answer with placeholders (cli/intent.py)
    create.set_defaults(run=run_create)

    add = sub.add_parser("add-partitions", help="add partitions to a topic, placed by the assignor server",
                         description=help_text(__doc__), epilog=EXIT_CODES,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    _common_arguments(add)
    add.add_argument("--partitions", type=PARTITIONS, required=True, metavar="TOTAL",
                     help="the topic's partition count after the change, as kafka-topics.sh --alter --partitions")
    add.set_defaults(run=run_add)


def _common_arguments(p: argparse.ArgumentParser, several: bool = False) -> None:
    p.add_argument("--bootstrap-server", required=True, type=host_port, metavar="HOST:PORT",
                   help="the Kafka cluster")
    p.add_argument("--assignor", required=True, type=host_port, metavar="HOST:PORT",
                   help="the replica assignor server")
    if several:
        names = p.add_mutually_exclusive_group(required=True)
        names.add_argument("--topic", action="append", metavar="NAME",
                           help="a topic to create (repeatable: the topics are placed as one batch)")
        names.add_argument("--topics-file", metavar="FILE",
                           help="topics to create as one batch: lines 'NAME PARTITIONS REPLICATION_FACTOR' "
                                "('#' starts a comment)")
    else:
        p.add_argument("--topic", required=True, help="the topic")
    p.add_argument("--dry-run", action="store_true",
                   help="print the assignment (Kafka reassignment JSON) and change nothing")
    add_connection_arguments(p, what="the Kafka cluster")
    add_connection_arguments(p, what="the replica assignor server", config_flag="--assignor-command-config",
                             timeout=False)


@dataclass(frozen=True, slots=True)
class NewTopicSpec:
    """One topic of a create-topic batch."""

    name: str
    partitions: int
    replication_factor: int


def batch(args: argparse.Namespace) -> list[NewTopicSpec]:
    """The topics to create, from ``--topic`` (with ``--partitions`` and ``--replication-factor``)
    or from ``--topics-file``; a name given twice, or a malformed line, is bad input (exit 2)."""
    if args.topics_file is not None:
        if args.partitions is not None or args.replication_factor is not None:
            raise CommandError("--topics-file gives each topic's partitions and replication factor: "
                               "leave out --partitions and --replication-factor", 2)
        specs = _read_topics_file(args.topics_file)
    else:
        if args.partitions is None or args.replication_factor is None:
            raise CommandError("--topic needs --partitions and --replication-factor", 2)
        specs = [NewTopicSpec(name, args.partitions, args.replication_factor) for name in args.topic]
    names = [s.name for s in specs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise CommandError(f"topic {twice[0]} is named twice", 2)
    return specs


#: the largest topics file read (a batch is a few thousand lines at most)
TOPICS_FILE_MAX_BYTES = 4 * 1024 * 1024


def _read_topics_file(path: str) -> list[NewTopicSpec]:
    import os
    import stat

    try:
        with open(path, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise CommandError(f"--topics-file {path}: not a regular file", 2)
            raw = f.read(TOPICS_FILE_MAX_BYTES + 1)
    except OSError as exc:
        raise CommandError(f"--topics-file {path}: {exc.strerror or exc}", 2) from None
    if len(raw) > TOPICS_FILE_MAX_BYTES:
        raise CommandError(f"--topics-file {path}: larger than {TOPICS_FILE_MAX_BYTES} bytes", 2)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CommandError(f"--topics-file {path}: not UTF-8 text", 2) from None
    specs = []
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        try:
            if len(words) != 3:
                raise ValueError
            specs.append(NewTopicSpec(words[0], PARTITIONS(words[1]), REPLICATION_FACTOR(words[2])))
        except (ValueError, argparse.ArgumentTypeError):
            raise CommandError(f"--topics-file {path}, line {number}: expected 'NAME PARTITIONS "
                               f"REPLICATION_FACTOR' with PARTITIONS in 1..{INT32_MAX} (int32) and "
                               f"REPLICATION_FACTOR in 1..{INT16_MAX} (int16), got {line.strip()!r}", 2) from None
    if not specs:
        raise CommandError(f"--topics-file {path}: names no topic", 2)
    return specs


def topic_configs(items: list[str]) -> dict[str, str]:
    configs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CommandError(f"--config must be KEY=VALUE, got {item!r}", 2)
        configs[key.strip()] = value.strip()
    return configs


def _ask_assignor(args: argparse.Namespace, partitions: int, replication_factor: int,
                  current: Mapping[int, list[int]] | None, force_simple: bool = False) -> dict[int, list[int]]:
    placed = _ask_batch(args, [NewTopicSpec(args.topic, partitions, replication_factor)], current, force_simple)
    return placed[args.topic]


def _ask_batch(args: argparse.Namespace, specs: list[NewTopicSpec], current: Mapping[int, list[int]] | None = None,
               force_simple: bool = False) -> dict[str, dict[int, list[int]]]:
    """The assignor's placement of each topic in turn, over one connection; each later topic is
    placed with the earlier ones' answers in the server's view (CreateReplicaAssignment v2's
    PendingTopics), so a batch is spread as one."""
    import kafka.errors as kafka_errors

    from kafka_replica_assignor.protocol.client import CreateReplicaAssignmentOptions, ReplicaAssignorAdminClient

    security = security_options(args.assignor_command_config)
    options = CreateReplicaAssignmentOptions(force_simple_assignment=force_simple, timeout_ms=args.timeout_ms)
    placed: dict[str, dict[int, list[int]]] = {}
    with ReplicaAssignorAdminClient(args.assignor, request_timeout_ms=args.timeout_ms, security=security) as admin:
        for spec in specs:
            try:
                placed[spec.name] = admin.create_replica_assignment(
                    spec.partitions, spec.replication_factor, None, options, topic=spec.name,
                    current_assignment=current, pending_topics=placed).assignments()
            except kafka_errors.BrokerResponseError as exc:  # an error code in the answer: say who refused
                what = f" topic {spec.name}" if len(specs) > 1 else ""
                raise CommandError(f"the assignor at {args.assignor} refused{what}: {error_message(exc)}",
                                   1) from None
    return placed


def _kafka_admin(args: argparse.Namespace) -> Any:
    import kafka.errors as kafka_errors

    from kafka_replica_assignor.protocol.cluster_reader import open_admin_client

    configs = {"client_id": CLIENT_ID, **security_options(args.command_config).kafka_configs()}
    try:
        return open_admin_client(args.bootstrap_server, args.timeout_ms, configs)
    except (kafka_errors.KafkaError, OSError, ValueError) as exc:
        raise CommandError(f"cannot connect to {args.bootstrap_server}: {error_message(exc)}", 1) from None


def _refused(what: str, code: int, message: str | None) -> CommandError:
    import kafka.errors as kafka_errors

    name = kafka_errors.for_code(code).__name__
    detail = f": {message}" if message else ""
    return CommandError(f"{what}: {name} ({code}){detail}", 1)


def run_create(args: argparse.Namespace) -> int:
    """Ask for the placements, then CreateTopics with them, then read them back."""
    prog = "replica-assignor create-topic"
    try:
        specs = batch(args)
        configs = topic_configs(args.config)
        security_options(args.command_config)  # a bad file is refused before anything is asked
        placed = _ask_batch(args, specs, None, args.disable_rack_aware)
        short = [name for name, assignment in placed.items() if has_placeholders(assignment)]
        if short:  # brokers down (KIP-409): created in steps, see cli/intent.py
            if len(placed) > 1:
                raise CommandError(f"the assignor answered placeholders for brokers that are down (KIP-409) for "
                                   f"topic(s) {', '.join(short)}: an under-replicated topic is created on its own "
                                   "(one --topic with --intent-file)", 2)
            return create_under_replicated(args, placed[short[0]], configs, topic=short[0])
        plan = batch_json(placed)
        if args.dry_run:
            print_json(plan)
            return 0
        admin = _kafka_admin(args)
        try:
            answer = admin.create_topics({name: {"assignments": assignment, "configs": configs}
                                          for name, assignment in placed.items()},
                                         timeout_ms=args.timeout_ms, raise_errors=False)
        finally:
            admin.close()
        for name, assignment in placed.items():
            check_created(name, assignment, answer)
        print_json(plan)
        for name, assignment in placed.items():
            check_applied(args, name, assignment, "created")
        for name, assignment in placed.items():
            print(f"created topic {name}: {len(assignment)} partition(s), replication factor "
                  f"{len(assignment[0])}, on {args.bootstrap_server}", file=sys.stderr)
        return 0
    except Exception as exc:
        return fail(prog, _one_line(explain_topics_failure(exc, args)))


def batch_json(placed: Mapping[str, Mapping[int, list[int]]]) -> dict[str, Any]:
    """Kafka's reassignment JSON for every topic of a batch, in the batch's order."""
    return {"version": 1, "partitions": [entry for name, assignment in placed.items()
                                         for entry in reassignment_json(name, assignment)["partitions"]]}


def check_created(topic: str, assignment: Mapping[int, list[int]], answer: Mapping[str, Any]) -> None:
    """The CreateTopics answer for ``topic``: an error, or a topic unlike the assignment sent
    (a broker that ignored it), is a :class:`CommandError` (exit 1)."""
    results = [t for t in answer.get("topics") or () if t.get("name") == topic]
    if not results:
        raise CommandError(f"the cluster's CreateTopics answer does not mention topic {topic!r}", 1)
    result = results[0]
    if result.get("error_code"):
        raise _refused(f"the cluster refused to create topic {topic}", result["error_code"],
                       result.get("error_message"))
    partitions, rf = len(assignment), len(next(iter(assignment.values())))
    got_partitions, got_rf = result.get("num_partitions", -1), result.get("replication_factor", -1)
    if (got_partitions not in (-1, None, partitions)) or (got_rf not in (-1, None, rf)):
        raise CommandError(f"the cluster created topic {topic} with {got_partitions} partition(s) and replication "
                           f"factor {got_rf}, not the {partitions} partition(s) and replication factor {rf} "
                           "assigned: it ignored the replica assignment", 1)


#: how many differing partitions an error names before it counts the rest
NAMED_PARTITIONS = 10


def placed_replicas(args: argparse.Namespace, topic: str, partitions: Iterable[int]) -> dict[int, list[int]]:
    """The replicas the cluster reports for ``partitions`` of ``topic`` (DescribeTopics), asked
    again until every one is described or ``--timeout-ms`` passes: a new topic's metadata reaches
    every broker a moment after CreateTopics answers."""
    wanted = set(partitions)
    deadline = time.monotonic() + args.timeout_ms / 1000
    placed: dict[int, list[int]] = {}
    admin = _kafka_admin(args)
    try:
        while True:
            described = [t for t in admin.describe_topics([topic]) if t.get("name") == topic]
            if described and not described[0].get("error_code"):
                placed = {p["partition_index"]: list(p["replica_nodes"]) for p in described[0]["partitions"]}
            if wanted <= placed.keys() or time.monotonic() >= deadline:
                return placed
            time.sleep(0.2)
    finally:
        admin.close()


def check_applied(args: argparse.Namespace, topic: str, assignment: Mapping[int, list[int]], verb: str) -> None:
    """Read ``topic`` back: every partition of ``assignment`` must sit on exactly its replicas,
    in order (the first is the preferred leader). Otherwise a :class:`CommandError` (exit 1)
    names the partitions that differ: the change was made, so the operator decides what next."""
    placed = placed_replicas(args, topic, assignment)
    differ = [p for p in sorted(assignment) if placed.get(p) != list(assignment[p])]
    if not differ:
        return
    named = ", ".join(f"partition {p} on {placed[p] if p in placed else 'no replicas'} (assigned "
                      f"{list(assignment[p])})" for p in differ[:NAMED_PARTITIONS])
    more = f" and {len(differ) - NAMED_PARTITIONS} more" if len(differ) > NAMED_PARTITIONS else ""
    raise CommandError(f"the cluster {verb} topic {topic} but did not apply the assignment: {named}{more}; "
                       f"the partitions stay as the cluster placed them: delete the topic, or move them with "
                       f"kafka-reassign-partitions.sh --execute on the JSON printed above", 1)


def current_assignment(read: Any, topic: str, bootstrap: str) -> dict[int, list[int]]:
    """The topic's partitions and replicas in a :class:`~kafka_replica_assignor.protocol.cluster_reader.ClusterRead`."""
    current = {p.partition: list(p.replicas) for p in read.snapshot.partitions if p.topic == topic}
    left_out = [entry for entry in read.left_out if entry.startswith((f"topic {topic!r}", f"{topic}-"))]
    if left_out:
        raise CommandError(f"cannot read topic {topic} on {bootstrap}: {left_out[0]}", 1)
    if not current:
        raise CommandError(f"topic {topic} does not exist on {bootstrap}", 1)
    if sorted(current) != list(range(len(current))):
        raise CommandError(f"topic {topic} on {bootstrap} lacks partitions: it has {sorted(current)}", 1)
    return current


def run_add(args: argparse.Namespace) -> int:
    """Read the topic, ask for the new partitions' placement, then CreatePartitions."""
    from kafka_replica_assignor.protocol.cluster_reader import read_cluster

    prog = "replica-assignor add-partitions"
    try:
        security_options(args.assignor_command_config)
        admin = _kafka_admin(args)
        try:
            current = current_assignment(read_cluster(admin), args.topic, args.bootstrap_server)
            if args.partitions <= len(current):
                raise CommandError(f"--partitions {args.partitions} must be more than topic {args.topic}'s "
                                   f"{len(current)} partition(s)", 2)
            rf = len(current[0])
            answer = _ask_assignor(args, args.partitions, rf, current)
            new = new_partitions(answer, current, args.partitions, args.topic)
            if args.dry_run:
                print_json(reassignment_json(args.topic, new))
                return 0
            response = _create_partitions(admin, args, new)
        finally:
            admin.close()
        for result in getattr(response, "results", None) or ():
            if result.error_code:
                raise _refused(f"the cluster refused to add partitions to {args.topic}", result.error_code,
                               result.error_message)
        print_json(reassignment_json(args.topic, new))
        check_applied(args, args.topic, {**current, **new}, "extended")
        print(f"added {len(new)} partition(s) to {args.topic} (now {args.partitions}) on {args.bootstrap_server}",
              file=sys.stderr)
        return 0
    except Exception as exc:
        return fail(prog, _one_line(explain_topics_failure(exc, args)))


def new_partitions(answer: Mapping[int, list[int]], current: Mapping[int, list[int]], total: int,
                   topic: str) -> dict[int, list[int]]:
    """The new partitions of the assignor's answer; an answer moving existing partitions cannot
    be applied by CreatePartitions and is refused (exit 1)."""
    moved = sorted(p for p, replicas in answer.items() if p in current and list(replicas) != list(current[p]))
    if moved:
        raise CommandError(f"the assignor also moves existing partitions {moved} of {topic}: CreatePartitions "
                           "cannot apply that (use assign and kafka-reassign-partitions.sh)", 1)
    new = {p: list(r) for p, r in answer.items() if p not in current}
    if sorted(new) != list(range(len(current), total)):
        raise CommandError(f"the assignor answered partitions {sorted(new)}, not {len(current)}..{total - 1}", 1)
    return new


def _create_partitions(admin: Any, args: argparse.Namespace, new: Mapping[int, list[int]]) -> Any:
    import kafka.errors as kafka_errors

    try:
        return admin.create_partitions(
            {args.topic: {"count": args.partitions, "assignments": [new[p] for p in sorted(new)]}},
            timeout_ms=args.timeout_ms, raise_errors=False)
    except kafka_errors.IncompatibleBrokerVersion:
        raise CommandError(f"the cluster at {args.bootstrap_server} does not support CreatePartitions "
                           "(apiKey 37): partitions cannot be added there", 1) from None


def _one_line(exc: Exception) -> Exception:
    """Errors from the libraries as they are; anything unexpected keeps its type name."""
    import kafka.errors as kafka_errors

    from kafka_replica_assignor.protocol.client_config import ClientConfigError
    from kafka_replica_assignor.protocol.cluster_reader import ClusterReadError

    if isinstance(exc, (CommandError, ClientConfigError, kafka_errors.KafkaError, ClusterReadError, OSError,
                        ValueError)):
        return exc
    return CommandError(f"{type(exc).__name__}: {exc}", 1)
