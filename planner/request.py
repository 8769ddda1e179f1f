"""What a plan is asked for: one frozen value from the command line (or the fleet job) to the goals.

:class:`PlanRequest` carries the mode, the threshold, the budgets, the operator's scope
(:class:`Scope`), the exact path's work limit and the output options (batches, throttle). It
checks what it can check alone (types, ranges, the same broker in two options) when it is made;
what needs the cluster (an option the mode ignores, a broker the cluster does not have) is each
goal's own ``check_request`` (:func:`kafka_replica_assignor.planner.goals.order.check_request`).
Both refuse with :class:`~kafka_replica_assignor.planner.goals.goal.RequestError` (exit 2).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot

MODES = ("leader", "replica", "cluster", "repair")
"""In the order the command line lists them."""

DEFAULT_THRESHOLD = 10
EXACT_NODES = 400
"""Branch-and-bound nodes per solve of the exact path (a work limit: the same plan on any
machine at any load)."""
EXACT_SECONDS = 300.0
"""The exact path's wall-clock safety net: reaching it ends the command (exit 1), never with
another plan."""


class RequestError(ValueError):
    """A request the planner refuses before planning (bad input: exit 2, one line)."""


def check_topic_patterns(topics: str | None, exclude_topics: str | None) -> None:
    """The one check of ``--topics`` / ``--exclude-topics`` (regular expressions matching whole
    topic names), shared by the planner's scope and the watcher's rules."""
    for name, pattern in (("topics", topics), ("exclude-topics", exclude_topics)):
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise RequestError(f"--{name}: not a regular expression: {pattern!r} ({exc})") from None


class PlanError(Exception):
    """The plan cannot do what the request asks (a mode it cannot honour, a safety net
    reached): exit 1, one line naming what and why, nothing written."""


def parse_threshold(threshold: float | int | str) -> Fraction:
    """The threshold in percent as a fraction (``10`` -> ``1/10``); :class:`RequestError` when invalid."""
    try:
        fraction = Fraction(str(threshold)) / 100
    except ValueError:
        raise RequestError(f"threshold must be a number of percent, got {threshold!r}") from None
    if fraction < 0:
        raise RequestError(f"threshold must be >= 0, got {threshold!r}")
    return fraction


@dataclass(frozen=True, slots=True)
class Scope:
    """What a plan may touch: ``topics`` (a regular expression matching whole topic names; None:
    every topic) less ``exclude_topics``; ``exclude_brokers`` neither give nor take replicas;
    ``add_brokers``, when given, are the only brokers replicas move to (repairs included);
    ``remove_brokers`` end with no replica; ``demote_brokers`` lead only the partitions no other
    alive replica can lead. Partitions out of scope keep their replica lists, order included, in
    every mode, and still count in every figure."""

    topics: str | None = None
    exclude_topics: str | None = None
    exclude_brokers: tuple[int, ...] = ()
    add_brokers: tuple[int, ...] = ()
    remove_brokers: tuple[int, ...] = ()
    demote_brokers: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        check_topic_patterns(self.topics, self.exclude_topics)
        for name in ("exclude_brokers", "add_brokers", "remove_brokers", "demote_brokers"):
            value = getattr(self, name)
            object.__setattr__(self, name, tuple(sorted(set(value))))
            if any(b < 0 for b in getattr(self, name)):
                raise RequestError(f"--{name.replace('_', '-')}: broker ids are >= 0")
        for a, b in combinations(("remove_brokers", "add_brokers", "demote_brokers", "exclude_brokers"), 2):
            both = sorted(set(getattr(self, a)) & set(getattr(self, b)))
            if both:
                raise RequestError(f"--{a.replace('_', '-')} and --{b.replace('_', '-')} both name broker(s) "
                                   f"{', '.join(map(str, both))}: a broker takes one of these roles")

    @property
    def narrowed(self) -> bool:
        return (self.topics is not None or self.exclude_topics is not None or bool(self.exclude_brokers)
                or bool(self.add_brokers) or bool(self.demote_brokers))

    @property
    def removed(self) -> frozenset[int]:
        return frozenset(self.remove_brokers)

    def frozen(self, snapshot: ClusterSnapshot) -> frozenset[int]:
        """Positions of the partitions whose replica lists must not change."""
        if self.topics is None and self.exclude_topics is None:
            return frozenset()
        keep = re.compile(self.topics) if self.topics is not None else None
        drop = re.compile(self.exclude_topics) if self.exclude_topics is not None else None
        names = {p.topic for p in snapshot.partitions}
        out = {t for t in names if (keep is not None and not keep.fullmatch(t)) or (drop is not None and drop.fullmatch(t))}
        return frozenset(i for i, p in enumerate(snapshot.partitions) if p.topic in out)


@dataclass(frozen=True, slots=True)
class PlanRequest:
    """How the plan is asked for (echoed in the report). ``threshold`` in percent, None when not
    given (:data:`DEFAULT_THRESHOLD`); ``exact_nodes`` 0 or ``exact_seconds`` 0: the heuristic
    only."""

    mode: str
    threshold: float | int | str | None = None
    max_moves: int | None = None
    max_leader_changes: int | None = None
    scope: Scope = field(default_factory=Scope)
    exact_nodes: int = EXACT_NODES
    exact_seconds: float = EXACT_SECONDS
    batch_size: int | None = None
    max_moves_per_broker: int | None = None     # batches: moves a broker takes part in
    max_bytes_per_batch: int | None = None      # batches: bytes copied
    throttle: int | None = None                 # bytes/s, as kafka-reassign-partitions.sh --throttle
    source: str = ""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise RequestError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.threshold is not None:
            parse_threshold(self.threshold)
        self._check_numbers()
        self._check_mode()

    def _check_numbers(self) -> None:
        for name in ("max_moves", "max_leader_changes", "exact_nodes"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise RequestError(f"--{name.replace('_', '-')} must be >= 0, got {value}")
        if self.exact_seconds < 0:
            raise RequestError(f"--exact-seconds must be >= 0, got {self.exact_seconds}")
        for name in ("batch_size", "max_moves_per_broker", "max_bytes_per_batch", "throttle"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise RequestError(f"--{name.replace('_', '-')} must be >= 1, got {value}")

    def _check_mode(self) -> None:
        """An option the mode ignores is refused (the scope's brokers: their goals' own checks)."""
        if self.max_moves is not None and self.mode == "leader":
            raise RequestError("--max-moves is ignored by --mode leader (it moves no replicas): use --mode "
                               "replica, cluster or repair, or leave it out")
        if self.max_leader_changes is not None and self.mode in ("replica", "repair"):
            raise RequestError(f"--max-leader-changes is ignored by --mode {self.mode} (it does not balance "
                               "leaders): use --mode leader or cluster, or leave it out")
        if self.threshold is not None and self.mode in ("leader", "repair"):
            raise RequestError(f"--threshold is ignored by --mode {self.mode} (it balances no replicas or bytes): "
                               "use --mode replica or cluster, or leave it out")

    @property
    def fraction(self) -> Fraction:
        """The threshold as a fraction (``10`` -> ``1/10``)."""
        return parse_threshold(DEFAULT_THRESHOLD if self.threshold is None else self.threshold)

    @property
    def percent(self) -> float | int | str:
        """The threshold in percent (:data:`DEFAULT_THRESHOLD` when not given)."""
        return DEFAULT_THRESHOLD if self.threshold is None else self.threshold

    @property
    def threshold_text(self) -> str:
        return f"{self.percent}%"

    @property
    def exact(self) -> bool:
        """Whether the exact path may run (no budgets; a node limit and a safety net above 0)."""
        return (self.exact_nodes > 0 and self.exact_seconds > 0 and self.max_moves is None
                and self.max_leader_changes is None)


# -- the options, declared once for the command line and the fleet job ---------------------------
def _percent(text: str) -> float | int:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value < 100:
        raise argparse.ArgumentTypeError(f"must be in [0, 100), got {text}")
    return int(value) if value.is_integer() else value


def whole_number(text: str, least: int = 0) -> int:
    """An argument type: a whole number of at least ``least`` (the command line's too)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be >= {least}, got {value}")
    return value


def _count(least: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        return whole_number(text, least)
    parse.__name__ = "number"   # argparse names the type in its messages
    return parse


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, got {text}")
    return value


def _ids(text: str) -> tuple[int, ...]:
    items = [x.strip() for x in text.split(",")]
    if not text.strip() or not all(items):
        raise argparse.ArgumentTypeError(f"must be comma-separated broker ids, got {text!r}")
    out = []
    for item in items:
        try:
            value = int(item)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be comma-separated broker ids, got {item!r}") from None
        if not 0 <= value <= 2**31 - 1:
            raise argparse.ArgumentTypeError(f"broker id {value} is not in 0..{2**31 - 1} (Kafka ids are int32)")
        out.append(value)
    return tuple(sorted(set(out)))


def add_request_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a :class:`PlanRequest` (``balance`` and the fleet job share them)."""
    parser.add_argument("--mode", required=True, choices=MODES,
                        help="leader: reorder replicas only; replica: move replicas; cluster: both; "
                             "repair: only replace dead/unknown/removed replicas and placeholders")
    parser.add_argument("--threshold", type=_percent, default=None, metavar="PERCENT",
                        help=f"brokers within avg*(1 +- PERCENT/100) are balanced (modes replica and cluster; "
                             f"default {DEFAULT_THRESHOLD}; 0 = the tightest balance reachable)")
    parser.add_argument("--max-moves", type=_count(0), metavar="N", help="at most N replica moves")
    parser.add_argument("--max-leader-changes", type=_count(0), metavar="N",
                        help="at most N preferred-leader changes (modes leader and cluster)")
    parser.add_argument("--batch-size", type=_count(1), metavar="N",
                        help="also split the reassignment into batches of at most N partitions "
                             "(reassignment-0001.json, ...)")
    parser.add_argument("--max-moves-per-broker", type=_count(1), metavar="K",
                        help="batches in which no broker is the source or destination of more than K replica moves")
    parser.add_argument("--max-bytes-per-batch", type=_count(1), metavar="BYTES",
                        help="batches that copy at most BYTES (size_bytes; a bigger partition gets a batch of its own)")
    parser.add_argument("--throttle", type=_count(1), metavar="BYTES_PER_S",
                        help="the --throttle you will pass to kafka-reassign-partitions.sh: the report estimates "
                             "each batch's time with it and writes the commands")
    parser.add_argument("--remove-brokers", type=_ids, default=(), metavar="IDS",
                        help="brokers to drain (comma-separated): every replica leaves them and they take none; "
                             "a plan that cannot empty them fails (exit 1) naming what stays and why")
    parser.add_argument("--forget", type=_ids, default=(), metavar="IDS",
                        help="brokers being decommissioned: the same as --remove-brokers")
    parser.add_argument("--exclude-brokers", type=_ids, default=(), metavar="IDS",
                        help="brokers that neither give nor take replicas (comma-separated)")
    parser.add_argument("--add-brokers", type=_ids, default=(), metavar="IDS",
                        help="new brokers: the only ones replicas move to, repairs included (comma-separated)")
    parser.add_argument("--demote-brokers", type=_ids, default=(), metavar="IDS",
                        help="brokers that lead no partition another alive replica can lead (modes leader and "
                             "cluster); their replicas stay")
    parser.add_argument("--topics", metavar="REGEX",
                        help="only partitions of topics whose whole name matches REGEX may move "
                             "(the others keep their replicas and still count in every figure)")
    parser.add_argument("--exclude-topics", metavar="REGEX",
                        help="partitions of topics whose whole name matches REGEX do not move")
    parser.add_argument("--exact-nodes", type=_count(0), default=EXACT_NODES, metavar="N",
                        help="on small clusters also solve the balance exactly (a mixed-integer program, HiGHS) "
                             "with at most N branch-and-bound nodes per solve, and keep the better plan; a work "
                             "limit, so the plan is the same on any machine; 0 = never (default %(default)s)")
    parser.add_argument("--exact-seconds", type=_seconds, default=EXACT_SECONDS, metavar="S",
                        help="a safety net for the exact path: reaching it ends the command (exit 1) rather than "
                             "giving another plan; 0 = never run it (default %(default)s)")


def request_from_args(args: argparse.Namespace, source: str = "") -> PlanRequest:
    """The request of parsed :func:`add_request_arguments` options (:class:`RequestError` when
    they contradict each other)."""
    scope = Scope(args.topics, args.exclude_topics, args.exclude_brokers, args.add_brokers,
                  (*args.remove_brokers, *args.forget), args.demote_brokers)
    return PlanRequest(mode=args.mode, threshold=args.threshold, max_moves=args.max_moves,
                       max_leader_changes=args.max_leader_changes, scope=scope, exact_nodes=args.exact_nodes,
                       exact_seconds=args.exact_seconds, batch_size=args.batch_size,
                       max_moves_per_broker=args.max_moves_per_broker, max_bytes_per_batch=args.max_bytes_per_batch,
                       throttle=args.throttle, source=source)
