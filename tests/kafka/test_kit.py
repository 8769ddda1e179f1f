"""The Kafka kit as an operator uses it, through ``scripts/kafka-cluster.sh``: a cluster of its
own (node 0 and broker 1) in a relative ``--dir``; ``status``, ``stop-node``, ``start-node`` and
``down`` from its records, a JVM started by hand on a node's own properties left running with its
data; Kafka's own tools by their script names, on the session's cluster."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import zipfile
from pathlib import Path

from scripts import kafka_tools
from scripts.kafka_cluster import MARKER, REPO, KafkaCluster

SCRIPT = REPO / "scripts" / "kafka-cluster.sh"


def kit(*args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def status_lines(cwd: Path) -> dict[int, str]:
    done = kit("status", "--dir", "rel/c", cwd=cwd)
    assert done.returncode == 0, done.stderr
    return {int(line.split()[1]): line for line in done.stdout.splitlines() if line.startswith("node ")}


def gone(pid: int, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        stat = Path(f"/proc/{pid}/stat")
        if stat.exists() and stat.read_text().rsplit(")", 1)[-1].split()[0] == "Z":
            return True
        time.sleep(0.2)
    return False


def test_the_kit_from_up_to_down_acts_only_on_what_it_started(tmp_path: Path) -> None:
    """up in a relative --dir (from the caller's folder), a non-empty folder refused, one node
    stopped and started again (status knows), a node run by a JVM started by hand left running
    by down with its data, and the rest removed; then down again once it is gone."""
    (tmp_path / "rel" / "busy").mkdir(parents=True)
    (tmp_path / "rel" / "busy" / "notes.txt").write_text("mine")
    refused = kit("up", "--brokers", "1", "--dir", "rel/busy", cwd=tmp_path)
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert (tmp_path / "rel" / "busy" / "notes.txt").read_text() == "mine"

    up = kit("up", "--brokers", "1", "--racks", "/dc1/a,/dc2/a", "--dir", "rel/c", cwd=tmp_path)
    assert up.returncode == 0, up.stderr
    home = tmp_path / "rel" / "c"
    assert (home / MARKER).read_text() == "created\n" and (home / "cluster.json").exists()
    foreign: subprocess.Popen[bytes] | None = None
    try:
        cluster = KafkaCluster.load(home)
        assert up.stdout.strip() == cluster.bootstrap
        assert kit("up", "--dir", "rel/c", cwd=tmp_path).returncode == 1  # already recorded
        assert all(line.endswith(" running") for line in status_lines(tmp_path).values())

        stopped = kit("stop-node", "1", "--dir", "rel/c", cwd=tmp_path)
        assert stopped.returncode == 0 and f"stopped node 1 (pid {cluster.node(1).pid})" in stopped.stderr
        assert gone(cluster.node(1).pid or 0)
        assert status_lines(tmp_path)[1].endswith("pid=- stopped")
        assert kit("stop-node", "1", "--dir", "rel/c", cwd=tmp_path).stderr.strip() == "node 1 was not running"

        started = kit("start-node", "1", "--dir", "rel/c", cwd=tmp_path)
        assert started.returncode == 0 and "registered and unfenced" in started.stderr, started.stderr
        restarted = KafkaCluster.load(home).node(1).pid
        assert restarted is not None and restarted != cluster.node(1).pid
        assert status_lines(tmp_path)[1].endswith(f"pid={restarted} running")

        # node 1 killed outside the kit and started again by hand on its own properties
        os.kill(restarted, signal.SIGKILL)
        assert gone(restarted)
        assert "exited" in status_lines(tmp_path)[1]
        by_hand = KafkaCluster.load(home)
        node_home = by_hand.node_dir(1)
        foreign = subprocess.Popen(
            by_hand._java("kafka.Kafka", str(node_home / "server.properties"), log_config=home / "log4j2.properties",
                          extra=[f"-Dkafka.logs.dir={node_home}"]),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, start_new_session=True)
        assert status_lines(tmp_path)[1].endswith(f"pid={foreign.pid} running, not started by kafka-cluster.sh")
        assert kit("stop-node", "1", "--dir", "rel/c", cwd=tmp_path).returncode == 1

        down = kit("down", "--dir", "rel/c", cwd=tmp_path)
        assert down.returncode == 1, down.stderr
        assert f"stopped node 0 (pid {cluster.node(0).pid})" in down.stderr
        assert f"left node 1 running: pid {foreign.pid} was not started by kafka-cluster.sh" in down.stderr
        assert "stopped 1 of 2 nodes, left 1 running" in down.stderr
        assert foreign.poll() is None and gone(cluster.node(0).pid or 0)
        assert (node_home / "server.properties").exists() and not by_hand.node_dir(0).exists()
        assert (home / "cluster.json").exists()
    finally:
        if foreign is not None:
            foreign.kill()
            foreign.wait(30)
    down = kit("down", "--dir", "rel/c", cwd=tmp_path)
    assert down.returncode == 0, down.stderr
    assert "stopped 0 of 2 nodes, left 0 running" in down.stderr
    assert not home.exists() and (tmp_path / "rel" / "busy" / "notes.txt").exists()


def test_every_tool_name_is_a_main_class_in_the_jars(kafka: KafkaCluster) -> None:
    assert kafka.lib is not None
    classes: set[str] = set()
    for jar in kafka.lib.glob("*.jar"):
        with zipfile.ZipFile(jar) as z:
            classes.update(name[:-len(".class")].replace("/", ".") for name in z.namelist()
                           if name.endswith(".class"))
    missing = {name: main for name, main in kafka_tools.TOOLS.items() if main not in classes}
    assert missing == {}


def test_kafkas_tools_run_by_their_script_names(kafka: KafkaCluster, tmp_path: Path) -> None:
    """The README's commands as written, through ``kafka-cluster.sh tool``: the tool's own
    output and exit code."""
    topics = kit("tool", "kafka-topics.sh", "--bootstrap-server", kafka.bootstrap, "--list", cwd=tmp_path)
    assert topics.returncode == 0, topics.stderr
    configs = kit("tool", "kafka-configs", "--bootstrap-server", kafka.bootstrap, "--describe", "--entity-type",
                  "brokers", "--entity-name", "1", "--all", cwd=tmp_path)
    assert configs.returncode == 0 and "broker.rack=/dc1/zone-b" in configs.stdout, configs.stderr
    cluster_id = kit("tool", "kafka-cluster", "cluster-id", "--bootstrap-server", kafka.bootstrap, cwd=tmp_path)
    assert cluster_id.returncode == 0 and cluster_id.stdout.strip() == f"Cluster ID: {kafka.cluster_id}"
    log_dirs = kit("tool", "kafka-log-dirs", "--bootstrap-server", kafka.bootstrap, "--describe", "--broker-list",
                   "2", cwd=tmp_path)
    assert log_dirs.returncode == 0, log_dirs.stderr
    answer = json.loads(log_dirs.stdout.strip().splitlines()[-1])
    assert sorted(d["logDir"] for d in answer["brokers"][0]["logDirs"]) == sorted(map(str, kafka.log_dirs(2)))
    wrong = kit("tool", "kafka-topics", "--bootstrap-server", kafka.bootstrap, "--describe", "--topic",
                "no-such-topic", cwd=tmp_path)
    assert wrong.returncode == 1 and "does not exist" in wrong.stderr  # the tool's own exit code and message
