"""House rule 1: dependencies point one way, and no module imports itself back.

Every import of every ``.py`` under the repository's packages is read with ``ast``: module-level
ones, lazy (function-level) ones, and those under ``if TYPE_CHECKING:``. Relative imports are
resolved, and ``from pkg import name`` where ``pkg.name`` is a module counts as importing that
module.

- Layering: each package may import the standard library, itself, and what its row of ``RULES``
  names; nothing imports ``cli`` or ``bench``, and only ``bench`` may use the test suite's
  launchers (``tests/tansu.py``: a benchmark drives the same broker the tests do). A new top-level package fails
  :func:`test_every_package_has_a_rule` until it has a row.
- Cycles: the module import graph (``TYPE_CHECKING`` imports left out: they never run) has no
  cycle; a failure lists one cycle per strongly connected group of modules.
"""

from __future__ import annotations

import ast
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STDLIB = frozenset(sys.stdlib_module_names)
ANY = None  # any third-party distribution


@dataclass(frozen=True)
class Rule:
    packages: frozenset[str]  # first-party packages it may import, besides itself
    third_party: frozenset[str] | None  # top-level third-party modules it may import (ANY: all)
    forbidden_stdlib: frozenset[str] = frozenset()


def rule(packages: str = "", third_party: str | None = "", forbidden_stdlib: str = "") -> Rule:
    return Rule(frozenset(packages.split()), None if third_party is None else frozenset(third_party.split()),
                frozenset(forbidden_stdlib.split()))


ALL_SOURCES = "assignors cluster schemas protocol conformance server planner examples watcher web"
# package -> what it may import. Nobody may import cli or bench; only bench may import tests.
RULES: dict[str, Rule] = {
    # the standard library only, and not the event loop, logging, clocks or processes
    "assignors": rule(forbidden_stdlib="asyncio logging socket threading subprocess time"),
    # the snapshot format: the standard library and the model it becomes (assignors.model), no more
    "cluster": rule("assignors", forbidden_stdlib="asyncio logging socket threading subprocess time"),
    "schemas": rule(),
    "protocol": rule("assignors cluster schemas", "kafka"),
    "conformance": rule("assignors schemas protocol", "kafka"),
    "server": rule("assignors cluster schemas protocol", "kafka structlog uvloop prometheus_client orjson"),
    # protocol: the live cluster is read through protocol.cluster_reader
    "planner": rule("assignors cluster protocol", "pyspark pandas numpy pyarrow matplotlib highspy"),
    "examples": rule("assignors"),
    # the watcher's pure core, ledger, audit log and status; its I/O is cli/watch.py's
    "watcher": rule("assignors cluster planner", "prometheus_client"),
    # the watcher's web listener: its HTTP server, endpoints and page; the watcher wires it in
    "web": rule("assignors cluster planner watcher", "prometheus_client orjson"),
    "cli": rule(ALL_SOURCES, ANY),
    "bench": rule(ALL_SOURCES + " tests", ANY),
}
IMPORT_ROOT = "kafka_replica_assignor"  # its subpackages are the folders below (tests/unit/test_import_root.py)
NOT_PACKAGES = {"tests", IMPORT_ROOT}  # directories with an __init__.py that are no layer of the product


@dataclass(frozen=True)
class Import:
    module: str  # absolute, resolved: ``a.b`` for ``import a.b`` and ``from a import b``'s ``a``
    names: tuple[str, ...]  # the names of ``from module import ...``; empty for ``import module``
    line: int
    type_only: bool  # under ``if TYPE_CHECKING:``


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _folder_name(module: str) -> str:
    """``kafka_replica_assignor.server.x`` -> ``server.x``: the rules speak of the folders."""
    return module[len(IMPORT_ROOT) + 1:] if module.startswith(IMPORT_ROOT + ".") else module


def _from_import(node: ast.ImportFrom, package: str, path: Path, type_only: bool) -> list[Import]:
    """``from module import names``, resolved (relative imports) and by folder name."""
    module = node.module or ""
    if not node.level and module == IMPORT_ROOT:  # ``from kafka_replica_assignor import server``
        return [Import(alias.name, (), node.lineno, type_only) for alias in node.names]
    if node.level:
        base = package.split(".") if package else []
        if node.level > len(base):
            raise ValueError(f"{path}:{node.lineno}: relative import beyond the top-level package")
        base = base[:len(base) - (node.level - 1)]
        module = ".".join([*base, module] if module else base)
    return [Import(_folder_name(module), tuple(alias.name for alias in node.names), node.lineno, type_only)]


