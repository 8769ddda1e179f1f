"""Apache Kafka's own placement code, resolved once and run in one JVM for many cases.

:func:`resolve` copies the jars of ``tests/oracle/pom.xml`` (Kafka 4.0.x: ``AdminUtils`` and
``StripedReplicaPlacer``) into ``.kafka/oracle-<version>/lib`` with Maven, and writes a stamp
naming the pom's hash; a later run with the same pom finds the stamp and never calls Maven (it
works offline). :func:`ask` feeds case lines to ``PlacementOracle.java`` (see its header for
the line format; compiled once with ``javac`` next to the jars, again only when the source
changes) and returns its answer lines.

Every failure is an :class:`OracleUnavailable` with a one-line reason: the tests fail with it,
they never skip.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from scripts import kafka_jars

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
POM = HERE / "pom.xml"
PROGRAM = HERE / "PlacementOracle.java"


class OracleUnavailable(Exception):
    """Kafka's code could not be resolved or run; the message is one line."""


def kafka_version(pom: Path = POM) -> str:
    try:
        return kafka_jars.kafka_version(pom)
    except kafka_jars.JarsUnavailable as exc:
        raise OracleUnavailable(str(exc)) from None


def _first_line(output: str) -> str:
    return next((line.strip() for line in output.splitlines() if line.strip()), "no output")


def resolve(cache_root: Path | None = None, pom: Path = POM, timeout: float = 600.0) -> Path:
    """The directory of Kafka's jars, resolved by Maven on the first run only (scripts/kafka_jars.py)."""
    cache = (cache_root or ROOT / ".kafka") / f"oracle-{kafka_version(pom)}"
    try:
        return kafka_jars.resolve(pom, cache, timeout)
    except kafka_jars.JarsUnavailable as exc:
        raise OracleUnavailable(str(exc)) from None


def compiled(lib: Path, timeout: float = 300.0) -> Path:
    """The directory holding ``PlacementOracle.class``, compiled from the current source."""
    classes = lib.parent / f"classes-{hashlib.sha256(PROGRAM.read_bytes()).hexdigest()[:16]}"
    if (classes / "PlacementOracle.class").is_file():
        return classes
    javac = shutil.which("javac")
    if javac is None:
        raise OracleUnavailable("the Java compiler (javac) is not on PATH: cannot build PlacementOracle.java")
    for old in lib.parent.glob("classes-*"):
        shutil.rmtree(old)
    building = lib.parent / "classes-building"
    try:
        done = subprocess.run(
            [javac, "-encoding", "UTF-8", "-cp", f"{lib}/*", "-d", str(building), str(PROGRAM)],
            capture_output=True, text=True, timeout=timeout, check=False,
        )
    except subprocess.TimeoutExpired:
        raise OracleUnavailable(f"javac did not compile {PROGRAM.name} within {timeout:.0f} s") from None
    if done.returncode != 0:
        shutil.rmtree(building, ignore_errors=True)
        raise OracleUnavailable(f"javac could not compile {PROGRAM.name}: {_first_line(done.stderr + done.stdout)}")
    building.rename(classes)
    return classes


def ask(lines: Sequence[str], lib: Path, timeout: float = 300.0) -> list[str]:
    """Kafka's answer line for each case line, in order (one JVM for all of them)."""
    classes = compiled(lib)
    java = shutil.which("java")
    if java is None:
        raise OracleUnavailable("Java (java) is not on PATH: cannot run Kafka's placement code")
    try:
        done = subprocess.run(
            [java, "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", f"{classes}{os.pathsep}{lib}/*", "PlacementOracle"],
            input="\n".join(lines) + "\n", capture_output=True, encoding="utf-8", timeout=timeout, check=False,
        )
    except subprocess.TimeoutExpired:
        raise OracleUnavailable(f"{PROGRAM.name} gave no answer within {timeout:.0f} s") from None
    if done.returncode != 0:
        raise OracleUnavailable(f"{PROGRAM.name} exited {done.returncode}: {_first_line(done.stderr)}")
    answers = done.stdout.splitlines()
    if len(answers) != len(lines):
        raise OracleUnavailable(f"{PROGRAM.name} answered {len(answers)} of {len(lines)} cases")
    return answers
