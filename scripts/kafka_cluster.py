"""A real Apache Kafka cluster on 127.0.0.1, from the project's own files.

``python scripts/kafka_cluster.py up|down|status`` (through ``scripts/kafka-cluster.sh``) and the
session fixture of the ``kafka`` tests both use :class:`KafkaCluster`.

- **Resolve**: ``scripts/kafka/pom.xml`` pins Apache Kafka (broker, controller, Kafka's own tools)
  and a log4j2 binding; ``mvn dependency:copy-dependencies`` copies the jars into
  ``.kafka/<version>/lib`` once. A stamp names the pom's hash, so a second run calls no Maven at
  all (works offline); a changed pom resolves again.
- **Start**: node 0 is a combined KRaft controller and broker, nodes 1..N are brokers. Every
  listener and advertised listener is 127.0.0.1 on a free port; each node has ``broker.rack``
  (flat names or multi-level paths such as ``/dc1/zone-a``), two ``log.dirs`` and a small heap.
  ``up`` returns when every broker is registered and unfenced (DescribeCluster lists it).
- **Stop**: ``down`` signals exactly the processes recorded in ``cluster.json`` (each pid checked
  against its command line first), then removes the data directory.

Errors are one line (:class:`ClusterError`); ``main`` prints it and exits 1.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: the project's packages (protocol/) by path
    sys.path.insert(0, str(REPO))

from scripts import kafka_jars  # noqa: E402 - after the path set-up above

POM = REPO / "scripts" / "kafka" / "pom.xml"
CACHE = Path(os.environ.get("KAFKA_CACHE_DIR", REPO / ".kafka"))
DEFAULT_DIR = CACHE / "cluster"
DEFAULT_RACKS = ("rack-a", "rack-b", "rack-c")
HEAP = os.environ.get("KAFKA_TEST_HEAP", "-Xms96m -Xmx320m")
JVM_FLAGS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k", "-Djava.awt.headless=true",
             "-Djava.net.preferIPv4Stack=true")


class ClusterError(RuntimeError):
    """A one-line reason the cluster cannot be resolved, started, or reached."""


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


@dataclass
class Node:
    node_id: int
    rack: str
    port: int
    controller_port: int | None = None
    pid: int | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


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
        raise KeyError(node_id)

    def node_dir(self, node_id: int) -> Path:
        return self.directory / f"node-{node_id}"

    def log_dirs(self, node_id: int) -> list[Path]:
        return [self.node_dir(node_id) / "data-0", self.node_dir(node_id) / "data-1"]

    def save(self) -> None:
        data = {"cluster_id": self.cluster_id, "lib": str(self.lib), "bootstrap": self.bootstrap,
                "racks": list(self.racks), "nodes": [asdict(n) for n in self.nodes]}
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(self.state_file)

    @classmethod
    def load(cls, directory: Path = DEFAULT_DIR) -> KafkaCluster:
        state = directory / "cluster.json"
        if not state.exists():
            raise ClusterError(f"no cluster recorded in {directory} (run 'up' first)")
        data = json.loads(state.read_text())
        nodes = [Node(**n) for n in data["nodes"]]
        return cls(directory=directory, brokers=len(nodes) - 1, racks=tuple(data["racks"]), nodes=nodes,
                   cluster_id=data["cluster_id"], lib=Path(data["lib"]))

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
        if self.state_file.exists():
            raise ClusterError(f"a cluster is already recorded in {self.directory} (run 'down' first)")
        if self.brokers < 0:
            raise ClusterError("--brokers must be 0 or more")
        if not self.racks or any(not r for r in self.racks):
            raise ClusterError("--racks needs at least one non-empty rack name")
        began = time.monotonic()
        self.lib = resolve()
        shutil.rmtree(self.directory, ignore_errors=True)
        self.directory.mkdir(parents=True)
        (self.directory / "log4j2.properties").write_text(LOG4J2)
        (self.directory / "tools-log4j2.properties").write_text(TOOLS_LOG4J2)
        self.cluster_id = random_cluster_id()
        self.nodes = [Node(node_id=i, rack=self.racks[i % len(self.racks)], port=free_port(),
                           controller_port=free_port() if i == 0 else None)
                      for i in range(self.brokers + 1)]
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
        for node in self.nodes:
            self.start_node(node.node_id)
        self.save()
        try:
            self.wait_ready(timeout=timeout)
        except ClusterError:
            self.down()
            raise
        self.started_seconds = time.monotonic() - began
        return self

    def start_node(self, node_id: int) -> None:
        node = self.node(node_id)
        if node.pid is not None and self._owns(node.pid):
            return
        home = self.node_dir(node_id)
        with open(home / "stdout.log", "ab") as out:
            proc = subprocess.Popen(
                self._java("kafka.Kafka", str(home / "server.properties"),
                           log_config=self.directory / "log4j2.properties",
                           extra=[f"-Dkafka.logs.dir={home}", f"-Dreplica.assignor.cluster={self.directory}"]),
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        node.pid = proc.pid
        self.processes[node_id] = proc
        self.save()

    def stop_node(self, node_id: int, timeout: float = 30.0) -> None:
        node = self.node(node_id)
        if node.pid is not None and self._owns(node.pid):
            os.kill(node.pid, signal.SIGTERM)
            if not self._wait_gone(node.pid, timeout):
                os.kill(node.pid, signal.SIGKILL)
                self._wait_gone(node.pid, 10)
        node.pid = None
        self.save()

    def down(self) -> None:
        for node in reversed(self.nodes):
            if node.pid is not None and self._owns(node.pid):
                os.kill(node.pid, signal.SIGTERM)
        for node in self.nodes:
            if node.pid is not None and self._owns(node.pid) and not self._wait_gone(node.pid, 20):
                os.kill(node.pid, signal.SIGKILL)
                self._wait_gone(node.pid, 10)
            node.pid = None
        shutil.rmtree(self.directory, ignore_errors=True)

    def _owns(self, pid: int) -> bool:
        """Whether ``pid`` is still one of this cluster's JVMs (a pid can be reused)."""
        for proc in self.processes.values():
            if proc.pid == pid:
                return proc.poll() is None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            return False
        return state != "Z" and f"-Dreplica.assignor.cluster={self.directory}".encode() in cmdline

    def _wait_gone(self, pid: int, timeout: float) -> bool:
        for node_id, proc in list(self.processes.items()):
            if proc.pid == pid:
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    return False
                del self.processes[node_id]
                return True
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self._owns(pid):
                return True
            time.sleep(0.1)
        return False

    # ---- health -------------------------------------------------------------------------
    def alive(self, node_id: int) -> bool:
        pid = self.node(node_id).pid
        return pid is not None and self._owns(pid)

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
                if seen == want:
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
            if node.pid is not None and self._owns(node.pid):
                for line in Path(f"/proc/{node.pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        out[node.node_id] = int(line.split()[1]) / 1024
        return out

    # ---- Kafka's own tools --------------------------------------------------------------
    def tool(self, main: str, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        """Run one of Kafka's command-line tools (by main class) against this cluster's jars."""
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kafka-cluster.sh",
                                     description="An Apache Kafka KRaft cluster on 127.0.0.1.")
    parser.add_argument("command", choices=("up", "down", "status", "resolve", "probe"))
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="data and state directory")
    parser.add_argument("--brokers", type=int, default=4,
                        help="brokers besides the combined controller+broker node 0 (default 4)")
    parser.add_argument("--racks", default=",".join(DEFAULT_RACKS),
                        help="comma-separated broker.rack values, given to nodes in turn; "
                             "multi-level paths such as /dc1/zone-a,/dc1/zone-b,/dc2/zone-a work too")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the brokers")
    args = parser.parse_args(argv)
    try:
        if args.command == "resolve":
            print(resolve())
        elif args.command == "probe":
            print(json.dumps(probe(args.bootstrap)))
        elif args.command == "up":
            cluster = KafkaCluster(directory=args.dir.resolve(), brokers=args.brokers,
                                   racks=tuple(r.strip() for r in args.racks.split(",")))
            cluster.up(timeout=args.timeout)
            rss = cluster.rss_mib()
            for node in cluster.nodes:
                role = "controller+broker" if node.controller_port else "broker"
                print(f"node {node.node_id} {role} rack={node.rack} {node.address} pid={node.pid} "
                      f"rss={rss.get(node.node_id, 0):.0f}MiB", file=sys.stderr)
            print(f"started {len(cluster.nodes)} nodes in {cluster.started_seconds:.1f} s", file=sys.stderr)
            print(cluster.bootstrap)
        elif args.command == "down":
            cluster = KafkaCluster.load(args.dir.resolve())
            cluster.down()
            print(f"stopped {len(cluster.nodes)} nodes", file=sys.stderr)
        else:
            cluster = KafkaCluster.load(args.dir.resolve())
            for node in cluster.nodes:
                state = "running" if cluster.alive(node.node_id) else "stopped"
                print(f"node {node.node_id} rack={node.rack} {node.address} pid={node.pid} {state}")
            print(cluster.bootstrap)
    except ClusterError as exc:
        print(f"kafka-cluster: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