def imports_of(root: Path, path: Path) -> list[Import]:
    """Every import statement of ``path``, at any depth (modules under the import root by their
    folder's name: ``from kafka_replica_assignor import server`` imports ``server``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    name = module_name(root, path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST, type_only: bool) -> None:
        if isinstance(node, ast.Import):
            found.extend(Import(_folder_name(alias.name), (), node.lineno, type_only) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.extend(_from_import(node, package, path, type_only))
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for statement in node.body:
                visit(statement, True)
            for statement in node.orelse:
                visit(statement, type_only)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, type_only)

    visit(tree, False)
    return found


def source_files(root: Path, package: str) -> list[Path]:
    return sorted(p for p in (root / package).rglob("*.py") if "__pycache__" not in p.parts)


def packages_under(root: Path) -> list[str]:
    """Top-level directories with an ``__init__.py`` (the product's packages)."""
    return sorted(p.parent.name for p in root.glob("*/__init__.py")
                  if not p.parent.name.startswith(".") and p.parent.name not in NOT_PACKAGES)


def layering_violations(root: Path, package: str, rule: Rule, first_party: Iterable[str]) -> list[str]:
    first_party = set(first_party)
    problems = []
    for path in source_files(root, package):
        where = path.relative_to(root)
        for imp in imports_of(root, path):
            top = imp.module.split(".")[0]
            if top == package or top == "__future__":
                continue
            if top in first_party:
                allowed = top in rule.packages
            elif top in STDLIB:
                allowed = top not in rule.forbidden_stdlib
            else:
                allowed = rule.third_party is ANY or top in rule.third_party
            if not allowed:
                problems.append(f"{where}:{imp.line} imports {imp.module}")
    return problems


def import_graph(root: Path, packages: Iterable[str], *, type_only: bool = False) -> dict[str, set[str]]:
    """Module -> the modules of ``packages`` it imports (``TYPE_CHECKING`` imports left out,
    unless ``type_only``)."""
    files = {module_name(root, p): p for package in packages for p in source_files(root, package)}

    def resolve(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        targets: set[str | None] = set()
        for imp in imports_of(root, path):
            if imp.type_only and not type_only:
                continue
            if not imp.names:
                targets.add(resolve(imp.module))
            for name in imp.names:
                submodule = f"{imp.module}.{name}"
                targets.add(submodule if submodule in files else resolve(imp.module))
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> Iterator[list[str]]:
    """Tarjan's algorithm: the groups of modules that reach each other."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def connect(node: str) -> Iterator[list[str]]:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                yield from connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            yield sorted(group)

    for node in sorted(graph):
        if node not in index:
            yield from connect(node)


def shortest_cycle(graph: dict[str, set[str]], group: list[str]) -> list[str]:
    """A shortest cycle through the group's first module, staying in the group."""
    start, members = group[0], set(group)
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(graph[node] & members):
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if nxt not in previous:
                previous[nxt] = node
                queue.append(nxt)
    raise AssertionError(f"{group} is not a cycle")


def cycles(graph: dict[str, set[str]]) -> list[str]:
    return [" -> ".join(shortest_cycle(graph, group)) for group in strongly_connected(graph) if len(group) > 1]


# --- the repository ----------------------------------------------------------------------------

def test_every_package_has_a_rule() -> None:
    packages = set(packages_under(ROOT)) | {"bench"}
    assert packages - set(RULES) == set(), "add a row to RULES for each new package"
    assert set(RULES) - packages == set(), "RULES names packages that are gone"


@pytest.mark.parametrize("package", sorted(RULES))
def test_package_imports_only_what_it_may(package: str) -> None:
    assert source_files(ROOT, package), f"no sources found for {package}"
    first_party = set(packages_under(ROOT)) | {"bench", "tests"}
    problems = layering_violations(ROOT, package, RULES[package], first_party)
    assert not problems, "layering violations:\n" + "\n".join(problems)


def test_no_import_cycles() -> None:
    found = cycles(import_graph(ROOT, packages_under(ROOT)))
    assert not found, "import cycles (lazy imports included):\n" + "\n".join(found)


def test_the_planner_has_no_import_cycle_even_for_type_checking() -> None:
    graph = import_graph(ROOT, ["planner"], type_only=True)
    found = cycles(graph)
    assert not found, "planner import cycles (TYPE_CHECKING imports included):\n" + "\n".join(found)


PLANNER_BASE = ("planner.request", "planner.plan", "planner.racks", "planner.replica_repair")
# a room of the planner -> the rooms it may import besides itself (TYPE_CHECKING imports included)
PLANNER_ROOMS: dict[str, tuple[str, ...]] = {
    "base": (),
    "goals": ("base",),
    "solving": ("base", "goals"),
    "execution": ("base",),
    "inputs": ("base",),
    "report": ("base", "goals", "solving", "execution"),
    "fleet": ("base", "goals", "solving", "report", "execution", "inputs"),
}


def planner_room(module: str) -> str | None:
    """``planner.goals.model`` -> ``goals``; a module of the planner's own folder -> ``base``."""
    if module in PLANNER_BASE or module == "planner":
        return "base"
    parts = module.split(".")
    if parts[0] != "planner" or len(parts) < 2:
        return None
    return parts[1] if parts[1] in PLANNER_ROOMS else "base"


def test_the_planners_rooms_import_one_way() -> None:
    problems = []
    for path in source_files(ROOT, "planner"):
        room = planner_room(module_name(ROOT, path))
        assert room is not None, f"{path} is in no room of PLANNER_ROOMS"
        for imp in imports_of(ROOT, path):
            other = planner_room(imp.module)
            if other is not None and other != room and other not in PLANNER_ROOMS[room]:
                problems.append(f"{path.relative_to(ROOT)}:{imp.line} ({room}) imports {imp.module} ({other})")
    assert not problems, "the planner's rooms import one way:\n" + "\n".join(problems)


def test_every_room_of_the_planner_has_a_package_doc() -> None:
    for room in PLANNER_ROOMS:
        if room != "base":
            init = ROOT / "planner" / room / "__init__.py"
            assert init.exists() and ast.get_docstring(ast.parse(init.read_text())), f"planner/{room} needs a doc"


# --- the checks themselves ---------------------------------------------------------------------

def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_layering_check_sees_violations(tmp_path: Path) -> None:
    write(tmp_path, {
        "core/__init__.py": "",
        "core/model.py": "import json\nfrom . import rules\n\ndef f():\n    import pyspark.sql\n    import time\n",
        "core/rules.py": "from cli.main import main\n",
        "cli/__init__.py": "",
        "cli/main.py": "import core.model\n",
    })
    core = rule(forbidden_stdlib="time")
    assert layering_violations(tmp_path, "core", core, ["core", "cli"]) == [
        "core/model.py:5 imports pyspark.sql", "core/model.py:6 imports time", "core/rules.py:1 imports cli.main"]
    assert layering_violations(tmp_path, "cli", rule("core", ANY), ["core", "cli"]) == []


def test_the_cycle_check_sees_lazy_relative_and_submodule_imports(tmp_path: Path) -> None:
    write(tmp_path, {
        "a/__init__.py": "from .x import X\n",
        "a/x.py": "from a import y\nX = 1\n",  # y is a module: an edge to a.y, not to a
        "a/y.py": "def f():\n    from .sub import deep\n",
        "a/sub/__init__.py": "",
        "a/sub/deep.py": "from ..x import X\n",
        "b/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from c import C\n",
        "c/__init__.py": "import b\nC = 1\n",
    })
    graph = import_graph(tmp_path, ["a", "b", "c"])
    assert graph == {"a": {"a.x"}, "a.x": {"a.y"}, "a.y": {"a.sub.deep"}, "a.sub": set(), "a.sub.deep": {"a.x"},
                     "b": set(), "c": {"b"}}
    assert cycles(graph) == ["a.sub.deep -> a.x -> a.y -> a.sub.deep"]


def test_imports_under_the_import_root_count_as_their_folders(tmp_path: Path) -> None:
    write(tmp_path, {
        "core/__init__.py": "",
        "core/rules.py": f"from {IMPORT_ROOT}.cli.main import main\nfrom {IMPORT_ROOT} import cli\n"
                         f"import {IMPORT_ROOT}.core.model as model\n",
        "core/model.py": "",
    })
    assert layering_violations(tmp_path, "core", rule(), ["core", "cli"]) == [
        "core/rules.py:1 imports cli.main", "core/rules.py:2 imports cli"]
    assert import_graph(tmp_path, ["core"]) == {"core": set(), "core.model": set(), "core.rules": {"core.model"}}
