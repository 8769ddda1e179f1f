"""A real Apache Kafka cluster on 127.0.0.1, from the project's own files.

``bash scripts/kafka-cluster.sh up|status|stop-node N|start-node N|down|tool NAME ...`` (this
module's :func:`main`) and the session fixture of the ``kafka`` tests both use :class:`KafkaCluster`.

- **Resolve**: ``scripts/kafka/pom.xml`` pins Apache Kafka (broker, controller, Kafka's own tools)
  and a log4j2 binding; ``mvn dependency:copy-dependencies`` copies the jars into
  ``.kafka/<version>/lib`` once. A stamp names the pom's hash, so a second run calls no Maven at
  all (works offline); a changed pom resolves again.
- **Directory**: ``--dir`` (default ``.kafka/cluster``; a relative path is taken from the caller's
  folder) must be absent, empty, or one this kit made: ``up`` writes the marker file
  ``.kafka-cluster-dir`` into a directory it creates or finds empty, and refuses any other
  non-empty directory (exit 2) rather than delete what is in it.
- **Start**: node 0 is a combined KRaft controller and broker, nodes 1..N are brokers. Every
  listener and advertised listener is 127.0.0.1 on a free port; each node has ``broker.rack``
  (flat names or multi-level paths such as ``/dc1/zone-a``), two ``log.dirs`` and a small heap.
  ``up`` returns when every broker is registered and unfenced (DescribeCluster lists it). The
  node count is bounded by the machine's memory (:func:`node_limit`).
- **Records**: ``cluster.json`` holds each node's ports, pid and state (``running`` or
  ``stopped``), rewritten by ``up``, ``stop-node``, ``start-node`` and ``down``; ``status`` reads it
  and checks each pid against its command line (a pid can be reused). A node whose JVM was
  started by hand on the node's own ``server.properties`` is shown as such, with its pid.
- **Stop**: ``stop-node N`` stops one node (controlled shutdown, SIGKILL after 30 s; with
  ``--kill`` SIGKILL at once, a crash);
  ``start-node N`` starts it again and waits until it is registered and unfenced. ``down``
  signals exactly the processes it recorded, says which it stopped and which it left (a JVM it
  did not start keeps running, and the data under that node is kept, with ``cluster.json``);
  the data of the nodes it accounts for is removed.
- **Tools**: ``tool NAME ARGS...`` runs Kafka's own tool of that script name
  (:mod:`scripts.kafka_tools`).

Errors are one line (:class:`ClusterError`); bad arguments exit 2, a refused or failed
operation 1.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NoReturn

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: the project's packages (protocol/) by path
    sys.path.insert(0, str(REPO))

from scripts import kafka_jars, kafka_tools  # noqa: E402 - after the path set-up above

POM = REPO / "scripts" / "kafka" / "pom.xml"
CACHE = Path(os.environ.get("KAFKA_CACHE_DIR", REPO / ".kafka"))
DEFAULT_DIR = CACHE / "cluster"
DEFAULT_RACKS = ("rack-a", "rack-b", "rack-c")
HEAP = os.environ.get("KAFKA_TEST_HEAP", "-Xms96m -Xmx320m")
JVM_FLAGS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k", "-Djava.awt.headless=true",
             "-Djava.net.preferIPv4Stack=true")
#: written into a directory ``up`` created ("created") or found empty ("adopted")
MARKER = ".kafka-cluster-dir"
#: memory a node takes besides its heap (metaspace, code cache, thread stacks, buffers): measured
#: 275-290 MiB resident per JVM with the 320 MiB heap cap, so heap + 96 MiB is an upper figure
NON_HEAP_MIB = 96
#: memory left to everything else on the machine (the OS, the assignor server, the tests)
RESERVED_MIB = 2048
EXIT_FAILED, EXIT_USAGE = 1, 2


class ClusterError(RuntimeError):
    """A one-line reason the cluster cannot be resolved, started, or reached; ``code`` is the
    exit code (1: a refused or failed operation, 2: bad arguments)."""

    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.code = code


def kafka_version(pom: Path = POM) -> str:
    return kafka_jars.kafka_version(pom)


def resolve(pom: Path = POM, cache: Path = CACHE) -> Path:
    """The directory of Kafka's jars (scripts/kafka_jars.py: Maven on the first run only)."""
    try:
        lib = kafka_jars.resolve(pom, cache / kafka_version(pom))
    except kafka_jars.JarsUnavailable as exc:
        raise ClusterError(f"cannot resolve Apache Kafka from Maven Central: {exc}") from None
    if shutil.which("java") is None:
        raise ClusterError("cannot run Apache Kafka: Java (java) is not installed")
    return lib


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def random_cluster_id() -> str:
    """A Kafka ``Uuid`` in its base64 form (Kafka never hands out one that starts with '-')."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


# ---- how many nodes the machine holds ------------------------------------------------------

def heap_mib(heap: str = HEAP) -> int:
    """The ``-Xmx`` of ``heap`` in MiB (Java's own default, a quarter of memory, is not assumed:
    without ``-Xmx`` the answer is 1024)."""
    match = re.search(r"-Xmx(\d+)([kKmMgG]?)", heap)
    if match is None:
        return 1024
    value, unit = int(match.group(1)), match.group(2).lower()
    return {"k": value // 1024, "m": value, "g": value * 1024, "": value // (1024 * 1024)}[unit]


def node_memory_mib(heap: str = HEAP) -> int:
    """What one node is counted at: its heap cap plus :data:`NON_HEAP_MIB`."""
    return heap_mib(heap) + NON_HEAP_MIB


def meminfo_mib(key: str, path: Path = Path("/proc/meminfo")) -> int:
    for line in path.read_text().splitlines():
        name, _, rest = line.partition(":")
        if name == key:
            return int(rest.split()[0]) // 1024
    raise ClusterError(f"{path} has no {key}")


def node_limit(total_mib: int | None = None, heap: str = HEAP) -> int:
    """The most nodes this machine holds: its memory less :data:`RESERVED_MIB`, over what one
    node is counted at (24 GiB and the default heap: 54 nodes, node 0 and 53 brokers)."""
    total = meminfo_mib("MemTotal") if total_mib is None else total_mib
    return max(0, (total - RESERVED_MIB) // node_memory_mib(heap))


def check_node_count(brokers: int, heap: str = HEAP) -> None:
    """``--brokers`` within the machine (exit 2), and the memory free now (exit 1)."""
    nodes, each = brokers + 1, node_memory_mib(heap)
    limit = node_limit(heap=heap)
    if nodes > limit:
        raise ClusterError(
            f"--brokers {brokers} is more than this machine holds: {nodes} nodes at about {each} MiB each "
            f"(heap {heap_mib(heap)} MiB + {NON_HEAP_MIB} MiB besides) need {nodes * each} MiB, and "
            f"{meminfo_mib('MemTotal')} MiB less {RESERVED_MIB} MiB kept for the rest hold {limit} nodes: "
            f"at most --brokers {max(0, limit - 1)}", EXIT_USAGE)
    available = meminfo_mib("MemAvailable")
    if nodes * each > available:
        raise ClusterError(f"{nodes} nodes need about {nodes * each} MiB and only {available} MiB is available "
                           "now: stop something, or ask for fewer --brokers")


# ---- the directory ---------------------------------------------------------------------------

def check_directory(directory: Path) -> None:
    """``up`` may use ``directory``: absent, empty, or made by this kit and holding no cluster.
    Nothing is written here (bad arguments exit 2 before anything is created)."""
    if directory.exists() and not directory.is_dir():
        raise ClusterError(f"--dir {directory} is a file, not a directory", EXIT_USAGE)
    if not directory.exists():
        return
    if (directory / "cluster.json").exists():
        raise ClusterError(f"a cluster is already recorded in {directory} (run 'status', or 'down' first)")
    if (directory / MARKER).is_file() or not any(directory.iterdir()):
        return
    raise ClusterError(f"--dir {directory} is not empty and was not made by kafka-cluster.sh (no {MARKER}): "
                       "its files are left alone; name an empty or new directory", EXIT_USAGE)


def prepare_directory(directory: Path) -> None:
    """Create ``directory`` (or take an empty one) and mark it; what an earlier failed ``up``
    left in a marked directory is cleared."""
    check_directory(directory)
    if not directory.exists():
        directory.mkdir(parents=True)
        (directory / MARKER).write_text("created\n")
        return
    if not (directory / MARKER).is_file():
        (directory / MARKER).write_text("adopted\n")
        return
    for entry in directory.iterdir():
        if entry.name != MARKER:
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()


LOG4J2 = """\
status = error
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
logger.coord.name = org.apache.kafka.coordinator
logger.coord.level = WARN
"""

TOOLS_LOG4J2 = kafka_tools.TOOLS_LOG4J2


@dataclass
class Node:
    node_id: int
    rack: str
    port: int
    controller_port: int | None = None
    pid: int | None = None
    #: what the kit last did to the node: "running" (started) or "stopped"
    state: str = "stopped"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def role(self) -> str:
        return "controller+broker" if self.controller_port else "broker"


@dataclass(frozen=True)
class NodeStatus:
    """What runs for a node now: ``running`` (the JVM the kit recorded), ``stopped`` (by the
    kit), ``exited`` (recorded running, gone), ``foreign`` (a JVM on the node's own
    ``server.properties`` that the kit did not start: ``pid`` is its)."""

    state: str
    pid: int | None = None

    def text(self) -> str:
        if self.state == "foreign":
            return "running, not started by kafka-cluster.sh"
        if self.state == "exited":
            return "exited (recorded running, its process is gone: see its server.log)"
        return self.state


@dataclass
class DownReport:
    """What ``down`` did: nodes stopped (with pids), nodes that were not running, nodes left
    running (with pids), and the directories removed."""

    stopped: list[tuple[int, int]] = field(default_factory=list)
    not_running: list[int] = field(default_factory=list)
    left: list[tuple[int, int]] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)


def _proc_state(pid: int) -> tuple[bytes, str] | None:
    """(command line, state letter) of ``pid``, or None when it is gone."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return None
    return cmdline, state


