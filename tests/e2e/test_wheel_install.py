"""Stands in for ``docker build`` + ``docker run`` (no Docker engine here): build the wheel
from the files the Dockerfile copies, install it with its runtime dependencies in a fresh
virtual environment, and run exactly the Dockerfile's ENTRYPOINT + CMD with its ENV
defaults, then its HEALTHCHECK command. Only the listen address differs: 127.0.0.1 and
port 0 instead of 0.0.0.0:9095, set through the image's own REPLICA_ASSIGNOR_HOST and
REPLICA_ASSIGNOR_PORT knobs.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from protocol.client import ReplicaAssignorAdminClient

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
CONTAINER_CONFIG = "/etc/replica-assignor/server.properties"


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with line continuations joined and comments dropped."""
    out, pending = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        word, _, rest = line.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


class Image:
    """What the Dockerfile says the image is: build-stage copies, ENV, ENTRYPOINT, CMD, HEALTHCHECK."""

    def __init__(self, text: str) -> None:
        self.build_copies: list[str] = []
        self.env: dict[str, str] = {}
        self.args: dict[str, str] = {}
        self.config_source: str | None = None
        self.entrypoint: list[str] = []
        self.cmd: list[str] = []
        self.healthcheck: list[str] = []
        stage = 0
        for word, rest in _instructions(text):
            if word == "FROM":
                stage += 1
                self.base = rest.split()[0]
            elif word == "ARG" and stage == 2:
                name, _, default = rest.partition("=")
                self.args[name] = default
            elif word == "ENV" and stage == 2:
                for item in shlex.split(rest):
                    name, _, value = item.partition("=")
                    self.env[name] = re.sub(r"\$\{(\w+)\}", lambda m: self.args.get(m.group(1), ""), value)
            elif word == "COPY" and stage == 1:
                self.build_copies.extend(rest.split()[:-1])
            elif word == "COPY" and stage == 2 and not rest.startswith("--from"):
                source, dest = rest.split()
                if dest == CONTAINER_CONFIG:
                    self.config_source = source
            elif word == "ENTRYPOINT":
                self.entrypoint = json.loads(rest)
            elif word == "CMD":
                self.cmd = json.loads(rest)
            elif word == "HEALTHCHECK":
                self.healthcheck = json.loads(rest[rest.index("CMD") + 3:].strip())


IMAGE = Image(DOCKERFILE.read_text(encoding="utf-8"))


def test_dockerfile_is_slim_non_root_and_exposes_the_port() -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert IMAGE.base == "python:3.11-slim"
    user = [rest for word, rest in _instructions(text) if word == "USER"]
    assert user and not user[-1].startswith(("root", "0")), user
    assert "EXPOSE ${PORT}" in text and IMAGE.args["PORT"] == "9095"
    assert IMAGE.env["REPLICA_ASSIGNOR_CONFIG"] == CONTAINER_CONFIG
    assert (IMAGE.env["REPLICA_ASSIGNOR_HOST"], IMAGE.env["REPLICA_ASSIGNOR_PORT"]) == ("0.0.0.0", "9095")
    assert IMAGE.config_source == "config/server.properties"
    assert "replica-assignor-server --config" in " ".join(IMAGE.entrypoint)
    assert IMAGE.healthcheck and "replica-assignor-server --health-check" in " ".join(IMAGE.healthcheck)


def _run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    assert proc.returncode == 0, f"{argv[:4]} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv (no system site-packages) with the wheel and its runtime dependencies."""
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    src.mkdir()
    for item in IMAGE.build_copies:  # exactly what the image's build stage copies
        path = ROOT / item
        if path.is_dir():
            shutil.copytree(path, src / item, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, src / item)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    _run([*pip, "wheel", "--no-deps", "--wheel-dir", str(work / "wheels"), str(src)], timeout=120)
    wheels = list((work / "wheels").glob("kafka_replica_assignor-*.whl"))
    assert len(wheels) == 1, wheels
    venv = work / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], timeout=60)
    assert "include-system-site-packages = false" in (venv / "pyvenv.cfg").read_text()
    _run([*pip, "--python", str(venv / "bin" / "python"), "install", str(wheels[0])], timeout=180)
    return venv


def _container_env(venv: Path, **knobs: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(IMAGE.env)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    env["REPLICA_ASSIGNOR_CONFIG"] = str(ROOT / IMAGE.config_source)
    env.update(knobs)
    return env


def test_installed_wheel_runs_the_image_command(installed: Path, tmp_path: Path) -> None:
    venv = installed
    where = _run([str(venv / "bin" / "python"), "-c",
                  "import server, schemas, protocol.messages; print(server.__file__)"],
                 cwd=tmp_path, env=_container_env(venv), timeout=60).stdout.strip()
    assert where.startswith(str(venv)), where  # the installed package, not the checkout
    planner_deps = _run([str(venv / "bin" / "python"), "-c",
                         "import importlib.util as u; print(u.find_spec('pyspark') is None)"],
                        cwd=tmp_path, env=_container_env(venv), timeout=60).stdout.strip()
    assert planner_deps == "True"  # runtime dependencies only

    argv = IMAGE.entrypoint + IMAGE.cmd
    proc = subprocess.Popen(argv, cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=_container_env(venv, REPLICA_ASSIGNOR_HOST="127.0.0.1", REPLICA_ASSIGNOR_PORT="0"))
    lines: list[dict] = []
    try:
        deadline = time.monotonic() + 30
        started = None
        while started is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                pytest.fail(f"server exited with {proc.wait()}: {proc.stderr.read()}")
            record = json.loads(line)  # JSON lines: no TTY here, as in a container
            lines.append(record)
            if record.get("event") == "server_started":
                started = record
        assert started is not None, lines
        assert started["host"] == "127.0.0.1" and started["port"] > 0
        assert started["brokers"] == 6  # the embedded default cluster
        reader = threading.Thread(target=lambda: lines.extend(json.loads(x) for x in proc.stdout), daemon=True)
        reader.start()

        with ReplicaAssignorAdminClient(f"127.0.0.1:{started['port']}", request_timeout_ms=10_000) as admin:
            assignment = admin.create_replica_assignment(12, 3).assignments()
        assert sorted(assignment) == list(range(12))
        assert all(len(set(r)) == 3 for r in assignment.values())

        health = subprocess.run(IMAGE.healthcheck, cwd=tmp_path, capture_output=True, text=True, timeout=30,
                                env=_container_env(venv, REPLICA_ASSIGNOR_PORT=str(started["port"])))
        assert health.returncode == 0, health.stderr

        proc.send_signal(signal.SIGTERM)  # what `docker stop` sends to PID 1
        assert proc.wait(20) == 0
        reader.join(5)
        assert proc.stderr.read() == ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert [r["event"] for r in lines if r["event"] in {"signal_received", "server_stopped"}] == \
        ["signal_received", "server_stopped"]


def test_healthcheck_fails_when_nothing_listens(installed: Path, tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    health = subprocess.run(IMAGE.healthcheck, cwd=tmp_path, capture_output=True, text=True, timeout=30,
                            env=_container_env(installed, REPLICA_ASSIGNOR_HOST="127.0.0.1",
                                               REPLICA_ASSIGNOR_PORT=str(port)))
    assert health.returncode != 0
