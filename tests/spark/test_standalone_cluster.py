"""The fleet job runs unchanged on a real Spark standalone cluster.

A master and two workers (one core, 1 GB each) are started on 127.0.0.1 with pyspark's own
``bin/spark-class``; the job is submitted with ``bin/spark-submit --master spark://...`` exactly
as an operator would, and its plan files must be byte-identical to those of the same command on
``local[*]`` (``python -m kafka_replica_assignor.planner.fleet.pipeline``). Every process is started in its own process
group and killed at the end, whatever happens. No session fixture: these are separate processes.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyspark
import pytest

from bench.snapshots import SnapshotSpec, generate

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
SPARK_HOME = Path(pyspark.__file__).resolve().parent
START_TIMEOUT = 60.0
JOB_TIMEOUT = 240.0   # each job; far less on an idle machine


def free_ports(n: int) -> list[int]:
    """``n`` distinct free ports on loopback: the sockets are held together while the kernel picks,
    so two picks cannot be the same port (one CI run got the master's RPC and web UI ports equal,
    and the UI probe then spoke HTTP to the RPC port)."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def free_port() -> int:
    return free_ports(1)[0]


def spark_env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOG_DIR": str(tmp / "logs"), "SPARK_CONF_DIR": str(tmp / "conf"),
            "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


def tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


@dataclass
class Standalone:
    url: str
    ui: int
    work_dirs: list[Path]
    env: dict[str, str]

    def state(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui}/json", timeout=5) as answer:
            return json.loads(answer.read())


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[Standalone]:
    env = spark_env(tmp_path)
    (tmp_path / "conf").mkdir()
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port, ui = free_ports(2)
    cluster = Standalone(f"spark://127.0.0.1:{port}", ui, [tmp_path / "worker-0", tmp_path / "worker-1"], env)
    started: list[tuple[subprocess.Popen[bytes], Path]] = []

    def start(name: str, *args: str) -> None:
        log = tmp_path / f"{name}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen([spark_class, *args], env=env, cwd=tmp_path, stdout=out,
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
        started.append((process, log))

    def wait_for(what: str, ready: Callable[[dict], bool]) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            for process, log in started:
                if process.poll() is not None:
                    pytest.fail(f"{log.name} exited with {process.returncode} while waiting for {what}:\n{tail(log)}")
            try:
                if ready(cluster.state()):
                    return
            except OSError:
                pass
            time.sleep(0.5)
        logs = "\n".join(f"--- {log.name}\n{tail(log)}" for _, log in started)
        pytest.fail(f"no {what} after {START_TIMEOUT:.0f} s:\n{logs}")

    try:
        start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
              "--port", str(port), "--webui-port", str(ui))
        wait_for("master", lambda s: s.get("status") == "ALIVE")
        for k, work in enumerate(cluster.work_dirs):
            start(f"worker-{k}", "org.apache.spark.deploy.worker.Worker", cluster.url, "--host", "127.0.0.1",
                  "--cores", "1", "--memory", "1g", "--webui-port", str(free_port()), "--work-dir", str(work))
        wait_for("two registered workers", lambda s: s.get("aliveworkers") == 2)
        yield cluster
    finally:
        for process, _ in reversed(started):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process, _ in started:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=15)


def run(command: list[str], env: dict[str, str], cwd: Path, log: Path) -> None:
    """Run one job in its own process group, killed if it outlives ``JOB_TIMEOUT``."""
    with open(log, "wb") as out:
        process = subprocess.Popen(command, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            code = process.wait(timeout=JOB_TIMEOUT)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=15)
    assert code == 0, f"{command[0]} exited with {code}:\n{tail(log, 60)}"


def plan_files(out: Path) -> dict[str, bytes]:
    """Every file of every cluster's plan (not the fleet report nor the tables: they hold timings)."""
    return {str(f.relative_to(out)): f.read_bytes() for f in sorted(out.rglob("*"))
            if f.is_file() and not str(f.relative_to(out)).startswith("_") and f.name != "fleet-report.md"}


@pytest.mark.timeout(2 * START_TIMEOUT + 2 * JOB_TIMEOUT + 60)
def test_fleet_job_on_a_standalone_cluster_writes_the_local_plans(standalone: Standalone, tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    for k in range(4):
        spec = SnapshotSpec(brokers=12, partitions=500, new=1 + k % 2, dead=k % 2, hot=2,
                            capacity=2.0 if k % 2 else None, seed=100 + k)
        (fleet / f"cluster-{k}.json").write_text(json.dumps(generate(spec)))
    arguments = ["--fleet", str(fleet), "--mode", "cluster", "--threshold", "5", "--no-charts"]

    run([str(SPARK_HOME / "bin" / "spark-submit"), "--master", standalone.url,
         "--conf", "spark.ui.enabled=false", "--conf", "spark.driver.host=127.0.0.1",
         "--conf", "spark.driver.bindAddress=127.0.0.1", "--conf", "spark.executor.memory=512m",
         "--conf", f"spark.pyspark.python={sys.executable}",
         str(ROOT / "planner" / "fleet" / "pipeline.py"), *arguments, "--out", str(tmp_path / "on-cluster")],
        standalone.env, tmp_path, tmp_path / "submit.log")
    run([sys.executable, "-m", "kafka_replica_assignor.planner.fleet.pipeline", *arguments, "--out", str(tmp_path / "local")],
        standalone.env, ROOT, tmp_path / "local.log")

    on_cluster, local = plan_files(tmp_path / "on-cluster"), plan_files(tmp_path / "local")
    assert {name.split("/")[0] for name in local} == {f"cluster-{k}" for k in range(4)}
    assert any(name.endswith("reassignment.json") for name in local)
    assert on_cluster == local
    # the work was done by the cluster: the application finished on the master, and each
    # worker ran one of its executors
    apps = standalone.state()["completedapps"]
    assert [(a["name"], a["state"]) for a in apps] == [("replica-assignor-planner", "FINISHED")]
    for work in standalone.work_dirs:
        assert list(work.glob("app-*/*/stderr")), f"no executor ran on {work.name}"
