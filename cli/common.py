"""Helpers shared by the subcommands: one-line errors, JSON output, Kafka's plan formats."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping


class CommandError(Exception):
    """Bad input or a refused request: printed as one line on stderr, exit code ``code``."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def fail(prog: str, exc: BaseException, code: int = 1) -> int:
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    print(f"{prog}: error: {message}", file=sys.stderr)
    return getattr(exc, "code", code) if isinstance(exc, CommandError) else code


def read_json(path: str, what: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as exc:
        raise CommandError(f"cannot read {what} {path}: {exc.strerror or exc}", 2) from None
    except json.JSONDecodeError as exc:
        raise CommandError(f"{what} {path} is not valid JSON: {exc}", 2) from None


def reassignment_json(topic: str, assignment: Mapping[int, Iterable[int]]) -> dict:
    """Kafka's reassignment JSON v1, as kafka-reassign-partitions.sh --execute reads it."""
    return {"version": 1, "partitions": [
        {"topic": topic, "partition": p, "replicas": list(r)} for p, r in sorted(assignment.items())]}


def current_assignment_from_reassignment(data, topic: str | None) -> tuple[str, dict[int, list[int]]]:
    """A topic's assignment from Kafka reassignment JSON (``--current-assignment FILE``)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("partitions"), list):
        raise CommandError("current assignment must be Kafka reassignment JSON with a 'partitions' list", 2)
    topics = {p.get("topic") for p in data["partitions"] if isinstance(p, Mapping)}
    if topic is None:
        if len(topics) != 1:
            raise CommandError(f"current assignment holds topics {sorted(map(str, topics))}: name one with --topic", 2)
        topic = topics.pop()
    out: dict[int, list[int]] = {}
    for i, p in enumerate(data["partitions"]):
        if not isinstance(p, Mapping) or p.get("topic") != topic:
            continue
        part, reps = p.get("partition"), p.get("replicas")
        if not isinstance(part, int) or not isinstance(reps, list) or not all(isinstance(b, int) for b in reps):
            raise CommandError(f"current assignment partitions[{i}] needs an integer 'partition' and 'replicas'", 2)
        out[part] = reps
    if not out:
        raise CommandError(f"current assignment has no partitions of topic {topic!r}", 2)
    return topic, out


def print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, indent=None, separators=(",", ":")) + "\n")
