"""The Kafka calls of a plan's execution, through one kafka-python admin client.

Everything the executor (:mod:`kafka_replica_assignor.planner.execution.executor`) asks of a cluster, as plain values:
partitions as ``(topic, partition)``, replica lists as tuples, config changes as
``{name: value}`` where ``None`` deletes the key (IncrementalAlterConfigs DELETE). Errors of
the whole request are kafka-python's exceptions; per-partition errors come back as names.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import kafka.errors as kafka_errors

from .cluster_reader import ClusterRead, read_cluster

__all__ = ["Ongoing", "ReassignmentAdmin"]

Key = tuple[str, int]
Replica = tuple[str, int, int]      # topic, partition, broker


@dataclass(frozen=True, slots=True)
class Ongoing:
    """One reassignment in progress, as ListPartitionReassignments reports it."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


def _by_topic(keys: Iterable[Key]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for topic, part in keys:
        out.setdefault(topic, []).append(part)
    return out


def _errors(results: Mapping[Any, Any]) -> dict[Key, str]:
    out = {}
    for tp, err in results.items():
        if err is not None:
            out[(tp.topic, tp.partition)] = getattr(err, "__name__", str(err))
    return out


class ReassignmentAdmin:
    """A thin layer over ``KafkaAdminClient`` (module doc); it owns no state."""

    def __init__(self, admin: Any, reopen: Callable[[], Any] | None = None) -> None:
        self.admin = admin
        self._reopen = reopen

    def refresh(self) -> None:
        """A new client, with metadata read afresh (``reopen``): kafka-python 3.0.12 can keep a
        broker that restarted out of its metadata for good (UnknownBrokerIdError on every call
        that goes to it), and asking its refresh loop for an update does not always bring the
        broker back."""
        if self._reopen is None:
            return
        old, self.admin = self.admin, self._reopen()
        with contextlib.suppress(Exception):
            old.close()

    def close(self) -> None:
        self.admin.close()

    def read(self, *, with_sizes: bool = True) -> ClusterRead:
        return read_cluster(self.admin, with_sizes=with_sizes)

    def ongoing(self) -> dict[Key, Ongoing]:
        answer = self.admin.list_partition_reassignments()
        return {(tp.topic, tp.partition): Ongoing(tuple(r["replicas"]), tuple(r["adding_replicas"]),
                                                  tuple(r["removing_replicas"]))
                for tp, r in answer.items()}

    def replicas(self, topics: Iterable[str]) -> dict[Key, tuple[int, ...]]:
        """Current replica lists of the partitions of ``topics`` (Metadata)."""
        out: dict[Key, tuple[int, ...]] = {}
        for t in self.admin.describe_topics(sorted(set(topics))):
            if t.get("error_code"):
                continue
            for p in t.get("partitions") or ():
                out[(t["name"], int(p["partition_index"]))] = tuple(p.get("replica_nodes") or ())
        return out

    def reassign(self, targets: Mapping[Key, Sequence[int] | None]) -> dict[Key, str]:
        """AlterPartitionReassignments (``None`` cancels); the partitions refused, with why."""
        from kafka import TopicPartition

        if not targets:
            return {}
        request = {TopicPartition(t, p): (None if r is None else list(r)) for (t, p), r in targets.items()}
        return _errors(self.admin.alter_partition_reassignments(request))

    def _replica_dirs(self, topics: Iterable[str]) -> Iterator[tuple[Replica, str, bool, int]]:
        """DescribeLogDirs to every broker: ``(replica, directory, future, size_bytes)`` for each
        replica of ``topics`` (directories that answer an error left out)."""
        for answer in self.admin.describe_log_dirs(sorted(set(topics))):
            broker = int(answer["broker"])
            for log_dir in answer.get("log_dirs") or ():
                if log_dir.get("error_code"):
                    continue
                for t in log_dir.get("topics") or ():
                    for p in t.get("partitions") or ():
                        yield ((t["name"], int(p["partition_index"]), broker), log_dir["log_dir"],
                               bool(p.get("is_future_key")), int(p.get("partition_size") or 0))

    def log_dirs(self, topics: Iterable[str]) -> tuple[dict[Replica, str], set[Replica]]:
        """Where each replica of ``topics`` lives, and the replicas with a future copy (an
        intra-broker move under way)."""
        where: dict[Replica, str] = {}
        future: set[Replica] = set()
        for key, directory, is_future, _ in self._replica_dirs(topics):
            if is_future:
                future.add(key)
            else:
                where[key] = directory
        return where, future

    def replica_bytes(self, topics: Iterable[str]) -> dict[Replica, int]:
        """The bytes each replica of ``topics`` holds (its current log, not a future copy): what
        a reassignment's adding replicas have copied so far."""
        return {key: size for key, _, is_future, size in self._replica_dirs(topics) if not is_future}

    def alter_log_dirs(self, replicas: Mapping[Replica, str]) -> dict[Replica, str]:
        """AlterReplicaLogDirs: move each replica ``(topic, partition, broker)`` to its
        directory; the replicas refused, with why."""
        if not replicas:
            return {}
        answer = self.admin.alter_replica_log_dirs(dict(replicas))
        return {(tpr.topic, tpr.partition, tpr.broker_id): getattr(err, "__name__", str(err))
                for tpr, err in answer.items() if err is not None and err is not kafka_errors.NoError}

    def alter_configs(self, brokers: Mapping[int, Mapping[str, str | None]] = {},
                      topics: Mapping[str, Mapping[str, str | None]] = {}) -> dict[str, str]:
        """IncrementalAlterConfigs: SET each value, DELETE each ``None``; the resources refused."""
        from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType

        def ops(configs: Mapping[str, str | None]) -> dict[str, tuple[AlterConfigOp, str | None]]:
            return {k: (AlterConfigOp.DELETE, None) if v is None else (AlterConfigOp.SET, v)
                    for k, v in configs.items()}

        resources = [ConfigResource(ConfigResourceType.BROKER, str(b), ops(c)) for b, c in sorted(brokers.items())]
        resources += [ConfigResource(ConfigResourceType.TOPIC, t, ops(c)) for t, c in sorted(topics.items())]
        if not resources:
            return {}
        answer = self._retrying(lambda: self.admin.alter_configs(resources, raise_on_unknown=False,
                                                                 incremental=True))
        refused = {}
        for kind, results in answer.items():
            for name, result in results.items():
                if result != "OK":
                    refused[f"{kind} {name}"] = str(result)
        return refused

    def _retrying(self, call: Callable[[], Any], attempts: int = 5, pause_s: float = 1.0) -> Any:
        """Broker configs go to the broker itself: one that just restarted may be missing
        from the client's metadata for a moment. Ask for fresh metadata and try again."""
        for attempt in range(attempts):
            try:
                return call()
            except (kafka_errors.UnknownBrokerIdError, kafka_errors.NodeNotReadyError,
                    kafka_errors.KafkaConnectionError):
                if attempt == attempts - 1:
                    raise
                cluster = getattr(getattr(self.admin, "_manager", None), "cluster", None)
                if cluster is not None:     # kafka-python 3: wakes its metadata refresh loop
                    cluster.request_update()
                time.sleep(pause_s)
        raise AssertionError("unreachable")

    def configs(self, brokers: Iterable[int] = (), topics: Iterable[str] = (),
                names: Sequence[str] = ()) -> dict[str, dict[str, str]]:
        """The dynamic values of ``names`` set on each broker (``"broker 1"``) and topic
        (``"topic t"``); resources with none of them are left out."""
        from kafka.admin import ConfigResource, ConfigResourceType

        resources = [ConfigResource(ConfigResourceType.BROKER, str(b)) for b in sorted(set(brokers))]
        resources += [ConfigResource(ConfigResourceType.TOPIC, t) for t in sorted(set(topics))]
        if not resources:
            return {}
        answer = self.admin.describe_configs(resources, config_filter="modified")
        out: dict[str, dict[str, str]] = {}
        for kind, by_name in answer.items():
            for name, entries in by_name.items():
                found = {k: e.get("value") for k, e in (entries or {}).items()
                         if k in names and e.get("value") is not None}
                if found:
                    out[f"{kind} {name}"] = found
        return out

    def min_isr(self, topics: Iterable[str]) -> dict[str, int]:
        """Each topic's min.insync.replicas (its own, or the brokers' default)."""
        from kafka.admin import ConfigResource, ConfigResourceType

        names = sorted(set(topics))
        if not names:
            return {}
        resources = [ConfigResource(ConfigResourceType.TOPIC, t, ["min.insync.replicas"]) for t in names]
        answer = self.admin.describe_configs(resources, config_filter="all")
        out = {}
        for name, entries in answer.get("topic", {}).items():
            value = (entries or {}).get("min.insync.replicas", {}).get("value")
            if value is not None:
                out[name] = int(value)
        return out

    def elect_preferred(self, keys: Iterable[Key]) -> tuple[list[Key], dict[Key, str]]:
        """ElectLeaders (preferred): the partitions whose leader changed, and those refused
        (ELECTION_NOT_NEEDED, a leader already preferred, is neither)."""
        wanted = _by_topic(keys)
        if not wanted:
            return [], {}
        response = self.admin.elect_leaders(0, wanted, raise_errors=False)
        elected: list[Key] = []
        refused: dict[Key, str] = {}
        for result in response.replica_election_results:
            for p in result.partition_result:
                key = (result.topic, p.partition_id)
                if p.error_code == 0:
                    elected.append(key)
                elif p.error_code != kafka_errors.ElectionNotNeededError.errno:
                    refused[key] = kafka_errors.for_code(p.error_code).__name__
        top = getattr(response, "error_code", 0)
        if top:
            raise kafka_errors.for_code(top)("ElectLeaders failed")
        return sorted(elected), refused
