"""The plug-in check at start-up (kafka_replica_assignor.server.plugin_check).

Issue 32: a constructor that started a helper process or a non-daemon thread and returned made the
server refuse to start after 60 s with "did not return", and the helper was left running; the
plug-in was constructed three times at start-up. Now such a constructor is one line naming what
it left, at once, and the helper is gone; a plug-in that passes is constructed once where it runs
(and once in the check's child)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.servers import ServerProcess, wait_until

ROOT = Path(__file__).parents[2]

PLUGINS = '''
import os
import subprocess
import sys
import threading
import time

from kafka_replica_assignor.assignors.default import DefaultReplicaAssignor


def _record(what, pid=None):
    with open(os.environ["PLUGIN_RECORD"], "a") as f:
        f.write(f"{what} {pid or os.getpid()}\\n")


class HelperProcess(DefaultReplicaAssignor):
    def __init__(self):
        super().__init__()
        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        _record("helper", helper.pid)


class NewSessionHelper(DefaultReplicaAssignor):
    def __init__(self):
        super().__init__()
        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
        _record("helper", helper.pid)


class HelperThread(DefaultReplicaAssignor):
    def __init__(self):
        super().__init__()
        threading.Thread(target=time.sleep, args=(600,), name="plugin-refresher").start()


class DaemonThread(DefaultReplicaAssignor):
    def __init__(self):
        super().__init__()
        threading.Thread(target=time.sleep, args=(600,), daemon=True).start()


class Hanging(DefaultReplicaAssignor):
    def __init__(self):
        super().__init__()
        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        _record("helper", helper.pid)
        time.sleep(600)


class Counting(DefaultReplicaAssignor):
    def __init__(self):
        super().__init__()
        _record("constructed")
'''


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except FileNotFoundError:
        return False


def _records(path: Path, what: str) -> list[int]:
    if not path.exists():
        return []
    return [int(line.split()[-1]) for line in path.read_text().splitlines() if line.startswith(what)]


@pytest.fixture
def plugins(tmp_path) -> tuple[dict[str, str], Path]:
    (tmp_path / "helper_plugins.py").write_text(PLUGINS)
    record = tmp_path / "record"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
           "PLUGIN_RECORD": str(record)}
    return env, record


def _start_fails(env: dict[str, str], plugin: str) -> tuple[str, float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "kafka_replica_assignor.server.main",
                           "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                           "--override", f"replica.assignor.class.name=helper_plugins.{plugin}"],
                          capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    (line,) = done.stderr.strip().splitlines()
    assert "server_started" not in done.stdout
    return line, time.monotonic() - started


@pytest.mark.parametrize("plugin", ["HelperProcess", "NewSessionHelper"])
def test_a_constructor_that_leaves_a_process_is_refused_and_the_process_is_gone(plugins, plugin) -> None:
    env, record = plugins
    line, took = _start_fails(env, plugin)
    (helper,) = _records(record, "helper")
    assert line.startswith(f"replica-assignor-server: replica.assignor.class.name: cannot create assignor "
                           f"'helper_plugins.{plugin}': its constructor returned but left process {helper} (")
    assert "must not start threads or processes" in line
    assert took < 30  # not the 60 s of "did not return"
    wait_until(lambda: not _alive(helper), timeout=5)


def test_a_constructor_that_leaves_a_non_daemon_thread_is_refused(plugins) -> None:
    env, _ = plugins
    line, took = _start_fails(env, "HelperThread")
    assert "its constructor returned but left thread 'plugin-refresher' running" in line
    assert took < 30


def test_a_constructor_that_never_returns_is_killed_with_what_it_started(plugins, monkeypatch) -> None:
    from kafka_replica_assignor.server.config import ConfigError
    from kafka_replica_assignor.server.plugin_check import check_constructible

    env, record = plugins
    for key in ("PYTHONPATH", "PLUGIN_RECORD"):
        monkeypatch.setenv(key, env[key])
    with pytest.raises(ConfigError, match="its constructor did not return within 3 s"):
        check_constructible("helper_plugins.Hanging", timeout_s=3.0)
    (helper,) = _records(record, "helper")
    wait_until(lambda: not _alive(helper), timeout=5)


@pytest.mark.parametrize("isolation", ["process", "thread"])
def test_a_plugin_is_constructed_once_where_it_runs(plugins, isolation) -> None:
    """Once in the check's child (gone before the server starts) and once where it places: the
    zygote of the worker processes, or the server process itself with thread isolation; every
    placement after that uses that one."""
    from kafka_replica_assignor.protocol.client import ReplicaAssignorAdminClient

    env, record = plugins
    with ServerProcess("--override", "replica.assignor.class.name=helper_plugins.Counting",
                       "--override", f"replica.assignor.isolation={isolation}",
                       "--override", "replica.assignor.max.workers=2", env=env) as running:
        with ReplicaAssignorAdminClient(running.bootstrap) as admin:
            for _ in range(3):
                assert len(admin.create_replica_assignment(6, 3).assignments()) == 6
        check, serving = _records(record, "constructed")
        assert not _alive(check)
        server_pid = running.proc.pid
        if isolation == "thread":
            assert serving == server_pid
        else:
            assert serving != server_pid and _alive(serving)  # the zygote


def test_a_daemon_thread_is_allowed(plugins) -> None:
    env, _ = plugins
    with ServerProcess("--override", "replica.assignor.class.name=helper_plugins.DaemonThread", env=env):
        pass
