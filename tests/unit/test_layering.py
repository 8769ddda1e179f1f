"""House rule 1: dependencies point one way. Each package's imports, read from its
source with ``ast``, must stay inside what it is allowed to use."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STDLIB = set(sys.stdlib_module_names)

ALLOWED = {
    # the standard library only, and not the event loop or logging set-up
    "assignors": {"assignors"},
    "protocol": {"protocol", "kafka", "schemas", "assignors"},
    "server": {"server", "protocol", "assignors", "schemas", "kafka", "uvloop", "structlog",
               "prometheus_client", "orjson"},
    "planner": {"planner", "assignors", "pyspark", "pandas", "numpy", "pyarrow", "matplotlib", "kafka"},
}
FORBIDDEN_STDLIB = {"assignors": {"asyncio", "logging", "socket", "threading", "subprocess", "time"}}


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_what_it_may(package):
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"no sources found for {package}"
    problems = []
    for f in files:
        for root in imported_roots(f):
            if root == "__future__":
                continue
            if root in STDLIB:
                if root in FORBIDDEN_STDLIB.get(package, set()):
                    problems.append(f"{f.relative_to(ROOT)} imports {root}")
                continue
            if root not in ALLOWED[package]:
                problems.append(f"{f.relative_to(ROOT)} imports {root}")
    assert not problems, "layering violations:\n" + "\n".join(problems)


def test_the_check_sees_a_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import pyspark\nfrom kafka.errors import KafkaError\n")
    assert imported_roots(bad) == {"pyspark", "kafka"}
