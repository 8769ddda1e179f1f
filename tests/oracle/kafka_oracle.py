"""Apache Kafka's own placement code, resolved once and run in one JVM for many cases.

:func:`resolve` copies the jars of ``tests/oracle/pom.xml`` (Kafka 4.0.x: ``AdminUtils`` and
``StripedReplicaPlacer``) into ``.kafka/oracle-<version>/lib`` with Maven, and writes a stamp
naming the pom's hash; a later run with the same pom finds the stamp and never calls Maven (it
works offline). :func:`ask` feeds case lines to ``PlacementOracle.java`` (a single-file source
program, see its header for the line format) and returns its answer lines.

Every failure is an :class:`OracleUnavailable` with a one-line reason: the tests fail with it,
they never skip.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
POM = HERE / "pom.xml"
PROGRAM = HERE / "PlacementOracle.java"


class OracleUnavailable(Exception):
    """Kafka's code could not be resolved or run; the message is one line."""


def kafka_version() -> str:
    match = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text(encoding="utf-8"))
    if match is None:
        raise OracleUnavailable(f"{POM.relative_to(ROOT)} names no <kafka.version>")
    return match.group(1)


def _last_error(output: str) -> str:
    """The most telling line of Maven's output: its first ``[ERROR]`` line, else its last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("[ERROR]"):
            return line
    return lines[-1] if lines else "no output"


def resolve(cache_root: Path | None = None, timeout: float = 600.0) -> Path:
    """The directory of Kafka's jars, resolved by Maven on the first run only."""
    cache = (cache_root or ROOT / ".kafka") / f"oracle-{kafka_version()}"
    lib = cache / "lib"
    stamp = cache / f"resolved-{hashlib.sha256(POM.read_bytes()).hexdigest()[:16]}"
    if stamp.is_file():
        missing = [name for name in stamp.read_text(encoding="utf-8").split() if not (lib / name).is_file()]
        if not missing:
            return lib
        raise OracleUnavailable(
            f"Kafka oracle cache {cache} is corrupt (missing {missing[0]}); delete it to resolve again"
        )
    mvn = shutil.which("mvn")
    if mvn is None:
        raise OracleUnavailable("Maven (mvn) is not on PATH: cannot resolve Kafka's placement code")
    if lib.exists():
        shutil.rmtree(lib)
    try:
        done = subprocess.run(
            [mvn, "-B", "-q", "-Dstyle.color=never", "-f", str(POM), "dependency:copy-dependencies",
             f"-DoutputDirectory={lib}"],
            capture_output=True, text=True, timeout=timeout, check=False,
        )
    except subprocess.TimeoutExpired:
        raise OracleUnavailable(f"Maven did not resolve {POM.name} within {timeout:.0f} s") from None
    if done.returncode != 0:
        raise OracleUnavailable(
            f"Maven could not resolve Kafka {kafka_version()} ({POM.relative_to(ROOT)}): "
            f"{_last_error(done.stdout + done.stderr)}"
        )
    jars = sorted(p.name for p in lib.glob("*.jar"))
    if not jars:
        raise OracleUnavailable(f"Maven copied no jars into {lib}")
    for old in cache.glob("resolved-*"):
        old.unlink()
    stamp.write_text("\n".join(jars) + "\n", encoding="utf-8")
    return lib


def ask(lines: Sequence[str], lib: Path, timeout: float = 300.0) -> list[str]:
    """Kafka's answer line for each case line, in order (one JVM for all of them)."""
    java = shutil.which("java")
    if java is None:
        raise OracleUnavailable("Java (java) is not on PATH: cannot run Kafka's placement code")
    try:
        done = subprocess.run(
            [java, "-Xmx256m", "-cp", f"{lib}/*", str(PROGRAM)],
            input="\n".join(lines) + "\n", capture_output=True, text=True, encoding="utf-8",
            timeout=timeout, check=False,
        )
    except subprocess.TimeoutExpired:
        raise OracleUnavailable(f"{PROGRAM.name} gave no answer within {timeout:.0f} s") from None
    if done.returncode != 0:
        raise OracleUnavailable(f"{PROGRAM.name} exited {done.returncode}: {_last_error(done.stderr)}")
    answers = done.stdout.splitlines()
    if len(answers) != len(lines):
        raise OracleUnavailable(f"{PROGRAM.name} answered {len(answers)} of {len(lines)} cases")
    return answers