def _pids_running(needle: bytes) -> list[int]:
    """The live processes whose command line holds ``needle``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            seen = _proc_state(int(entry.name))
            if seen is not None and seen[1] != "Z" and needle in seen[0]:
                found.append(int(entry.name))
    return sorted(found)



@dataclass
class KafkaCluster:
    """A KRaft cluster of ``brokers + 1`` nodes on loopback; see the module docstring."""

    directory: Path = DEFAULT_DIR
    brokers: int = 4
    racks: Sequence[str] = DEFAULT_RACKS
    nodes: list[Node] = field(default_factory=list)
    cluster_id: str = ""
    lib: Path | None = None
    started_seconds: float = 0.0
    #: JVM options besides the heap (the default favours a quick start over peak speed)
    jvm_flags: Sequence[str] = JVM_FLAGS
    #: the JVMs this object started (kept so they are reaped, not left to the garbage collector)
    processes: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False)

    # ---- files --------------------------------------------------------------------------
    @property
    def state_file(self) -> Path:
        return self.directory / "cluster.json"

    @property
    def bootstrap(self) -> str:
        return ",".join(node.address for node in self.nodes)

    def node(self, node_id: int) -> Node:
        for node in self.nodes:
            if node.node_id == node_id:
                return node
        raise ClusterError(f"no node {node_id} in {self.directory}: its nodes are "
                           f"{', '.join(str(n.node_id) for n in self.nodes)}", EXIT_USAGE)

    def node_dir(self, node_id: int) -> Path:
        return self.directory / f"node-{node_id}"

    def log_dirs(self, node_id: int) -> list[Path]:
        return [self.node_dir(node_id) / "data-0", self.node_dir(node_id) / "data-1"]

    def save(self) -> None:
        data = {"cluster_id": self.cluster_id, "lib": str(self.lib), "bootstrap": self.bootstrap,
                "racks": list(self.racks), "nodes": [asdict(n) for n in self.nodes]}
        tmp = self.state_file.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(self.state_file)

    @classmethod
    def load(cls, directory: Path = DEFAULT_DIR) -> KafkaCluster:
        state = directory / "cluster.json"
        if not state.exists():
            raise ClusterError(f"no cluster recorded in {directory} (run 'up' first)")
        try:
            data = json.loads(state.read_text())
            nodes = [Node(**{"state": "running" if n.get("pid") else "stopped", **n}) for n in data["nodes"]]
            return cls(directory=directory, brokers=len(nodes) - 1, racks=tuple(data["racks"]), nodes=nodes,
                       cluster_id=data["cluster_id"], lib=Path(data["lib"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ClusterError(f"{state} is not a record of kafka-cluster.sh: {exc}") from None

    def properties(self, node: Node) -> str:
        controller = self.nodes[0]
        lines = {
            "node.id": node.node_id,
            "process.roles": "broker,controller" if node.controller_port else "broker",
            "controller.quorum.voters": f"{controller.node_id}@127.0.0.1:{controller.controller_port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listeners": (f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}"
                          if node.controller_port else f"PLAINTEXT://127.0.0.1:{node.port}"),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "broker.rack": node.rack,
            "log.dirs": ",".join(str(d) for d in self.log_dirs(node.node_id)),
            "num.partitions": 1,
            "default.replication.factor": 1,
            "offsets.topic.replication.factor": 1,
            "offsets.topic.num.partitions": 3,
            "transaction.state.log.replication.factor": 1,
            "transaction.state.log.min.isr": 1,
            "share.coordinator.state.topic.replication.factor": 1,
            "share.coordinator.state.topic.min.isr": 1,
            "group.initial.rebalance.delay.ms": 0,
            "auto.create.topics.enable": "false",
            "num.network.threads": 2,
            "num.io.threads": 2,
            "num.replica.fetchers": 1,
            "num.recovery.threads.per.data.dir": 1,
            "background.threads": 2,
            "log.segment.bytes": 8 * 1024 * 1024,
            "replica.lag.time.max.ms": 10000,
            "broker.heartbeat.interval.ms": 500,
            "broker.session.timeout.ms": 6000,
            "controlled.shutdown.enable": "true",
            "auto.leader.rebalance.enable": "false",
        }
        return "".join(f"{key}={value}\n" for key, value in lines.items())


    def _java(self, main: str, *args: str, log_config: Path, extra: Sequence[str] = ()) -> list[str]:
        assert self.lib is not None
        return ["java", *HEAP.split(), *self.jvm_flags, *extra, f"-Dlog4j2.configurationFile={log_config}",
                "-cp", f"{self.lib}/*", main, *args]

    # ---- lifecycle ----------------------------------------------------------------------
    def up(self, timeout: float = 120.0) -> KafkaCluster:
        if self.brokers < 0:
            raise ClusterError("--brokers must be 0 or more", EXIT_USAGE)
        if not self.racks or any(not r for r in self.racks):
            raise ClusterError("--racks needs non-empty rack names", EXIT_USAGE)
        check_directory(self.directory)
        check_node_count(self.brokers)
        began = time.monotonic()
        self.lib = resolve()
        prepare_directory(self.directory)
        (self.directory / "log4j2.properties").write_text(LOG4J2)
        (self.directory / "tools-log4j2.properties").write_text(TOOLS_LOG4J2)
        self.cluster_id = random_cluster_id()
        self.nodes = [Node(node_id=i, rack=self.racks[i % len(self.racks)], port=free_port(),
                           controller_port=free_port() if i == 0 else None)
                      for i in range(self.brokers + 1)]
        self._format()
        for node in self.nodes:
            self.start_node(node.node_id)
        try:
            self.wait_ready(timeout=timeout)
        except ClusterError:
            self.down()
            raise
        self.started_seconds = time.monotonic() - began
        return self

    def _format(self) -> None:
        """``kafka-storage format`` for every node, in parallel."""
        formats = []
        for node in self.nodes:
            home = self.node_dir(node.node_id)
            home.mkdir()
            (home / "server.properties").write_text(self.properties(node))
            formats.append(subprocess.Popen(
                self._java("kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c",
                           str(home / "server.properties"), "--ignore-formatted",
                           log_config=self.directory / "tools-log4j2.properties"),
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        for node, proc in zip(self.nodes, formats, strict=True):
            out, _ = proc.communicate(timeout=120)
            if proc.returncode != 0:
                raise ClusterError(f"formatting node {node.node_id} failed: {out.strip().splitlines()[-1:]}")

    def start_node(self, node_id: int) -> None:
        """Start node ``node_id``'s JVM (no wait; :meth:`wait_ready` waits) and record it."""
        node = self.node(node_id)
        if node.pid is not None and self._owns(node):
            return
        home = self.node_dir(node_id)
        with open(home / "stdout.log", "ab") as out:
            proc = subprocess.Popen(
                self._java("kafka.Kafka", str(home / "server.properties"),
                           log_config=self.directory / "log4j2.properties",
                           extra=[f"-Dkafka.logs.dir={home}", f"-Dreplica.assignor.cluster={self.directory}"]),
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        node.pid, node.state = proc.pid, "running"
        self.processes[node_id] = proc
        self.save()

    def stop_node(self, node_id: int, timeout: float = 30.0) -> int | None:
        """Stop node ``node_id`` if this kit runs it (SIGTERM: a controlled shutdown; SIGKILL
        after ``timeout``) and record it stopped; the pid stopped, or None."""
        node = self.node(node_id)
        stopped = None
        if node.pid is not None and self._owns(node):
            stopped = node.pid
            os.kill(node.pid, signal.SIGTERM)
            if not self._wait_gone(node, timeout):
                os.kill(node.pid, signal.SIGKILL)
                self._wait_gone(node, 10)
        node.pid, node.state = None, "stopped"
        self.save()
        return stopped

    def kill_node(self, node_id: int) -> int | None:
        """SIGKILL node ``node_id`` if this kit runs it (no controlled shutdown: a crash, as a
        power cut of the JVM) and record it stopped; the pid killed, or None."""
        node = self.node(node_id)
        killed = None
        if node.pid is not None and self._owns(node):
            killed = node.pid
            os.kill(node.pid, signal.SIGKILL)
            self._wait_gone(node, 10)
        node.pid, node.state = None, "stopped"
        self.save()
        return killed

    def down(self) -> DownReport:
        """Stop every JVM this kit recorded (brokers first, then the controller); remove the data
        of every node accounted for. A node run by a JVM the kit did not start is left running
        with its data, and ``cluster.json`` then stays to say so."""
        report = DownReport()
        statuses = {node.node_id: self.status(node) for node in self.nodes}
        ours = [n for n in self.nodes if statuses[n.node_id].state == "running"]
        for group in ([n for n in ours if not n.controller_port], [n for n in ours if n.controller_port]):
            for node in group:
                assert node.pid is not None
                os.kill(node.pid, signal.SIGTERM)
            for node in group:
                assert node.pid is not None
                report.stopped.append((node.node_id, node.pid))
                if not self._wait_gone(node, 20):
                    os.kill(node.pid, signal.SIGKILL)
                    self._wait_gone(node, 10)
                node.pid, node.state = None, "stopped"
        for node in self.nodes:
            seen = statuses[node.node_id]
            if seen.state == "foreign":
                assert seen.pid is not None
                report.left.append((node.node_id, seen.pid))
            elif seen.state != "running":
                report.not_running.append(node.node_id)
                node.pid, node.state = None, "stopped"
        self._remove_data(report)
        return report

    def _remove_data(self, report: DownReport) -> None:
        if report.left:  # keep the record of what still runs, and its data
            left = {node_id for node_id, _ in report.left}
            for node in self.nodes:
                if node.node_id not in left and self.node_dir(node.node_id).exists():
                    shutil.rmtree(self.node_dir(node.node_id), ignore_errors=True)
                    report.removed.append(self.node_dir(node.node_id))
            self.save()
            return
        if (self.directory / MARKER).is_file() and (self.directory / MARKER).read_text().strip() == "adopted":
            for entry in self.directory.iterdir():  # the directory was there before: only its contents go
                shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)
        else:
            shutil.rmtree(self.directory, ignore_errors=True)
        report.removed.append(self.directory)

    # ---- what runs ------------------------------------------------------------------------
    def _needle(self, node: Node) -> bytes:
        """What every JVM of ``node`` has on its command line: its own server.properties."""
        return str(self.node_dir(node.node_id) / "server.properties").encode()

    def _owns(self, node: Node) -> bool:
        """Whether the recorded pid of ``node`` is still its JVM, started by this kit (a pid can
        be reused)."""
        pid = node.pid
        if pid is None:
            return False
        for proc in self.processes.values():
            if proc.pid == pid:
                return proc.poll() is None
        seen = _proc_state(pid)
        return (seen is not None and seen[1] != "Z" and self._needle(node) in seen[0]
                and f"-Dreplica.assignor.cluster={self.directory}".encode() in seen[0])

    def status(self, node: Node) -> NodeStatus:
        """What runs for ``node`` now (see :class:`NodeStatus`)."""
        if self._owns(node):
            return NodeStatus("running", node.pid)
        others = [pid for pid in _pids_running(self._needle(node)) if pid != os.getpid()]
        if others:
            return NodeStatus("foreign", others[0])
        return NodeStatus("exited" if node.state == "running" else "stopped")

    def _wait_gone(self, node: Node, timeout: float) -> bool:
        for node_id, proc in list(self.processes.items()):
            if proc.pid == node.pid:
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    return False
                del self.processes[node_id]
                return True
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self._owns(node):
                return True
            time.sleep(0.1)
        return False

    # ---- health -------------------------------------------------------------------------
    def alive(self, node_id: int) -> bool:
        return self._owns(self.node(node_id))

    def check(self, expect_down: Sequence[int] = ()) -> None:
        """Raise with the node's last log lines if a node that should run has died."""
        for node in self.nodes:
            if node.node_id not in expect_down and not self.alive(node.node_id):
                raise ClusterError(f"broker {node.node_id} (rack {node.rack}) is not running; last lines of "
                                   f"its log:\n{self.last_lines(node.node_id)}")

    def last_lines(self, node_id: int, count: int = 15) -> str:
        lines: list[str] = []
        for name in ("server.log", "stdout.log"):
            path = self.node_dir(node_id) / name
            if path.exists():
                lines += path.read_text(errors="replace").splitlines()[-count:]
        return "\n".join(lines[-count:])

    def unfenced(self, bootstrap: str | None = None) -> set[int]:
        """The registered, unfenced broker ids (DescribeCluster, fenced ones left out), asked
        from a short-lived process: a client that fails to reach a broker that is starting or
        stopped leaves nothing (sockets, threads) behind in the caller."""
        run = subprocess.run([sys.executable, __file__, "probe", "--bootstrap", bootstrap or self.bootstrap],
                             capture_output=True, text=True, timeout=30)
        if run.returncode != 0:
            raise ClusterError((run.stderr.strip().splitlines() or ["probe failed"])[-1])
        return set(json.loads(run.stdout))

    def wait_ready(self, timeout: float = 120.0, expect_down: Sequence[int] = ()) -> None:
        want = {n.node_id for n in self.nodes} - set(expect_down)
        alive = [n for n in self.nodes if n.node_id not in expect_down]
        deadline = time.monotonic() + timeout
        seen: set[int] = set()
        last = ""
        while time.monotonic() < deadline:
            self.check(expect_down)
            if not all(_listening(n.port) for n in alive):
                time.sleep(0.3)
                continue
            try:
                seen = self.unfenced(",".join(n.address for n in alive))
                if want <= seen:
                    return
            except Exception as exc:  # noqa: BLE001 - any client error means "not yet"
                last = f"{type(exc).__name__}: {exc}"
            time.sleep(0.5)
        raise ClusterError(f"brokers {sorted(want - seen)} not registered and unfenced after {timeout:.0f} s"
                           + (f" ({last})" if last else ""))

    def wait_fenced(self, node_id: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            others = ",".join(n.address for n in self.nodes if n.node_id != node_id and self.alive(n.node_id))
            try:
                if node_id not in self.unfenced(others):
                    return
            except Exception:  # noqa: BLE001
                pass
            time.sleep(0.5)
        raise ClusterError(f"broker {node_id} still listed as alive after {timeout:.0f} s")

    def rss_mib(self) -> dict[int, float]:
        out = {}
        for node in self.nodes:
            if self._owns(node):
                for line in Path(f"/proc/{node.pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        out[node.node_id] = int(line.split()[1]) / 1024
        return out

    # ---- Kafka's own tools --------------------------------------------------------------
    def tool(self, main: str, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        """Run one of Kafka's command-line tools against this cluster's jars: ``main`` is a
        main class, or a script name of :data:`scripts.kafka_tools.TOOLS` (``kafka-topics``)."""
        if main.startswith("kafka-"):
            main = kafka_tools.main_class(main)
        return subprocess.run(
            self._java(main, *args, log_config=self.directory / "tools-log4j2.properties"),
            capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def probe(bootstrap: str) -> list[int]:
    from kafka_replica_assignor.protocol.cluster_reader import open_admin_client

    admin = open_admin_client(bootstrap, 5000, {"client_id": "kafka-cluster-ready"})
    try:
        brokers = admin.describe_cluster()["brokers"]
        return sorted(int(b["broker_id"]) for b in brokers if not b.get("is_fenced", False))
    finally:
        admin.close()


# ---- the command line ------------------------------------------------------------------------

class _OneLineParser(argparse.ArgumentParser):
    """Bad arguments: one line and exit 2 (``--help`` shows the usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"kafka-cluster: {' '.join(message.split())} (see kafka-cluster.sh --help)\n")


def _whole(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not 0 < value < 86400:
        raise argparse.ArgumentTypeError(f"must be more than 0 and less than 86400 seconds, got {text}")
    return value


def _racks(text: str) -> tuple[str, ...]:
    racks = tuple(r.strip() for r in text.split(","))
    if not all(racks):
        raise argparse.ArgumentTypeError(f"must be comma-separated non-empty rack names, got {text!r}")
    return racks


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog="kafka-cluster.sh", description="An Apache Kafka KRaft cluster on 127.0.0.1.",
        epilog="kafka-cluster.sh tool NAME ARGS... runs Kafka's own tool of that script name "
               f"({', '.join(kafka_tools.TOOLS)}). Exit codes: 0 ok; 1 refused or failed; 2 bad arguments.")
    common = _OneLineParser(add_help=False)
    common.add_argument("--dir", type=Path, default=DEFAULT_DIR,
                        help="data and state directory (default .kafka/cluster; relative to the current folder)")
    common.add_argument("--timeout", type=_seconds, default=120.0, help="seconds to wait for the brokers")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_OneLineParser)
    up = sub.add_parser("up", parents=[common], help="start a cluster; prints the bootstrap address last")
    up.add_argument("--brokers", type=_whole, default=4,
                    help=f"brokers besides the combined controller+broker node 0 (default 4; at most "
                         f"{max(0, node_limit() - 1)} here: {node_memory_mib()} MiB a node)")
    up.add_argument("--racks", type=_racks, default=DEFAULT_RACKS,
                    help="comma-separated broker.rack values, given to nodes in turn; "
                         "multi-level paths such as /dc1/zone-a,/dc1/zone-b,/dc2/zone-a work too")
    sub.add_parser("status", parents=[common], help="each node's address, pid and state")
    sub.add_parser("down", parents=[common], help="stop what the kit started; remove the data")
    for name, what in (("stop-node", "stop one node"), ("start-node", "start one stopped node and wait for it")):
        one = sub.add_parser(name, parents=[common], help=what)
        one.add_argument("node_id", type=_whole, metavar="N")
        if name == "stop-node":
            one.add_argument("--kill", action="store_true",
                             help="SIGKILL, no controlled shutdown (a crash)")
    sub.add_parser("resolve", help="fetch Kafka's jars (once) and print their directory")
    probe_parser = sub.add_parser("probe")
    probe_parser.add_argument("--bootstrap", required=True)
    return parser


def _up(args: argparse.Namespace) -> int:
    cluster = KafkaCluster(directory=args.dir.resolve(), brokers=args.brokers, racks=args.racks)
    cluster.up(timeout=args.timeout)
    rss = cluster.rss_mib()
    for node in cluster.nodes:
        print(f"node {node.node_id} {node.role} rack={node.rack} {node.address} pid={node.pid} "
              f"rss={rss.get(node.node_id, 0):.0f}MiB", file=sys.stderr)
    print(f"started {len(cluster.nodes)} nodes in {cluster.started_seconds:.1f} s; records in "
          f"{cluster.state_file}", file=sys.stderr)
    print(cluster.bootstrap)
    return 0


def _status(args: argparse.Namespace) -> int:
    cluster = KafkaCluster.load(args.dir.resolve())
    for node in cluster.nodes:
        seen = cluster.status(node)
        print(f"node {node.node_id} {node.role} rack={node.rack} {node.address} "
              f"pid={seen.pid if seen.pid is not None else '-'} {seen.text()}")
    print(cluster.bootstrap)
    return 0


def _foreign(cluster: KafkaCluster, node: Node) -> NodeStatus:
    seen = cluster.status(node)
    if seen.state == "foreign":
        raise ClusterError(f"node {node.node_id} runs as pid {seen.pid}, which kafka-cluster.sh did not start: "
                           "stop that process yourself")
    return seen


def _stop_node(args: argparse.Namespace) -> int:
    cluster = KafkaCluster.load(args.dir.resolve())
    node = cluster.node(args.node_id)
    _foreign(cluster, node)
    pid = cluster.kill_node(node.node_id) if args.kill else cluster.stop_node(node.node_id, timeout=args.timeout)
    note = ("; node 0 is the only controller: the cluster answers nothing until start-node 0"
            if node.controller_port else "")
    print(f"stopped node {node.node_id} (pid {pid}){note}" if pid is not None
          else f"node {node.node_id} was not running", file=sys.stderr)
    return 0


def _start_node(args: argparse.Namespace) -> int:
    cluster = KafkaCluster.load(args.dir.resolve())
    node = cluster.node(args.node_id)
    if _foreign(cluster, node).state == "running":
        print(f"node {node.node_id} is running already (pid {node.pid})", file=sys.stderr)
        return 0
    controller = cluster.nodes[0]
    if node is not controller and cluster.status(controller).state != "running":
        raise ClusterError("node 0, the cluster's controller, is not running: start-node 0 first")
    began = time.monotonic()
    cluster.start_node(node.node_id)
    down = [n.node_id for n in cluster.nodes if n is not node and cluster.status(n).state != "running"]
    cluster.wait_ready(timeout=args.timeout, expect_down=down)
    print(f"node {node.node_id} {node.role} rack={node.rack} {node.address} pid={node.pid}: registered and "
          f"unfenced in {time.monotonic() - began:.1f} s", file=sys.stderr)
    return 0


def _down(args: argparse.Namespace) -> int:
    cluster = KafkaCluster.load(args.dir.resolve())
    report = cluster.down()
    for node_id, pid in report.stopped:
        print(f"stopped node {node_id} (pid {pid})", file=sys.stderr)
    for node_id in report.not_running:
        print(f"node {node_id} was not running", file=sys.stderr)
    for node_id, pid in report.left:
        print(f"left node {node_id} running: pid {pid} was not started by kafka-cluster.sh; its data stays in "
              f"{cluster.node_dir(node_id)}", file=sys.stderr)
    removed = ", ".join(str(p) for p in report.removed) or "nothing"
    print(f"stopped {len(report.stopped)} of {len(cluster.nodes)} nodes, left {len(report.left)} running; "
          f"removed {removed}" + (f"; {cluster.state_file} still records the cluster" if report.left else ""),
          file=sys.stderr)
    return EXIT_FAILED if report.left else 0


def run_tool(argv: Sequence[str]) -> NoReturn:
    """``tool NAME ARGS...``: this process becomes the tool's JVM (its output, exit code and
    signals are the tool's)."""
    if not argv or argv[0].startswith("-"):
        raise ClusterError(f"tool needs a name first: one of {', '.join(kafka_tools.TOOLS)}", EXIT_USAGE)
    try:
        main = kafka_tools.main_class(argv[0])
    except kafka_tools.UnknownTool as exc:
        raise ClusterError(str(exc), EXIT_USAGE) from None
    lib = resolve()
    log_config = kafka_tools.log_config(lib.parent)
    command = kafka_tools.command(lib, main, argv[1:], log_config=log_config, jvm_flags=JVM_FLAGS)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvp(command[0], command)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "up": _up, "status": _status, "down": _down, "stop-node": _stop_node, "start-node": _start_node,
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["tool"]:
            run_tool(argv[1:])
        args = build_parser().parse_args(argv)
        if args.command == "resolve":
            print(resolve())
            return 0
        if args.command == "probe":
            print(json.dumps(probe(args.bootstrap)))
            return 0
        return COMMANDS[args.command](args)
    except ClusterError as exc:
        print(f"kafka-cluster: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
