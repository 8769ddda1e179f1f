"""Apache Kafka's jars from Maven Central, resolved once per pinned pom and cached.

One resolver for everything that runs Kafka's own code here: the cluster of
``scripts/kafka_cluster.py`` (``scripts/kafka/pom.xml``) and the placement oracle of
``tests/oracle`` (``tests/oracle/pom.xml``). ``mvn dependency:copy-dependencies`` copies the
pom's runtime jars into ``<cache>/lib`` and a stamp named after the pom's hash lists them; a
later run with the same pom finds the stamp and every jar it lists and calls no Maven (it works
offline). A stamp whose jars are missing is a corrupt cache, said as such.

Every failure is a :class:`JarsUnavailable` with a one-line reason.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path


class JarsUnavailable(Exception):
    """Kafka's jars could not be resolved; the message is one line."""


def kafka_version(pom: Path) -> str:
    match = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", pom.read_text(encoding="utf-8"))
    if match is None:
        raise JarsUnavailable(f"{pom.name} names no <kafka.version>")
    return match.group(1)


def maven_error(output: str) -> str:
    """Maven's first non-empty ``[ERROR]`` line, without colour codes or the help pointer."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in output.splitlines()]
    for line in lines:
        if line.startswith("[ERROR]") and line[len("[ERROR]"):].strip():
            return line[len("[ERROR]"):].strip().removesuffix("-> [Help 1]").strip()
    return next((line for line in reversed(lines) if line), "no output")


def resolve(pom: Path, cache: Path, timeout: float = 900.0) -> Path:
    """``<cache>/lib``, holding the pom's runtime jars; Maven runs on the first call only."""
    version = kafka_version(pom)
    lib = cache / "lib"
    stamp = cache / f"resolved-{hashlib.sha256(pom.read_bytes()).hexdigest()[:16]}"
    if stamp.is_file():
        missing = [name for name in stamp.read_text(encoding="utf-8").split() if not (lib / name).is_file()]
        if not missing:
            return lib
        raise JarsUnavailable(f"the Kafka jar cache {cache} is corrupt (missing {missing[0]}); "
                              "delete it to resolve again")
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsUnavailable(f"Maven (mvn) is not on PATH: cannot resolve Apache Kafka {version}")
    if lib.exists():
        shutil.rmtree(lib)
    try:
        done = subprocess.run(
            [mvn, "-B", "-q", "-Dstyle.color=never", "-f", str(pom), "dependency:copy-dependencies",
             f"-DoutputDirectory={lib}", "-DincludeScope=runtime"],
            capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise JarsUnavailable(f"Maven did not resolve {pom.name} within {timeout:.0f} s") from None
    if done.returncode != 0:
        raise JarsUnavailable(f"Maven could not resolve Kafka {version} ({pom.name}): "
                              f"{maven_error(done.stdout + done.stderr)}")
    jars = sorted(p.name for p in lib.glob("*.jar"))
    if not jars:
        raise JarsUnavailable(f"Maven copied no jars into {lib}")
    for old in cache.glob("resolved-*"):
        old.unlink()
    stamp.write_text("\n".join(jars) + "\n", encoding="utf-8")
    return lib
