"""Apache Kafka's command-line tools by their script names, run from the kit's own jars.

``bash scripts/kafka-cluster.sh tool kafka-topics --bootstrap-server HOST:PORT --describe`` runs
what Kafka's ``bin/kafka-topics.sh`` runs: the tool's Java main class, on the jars of
``scripts/kafka/pom.xml`` (``.kafka/<version>/lib``), with a small heap and warnings on stderr.
A name may be written with or without ``.sh``; every other argument is passed as given, and the
tool's own output and exit code are the command's.

:data:`TOOLS` maps each script of Kafka 4.3.1's ``bin/`` that the pinned jars can run to its main
class (as ``bin/<name>.sh`` names it). The test ``tests/kafka/test_kit.py`` checks that every class
is in the jars and answers ``--help``. Scripts that need jars the kit does not pin (Connect,
the metadata shell, Trogdor) and the broker itself (``kafka-server-start``: use ``up`` and
``start-node``) are not listed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

#: script name (without ``.sh``) -> main class, from Kafka 4.3.1's bin/*.sh
TOOLS: dict[str, str] = {
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-client-metrics": "org.apache.kafka.tools.ClientMetricsCommand",
    "kafka-cluster": "org.apache.kafka.tools.ClusterTool",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-share-consumer": "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-delegation-tokens": "org.apache.kafka.tools.DelegationTokenCommand",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-dump-log": "org.apache.kafka.tools.DumpLogSegments",
    "kafka-e2e-latency": "org.apache.kafka.tools.EndToEndLatency",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-groups": "org.apache.kafka.tools.GroupsCommand",
    "kafka-jmx": "org.apache.kafka.tools.JmxTool",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-replica-verification": "org.apache.kafka.tools.ReplicaVerificationTool",
    "kafka-share-consumer-perf-test": "org.apache.kafka.tools.ShareConsumerPerformance",
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-streams-application-reset": "org.apache.kafka.tools.StreamsResetter",
    "kafka-streams-groups": "org.apache.kafka.tools.streams.StreamsGroupCommand",
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-verifiable-consumer": "org.apache.kafka.tools.VerifiableConsumer",
    "kafka-verifiable-producer": "org.apache.kafka.tools.VerifiableProducer",
}

#: the heap of one tool run (Kafka's kafka-run-class.sh gives tools -Xmx256M)
TOOL_HEAP = ("-Xms32m", "-Xmx256m")

TOOLS_LOG4J2 = """\
status = error
appender.err.type = Console
appender.err.name = ERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = ERR
"""


class UnknownTool(ValueError):
    """A name that is not one of :data:`TOOLS` (the message lists them)."""


def main_class(name: str) -> str:
    """The main class of Kafka's script ``name`` (``kafka-topics`` or ``kafka-topics.sh``; a
    path such as ``bin/kafka-topics.sh`` is taken by its last part)."""
    script = Path(name).name.removesuffix(".sh")
    try:
        return TOOLS[script]
    except KeyError:
        raise UnknownTool(f"unknown tool {name!r}: the kit runs {', '.join(TOOLS)}") from None


def log_config(cache: Path) -> Path:
    """The tools' log4j2 configuration (warnings to stderr), written once beside the jars."""
    path = cache / "tools-log4j2.properties"
    if not path.is_file() or path.read_text() != TOOLS_LOG4J2:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(TOOLS_LOG4J2)
        tmp.replace(path)
    return path


def command(lib: Path, main: str, args: Sequence[str], *, log_config: Path,
            jvm_flags: Sequence[str] = (), heap: Sequence[str] = TOOL_HEAP) -> list[str]:
    """The ``java`` command line that runs ``main`` with ``args`` on the jars in ``lib``."""
    return ["java", *heap, *jvm_flags, f"-Dlog4j2.configurationFile={log_config}", "-cp", f"{lib}/*", main, *args]
