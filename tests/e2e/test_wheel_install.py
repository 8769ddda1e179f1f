"""The wheel the image is made of, checked where a running container cannot show it.

The container itself (health check and status file, user and group, ``docker stop``,
listener overrides, workers, exit codes) is built and checked by a real Docker engine in
scripts/container-smoke.sh. This test runs with the rest of the suite, without Docker, and
covers what a running container does not reveal:

- the Dockerfile's build stage copies every package pyproject.toml declares, and
  .dockerignore drops none of their files: the wheel built from exactly that build context,
  the way the image builds it (the pinned build requirements, ``--no-build-isolation``), holds
  every module and package-data file of the checkout's packages, and nothing else;
- the wheel's dependencies are the pinned runtime dependencies the image installs before it;
- installed the way the image installs it (those dependencies, then the wheel alone) in a
  fresh virtual environment, the install is complete (``pip check``), runs from the
  environment rather than the checkout, carries no planner dependency, and both console
  scripts the image's ENTRYPOINT and HEALTHCHECK call exist and run;
- the base image is pinned by version and digest;
- the wheel (the image's, and the one ``python -m build`` makes through the sdist) installs one
  import root, ``kafka_replica_assignor``, and nothing else at the top of site-packages; the
  installed server starts, answers and stops.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from email.parser import Parser
from fnmatch import fnmatch
from pathlib import Path

import pytest

from tests.servers import ServerProcess

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text(encoding="utf-8")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
CONSTRAINTS = (ROOT / "constraints.txt").read_text(encoding="utf-8")
IMPORT_ROOT = "kafka_replica_assignor"


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with line continuations joined and comments dropped."""
    out, pending = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        word, _, rest = line.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def _stages(text: str) -> tuple[list[tuple[str, str]], dict[str, list[tuple[str, str]]]]:
    """The global instructions (before the first FROM) and each stage's, by name ("final" for the
    last stage)."""
    preamble: list[tuple[str, str]] = []
    stages: list[tuple[str, list[tuple[str, str]]]] = []
    for word, rest in _instructions(text):
        if word == "FROM":
            parts = rest.split()
            name = parts[2] if len(parts) > 2 and parts[1].upper() == "AS" else f"stage{len(stages)}"
            stages.append((name, []))
        elif stages:
            stages[-1][1].append((word, rest))
        else:
            preamble.append((word, rest))
    named = dict(stages)
    named["final"] = stages[-1][1]
    return preamble, named


PREAMBLE, STAGES = _stages(DOCKERFILE)


def _build_copies() -> list[str]:
    """The sources the build stage copies into the wheel's source tree."""
    sources = []
    for word, rest in STAGES["build"]:
        if word == "COPY":
            assert not rest.startswith("--"), rest
            sources.extend(rest.split()[:-1])
    return sources


def _ignore_pattern(pattern: str) -> re.Pattern[str]:
    """A .dockerignore pattern as Docker reads it: Go's filepath.Match plus ``**``; a pattern
    that matches a directory excludes everything under it."""
    regex, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            regex, i = regex + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            regex, i = regex + ".*", i + 2
        elif pattern[i] == "*":
            regex, i = regex + "[^/]*", i + 1
        elif pattern[i] == "?":
            regex, i = regex + "[^/]", i + 1
        elif pattern[i] == "[":
            end = pattern.index("]", i + 1)
            body = pattern[i + 1:end]
            regex, i = regex + "[" + ("^" + body[1:] if body[:1] in "!^" else body) + "]", end + 1
        else:
            regex, i = regex + re.escape(pattern[i]), i + 1
    return re.compile(regex + r"(?:/.*)?\Z")


def _dockerignore() -> list[tuple[bool, re.Pattern[str]]]:
    rules = []
    for raw in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            negated = line.startswith("!")
            pattern = line.lstrip("!").strip().strip("/")  # Docker cleans the path: no leading or trailing /
            rules.append((negated, _ignore_pattern(pattern)))
    return rules


def _in_context(relative: str, rules: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """Whether Docker sends this file with the build context (the last matching rule decides)."""
    ignored = False
    for negated, rule in rules:
        if rule.match(relative):
            ignored = not negated
    return not ignored


def _build_context(destination: Path) -> None:
    """What the build stage's COPY instructions put in /src: the sources, minus .dockerignore."""
    rules = _dockerignore()
    for source in _build_copies():
        path = ROOT / source
        assert path.exists(), f"the Dockerfile copies {source}, which does not exist"
        assert _in_context(source, rules), f".dockerignore drops {source}, which the Dockerfile copies"
        # Docker copies a link inside a copied folder as the link (the import root's links)
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file() or p.is_symlink())
        for file in files:
            relative = file.relative_to(ROOT).as_posix()
            if _in_context(relative, rules):
                (destination / relative).parent.mkdir(parents=True, exist_ok=True)
                if file.is_symlink():
                    (destination / relative).symlink_to(file.readlink())
                else:
                    shutil.copy2(file, destination / relative)


