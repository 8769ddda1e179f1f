"""A server following a live cluster it cannot reach is not healthy, and says why: ``/health``
answers 503 with the reason, ``--health-check`` exits 1 (over HTTP and over the Kafka listener,
where the check is given only the status file: the cluster the server follows is named there),
the log has ``cluster_health_changed``; once a broker answers on that address, it is healthy.

Nothing listens on the cluster address at first (``127.0.0.1:1``, or a free port); the broker that
comes up there later is Tansu (node 111)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from tests.servers import ServerProcess
from tests.tansu import TansuBroker

pytestmark = pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning")


#: nothing listens on port 1 (binding it takes root), as in the issue's report
UNREACHABLE = "127.0.0.1:1"


def health(metrics_port: int) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/health", timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def health_check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafka_replica_assignor.server.main", "--health-check", *args],
                          capture_output=True, text=True, timeout=60)


def start_following(address: str, tmp_path, *, metrics: bool = True) -> ServerProcess:
    """A server following ``address``; without ``metrics`` the check goes over the Kafka listener."""
    name = "status.json" if metrics else "status-kafka.json"
    return ServerProcess(
        "--override", f"bootstrap.servers={address}",
        "--override", "metadata.refresh.interval.ms=200",
        "--override", f"observed.brokers.path={tmp_path / (name + '.db')}",
        *(("--override", "metrics.listener=http://127.0.0.1:0") if metrics else ()),
        "--status-file", str(tmp_path / name)).start()


def wait_for(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_unreachable_cluster_is_unhealthy_and_logged(tmp_path):
    address = UNREACHABLE
    server = start_following(address, tmp_path)
    try:
        assert server.metrics_port is not None
        started = next(r for r in server.lines if r.get("event") == "server_started")
        assert started["brokers"] == 0
        changed = server.wait_for_line(lambda r: r.get("event") == "cluster_health_changed")
        assert changed["healthy"] is False and "did not answer" in changed["reason"]

        status, body = health(server.metrics_port)
        assert status == 503 and body["status"] == "unavailable"
        assert "live cluster did not answer" in body["cluster"]

        over_http = health_check("--override", f"metrics.listener=http://127.0.0.1:{server.metrics_port}")
        assert over_http.returncode == 1
        assert "answered 503" in over_http.stderr and "did not answer" in over_http.stderr

    finally:
        assert server.stop() == 0
    plain = start_following(address, tmp_path, metrics=False)
    try:
        # the server's overrides are not repeated: the status file names the cluster it follows
        assert json.loads((tmp_path / "status-kafka.json").read_text())["follows"] == address
        over_kafka = health_check("--status-file", str(tmp_path / "status-kafka.json"))
        assert over_kafka.returncode == 1, over_kafka.stdout
        assert over_kafka.stderr.startswith("unhealthy") and "answered ApiVersions, but" in over_kafka.stderr
        assert f"the live cluster {address} is unreachable" in over_kafka.stderr
    finally:
        assert plain.stop() == 0


@pytest.mark.tansu
def test_healthy_once_the_cluster_answers(tmp_path):
    broker = TansuBroker()  # its port is free: nothing listens there yet
    server = start_following(broker.bootstrap, tmp_path)
    try:
        assert server.metrics_port is not None
        assert health(server.metrics_port)[0] == 503
        broker.start()
        assert wait_for(lambda: health(server.metrics_port)[0] == 200), health(server.metrics_port)
        status, body = health(server.metrics_port)
        assert body["status"] == "ok" and body["cluster"] == "1 alive broker(s) in the live cluster view"
        back = server.wait_for_line(lambda r: r.get("event") == "cluster_health_changed" and r["healthy"])
        assert back["reason"] == body["cluster"]

        check = health_check("--override", f"metrics.listener=http://127.0.0.1:{server.metrics_port}")
        assert check.returncode == 0, check.stderr
        assert "answered 200" in check.stdout
        plain = start_following(broker.bootstrap, tmp_path, metrics=False)
        try:
            check = health_check("--status-file", str(tmp_path / "status-kafka.json"))
        finally:
            assert plain.stop() == 0
        assert check.returncode == 0, check.stderr
        assert f"the live cluster {broker.bootstrap} answered with 1 alive broker(s)" in check.stdout

        broker.stop()  # gone again: unhealthy again at the next refresh
        assert wait_for(lambda: health(server.metrics_port)[0] == 503)
    finally:
        broker.stop()
        assert server.stop() == 0


def test_with_workers_the_status_file_names_the_followed_cluster_too(tmp_path):
    """``num.worker.processes=2``: the supervisor writes the status file; the check given only
    that file reads the cluster the workers follow."""
    status = tmp_path / "status-workers.json"
    server = ServerProcess("--override", f"bootstrap.servers={UNREACHABLE}",
                           "--override", "metadata.refresh.interval.ms=200",
                           "--override", f"observed.brokers.path={tmp_path / 'workers.db'}",
                           "--override", "num.worker.processes=2",
                           "--status-file", str(status)).start()
    try:
        assert wait_for(status.exists)
        assert json.loads(status.read_text())["follows"] == UNREACHABLE
        check = health_check("--status-file", str(status))
        assert check.returncode == 1, check.stdout
        assert "answered ApiVersions, but" in check.stderr
        assert f"the live cluster {UNREACHABLE} is unreachable" in check.stderr
    finally:
        assert server.stop() == 0
    assert not status.exists()
    gone = health_check("--status-file", str(status))
    assert gone.returncode == 1 and "not serving" in gone.stderr