def _expected_wheel_files() -> set[str]:
    """Every module and package-data file of the checkout's packages, found as setuptools finds
    them (a package is a directory with ``__init__.py`` inside a package or at the top)."""
    setuptools = PYPROJECT["tool"]["setuptools"]
    include, package_data = setuptools["packages"]["find"]["include"], setuptools["package-data"]
    expected: set[str] = set()

    def visit(directory: Path, package: str) -> None:
        if not (directory / "__init__.py").is_file():
            return
        if any(fnmatch(package, pattern) for pattern in include):
            expected.update(p.relative_to(ROOT).as_posix() for p in directory.glob("*.py"))
            for pattern in package_data.get(package, []):
                expected.update(p.relative_to(ROOT).as_posix() for p in directory.glob(pattern) if p.is_file())
        for child in directory.iterdir():
            if child.is_dir() and child.name != "__pycache__":
                visit(child, f"{package}.{child.name}")

    for top in ROOT.iterdir():
        if top.is_dir() and not top.name.startswith("."):
            visit(top, top.name)
    return expected


def _run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    assert proc.returncode == 0, f"{argv[:6]} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc


PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]


def _venv(path: Path) -> Path:
    """A fresh virtual environment without system site-packages; its python."""
    _run([sys.executable, "-m", "venv", "--without-pip", str(path)], timeout=60)
    assert "include-system-site-packages = false" in (path / "pyvenv.cfg").read_text()
    return path / "bin" / "python"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built as the image's build stage builds it."""
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    _build_context(src)
    builder = _venv(work / "build-venv")
    _run([*PIP, "--python", str(builder), "install", "-c", str(ROOT / "constraints.txt"),
          *PYPROJECT["build-system"]["requires"]], timeout=180)
    build_steps = [rest for word, rest in STAGES["build"] if word == "RUN"]
    assert any("pip wheel --no-deps --no-build-isolation" in step for step in build_steps), build_steps
    _run([*PIP, "--python", str(builder), "wheel", "--no-deps", "--no-build-isolation",
          "--wheel-dir", str(work / "wheels"), str(src)], timeout=180)
    wheels = list((work / "wheels").glob("kafka_replica_assignor-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh environment with the runtime dependencies, then the wheel alone (as the image)."""
    python = _venv(tmp_path_factory.mktemp("runtime") / "venv")
    _run([*PIP, "--python", str(python), "install", "-c", str(ROOT / "constraints.txt"),
          *PYPROJECT["project"]["dependencies"]], timeout=300)
    _run([*PIP, "--python", str(python), "install", "--no-deps", str(wheel)], timeout=120)
    return python.parent


def test_the_base_image_is_pinned_by_version_and_digest() -> None:
    args = dict(rest.partition("=")[::2] for word, rest in PREAMBLE if word == "ARG")
    assert re.fullmatch(r"python:3\.\d+\.\d+-slim-[a-z]+@sha256:[0-9a-f]{64}", args["BASE_IMAGE"]), args
    assert DOCKERFILE.count("FROM ${BASE_IMAGE}") == 1


def test_the_wheel_holds_every_module_and_package_data_file_and_nothing_else(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    packaged = {n for n in names if ".dist-info/" not in n}
    expected = _expected_wheel_files()
    assert {f"{IMPORT_ROOT}/schemas/CreateReplicaAssignmentRequest.json",
            f"{IMPORT_ROOT}/server/default-cluster.json"} <= expected
    assert sorted(expected - packaged) == [], "missing from the wheel the image installs"
    assert sorted(packaged - expected) == [], "in the wheel, but not a module or declared package data"


def _requirement(text: str) -> tuple[str, frozenset[str]]:
    """A requirement's name and set of specifiers (the wheel's metadata orders them its own way)."""
    name = re.split(r"[<>=!~ ]", text, maxsplit=1)[0]
    return name, frozenset(s.strip() for s in text[len(name):].split(",") if s.strip())


def test_the_wheel_declares_the_runtime_ranges_and_constraints_pin_them(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        info = next(n.split("/")[0] for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(f"{info}/METADATA").decode())
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    runtime = [r for r in metadata.get_all("Requires-Dist") if ";" not in r]
    assert sorted(map(_requirement, runtime)) == sorted(map(_requirement, PYPROJECT["project"]["dependencies"]))
    # ranges, so the admin client installs beside other libraries; constraints.txt pins each one
    assert not any("==" in r for r in runtime), runtime
    pinned = {line.split("==")[0].lower().replace("_", "-") for line in CONSTRAINTS.splitlines()
              if line and not line.startswith("#")}
    names = {re.split(r"[<>=!~ ]", r)[0].lower().replace("_", "-") for r in runtime}
    assert names <= pinned, sorted(names - pinned)
    scripts = entry_points.split("[console_scripts]")[1].split("[")[0]
    declared = {k.strip(): v.strip() for k, v in (line.split("=") for line in scripts.splitlines() if "=" in line)}
    assert declared == PYPROJECT["project"]["scripts"]


def test_installed_wheel_is_complete_and_runs_its_console_scripts(installed: Path, tmp_path: Path) -> None:
    venv_bin = installed
    python = str(venv_bin / "python")
    _run([*PIP, "--python", python, "check"], timeout=60)  # the --no-deps install lacks nothing
    found = _run([python, "-c", "import importlib.util as u; "
                  "from kafka_replica_assignor import protocol, server, schemas; import kafka_replica_assignor.protocol.messages; "
                  "print(server.__file__); print(u.find_spec('pyspark') is None)"],
                 cwd=tmp_path, timeout=60).stdout.split()
    assert found[0].startswith(str(installed.parent)), found  # the installed package, not the checkout
    assert found[1] == "True"  # runtime dependencies only: the image carries no Spark

    final = " ".join(rest for word, rest in STAGES["final"] if word in {"ENTRYPOINT", "HEALTHCHECK"})
    called = set(re.findall(r"exec (\S+)", final))
    assert called == {"replica-assignor-server"}, called
    for script in PYPROJECT["project"]["scripts"]:
        usage = _run([str(venv_bin / script), "--help"], cwd=tmp_path, timeout=60).stdout
        assert usage.startswith(f"usage: {script}"), usage[:200]
    # the health check, with no status file written: unhealthy, at once
    missing = subprocess.run([str(venv_bin / "replica-assignor-server"), "--health-check", "--status-file",
                              str(tmp_path / "absent.json")], capture_output=True, text=True, timeout=30,
                             cwd=tmp_path)
    assert missing.returncode == 1, (missing.stdout, missing.stderr)


def _top_level(names: list[str]) -> set[str]:
    """The first path part of each file of a wheel, besides its metadata."""
    return {n.split("/")[0] for n in names if ".dist-info/" not in n and ".data/" not in n}


def test_the_wheel_installs_one_import_root(wheel: Path, installed: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/RECORD"))
        top_level = archive.read(f"{info}/top_level.txt").decode().split() if f"{info}/top_level.txt" in names else []
    assert _top_level(names) == {IMPORT_ROOT}, sorted(_top_level(names))
    assert top_level in ([], [IMPORT_ROOT]), top_level
    # in the environment: the root is there, the folders' short names are not importable
    probe = ("import importlib.util as u; print(u.find_spec('kafka_replica_assignor') is not None); "
             "print(sorted(n for n in ('assignors', 'cli', 'cluster', 'conformance', 'planner', 'protocol', 'schemas', 'server', 'watcher', 'web') "
             "if u.find_spec(n)))")
    found = _run([str(installed / "python"), "-c", probe], cwd=tmp_path, timeout=60).stdout.split("\n")
    assert found[:2] == ["True", "[]"], found


def test_a_wheel_built_through_the_sdist_holds_the_same_files(wheel: Path, tmp_path: Path) -> None:
    """``python -m build`` makes the sdist, then the wheel from it: the root's links become files
    in the sdist, and the wheel holds the same files as the image's."""
    builder = _venv(tmp_path / "build-venv")
    _run([*PIP, "--python", str(builder), "install", "-c", str(ROOT / "constraints.txt"),
          *PYPROJECT["build-system"]["requires"], "build"], timeout=300)
    src = tmp_path / "src"
    _build_context(src)
    _run([str(builder), "-m", "build", "--no-isolation", "--outdir", str(tmp_path / "dist"), str(src)],
         timeout=300)
    (sdist,) = (tmp_path / "dist").glob("kafka_replica_assignor-*.tar.gz")
    with tarfile.open(sdist) as archive:
        links = [m.name for m in archive.getmembers() if m.issym() or m.islnk()]
        members = {m.name.split("/", 1)[1] for m in archive.getmembers() if m.isfile()}
    assert links == [], links
    assert {f"{IMPORT_ROOT}/server/main.py", f"{IMPORT_ROOT}/schemas/CreateReplicaAssignmentRequest.json"} <= members
    (built,) = (tmp_path / "dist").glob("kafka_replica_assignor-*.whl")
    with zipfile.ZipFile(built) as a, zipfile.ZipFile(wheel) as b:
        assert sorted(n for n in a.namelist() if ".dist-info/" not in n) == sorted(
            n for n in b.namelist() if ".dist-info/" not in n)


def test_the_installed_server_starts_answers_and_stops(installed: Path, tmp_path: Path) -> None:
    status = tmp_path / "status.json"
    server = ServerProcess("--status-file", str(status), command=[str(installed / "replica-assignor-server")],
                           env={"PYTHONPATH": ""})
    with server:
        health = subprocess.run([str(installed / "replica-assignor-server"), "--health-check", "--status-file",
                                 str(status)], capture_output=True, text=True, timeout=30, cwd=tmp_path)
        assert health.returncode == 0, (health.stdout, health.stderr)
        assign = subprocess.run([str(installed / "replica-assignor"), "assign", "--bootstrap-server", server.bootstrap,
                                 "--partitions", "6", "--replication-factor", "3"],
                                capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert assign.returncode == 0, (assign.stdout, assign.stderr)
    assert server.proc is not None and server.proc.returncode == 0, server.lines[-3:]  # SIGTERM: graceful
