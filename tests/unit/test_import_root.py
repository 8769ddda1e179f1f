"""One import root: the product's packages are ``kafka_replica_assignor.<folder>``, never ``<folder>``.

The repository keeps its packages as top-level folders (``assignors/``, ``server/``, ...);
``kafka_replica_assignor/`` holds one relative link per folder, and the wheel holds the files
under the root only (tests/e2e/test_wheel_install.py). In a checkout the folders are importable
by their short names as well (the repository root is on ``sys.path``), so a short-name import
would run a second copy of a module (two ``ReplicaAssignor`` classes, two registries) without
failing anywhere: these tests keep them out. Old dotted plug-in names keep loading the same class,
with a warning.
"""

from __future__ import annotations

import ast
import os
import re
import sys
import tomllib
from pathlib import Path

import pytest

from kafka_replica_assignor.assignors import UnknownAssignorError, load_assignor_class
from kafka_replica_assignor.assignors.default import DefaultReplicaAssignor
from kafka_replica_assignor.assignors.multi_level import MultiLevelRackAssignor

ROOT = Path(__file__).resolve().parents[2]
IMPORT_ROOT = "kafka_replica_assignor"
NOT_PRODUCT = {"tests", "examples", "bench", IMPORT_ROOT}  # folders with __init__.py outside the product
SKIPPED_DIRS = {".git", ".venv", "venv", "build", "dist", "__pycache__", IMPORT_ROOT}
# these two hold short names on purpose: fixtures about imports in general, and the old names below
FIXTURE_FILES = {"tests/unit/test_layering.py", "tests/unit/test_import_root.py"}


def _linked() -> dict[str, str]:
    return {p.name: os.readlink(p) for p in (ROOT / IMPORT_ROOT).iterdir() if p.is_symlink()}


def _product_folders() -> set[str]:
    return {p.parent.name for p in ROOT.glob("*/__init__.py")
            if p.parent.name not in NOT_PRODUCT and not p.parent.name.startswith(".")}


def _python_files() -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(ROOT):  # does not follow the root's links
        dirnames[:] = [d for d in dirnames if d not in SKIPPED_DIRS and not d.endswith(".egg-info")]
        found.extend(Path(dirpath, f) for f in filenames if f.endswith(".py"))
    return sorted(found)


def _members(package: str) -> set[str]:
    folder = ROOT / package
    return ({p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
            | {p.parent.name for p in folder.glob("*/__init__.py")})


def test_every_product_folder_is_linked_under_the_root_and_only_the_root_is_installed() -> None:
    assert (ROOT / IMPORT_ROOT / "__init__.py").is_file()
    linked = _linked()
    assert linked == {name: f"../{name}" for name in _product_folders()}, (
        f"each product folder needs a relative link {IMPORT_ROOT}/<name> -> ../<name>")
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["tool"]["setuptools"]["packages"]["find"]["include"] == [f"{IMPORT_ROOT}*"]
    assert all(key.startswith(f"{IMPORT_ROOT}.") for key in pyproject["tool"]["setuptools"]["package-data"])
    assert all(v.startswith(f"{IMPORT_ROOT}.") for v in pyproject["project"]["scripts"].values())
    assert pyproject["tool"]["mypy"]["files"] == [IMPORT_ROOT]


def short_name_uses(path: Path, packages: dict[str, set[str]]) -> list[str]:
    """Imports of a product package by its short name, and strings that are a short module path
    (``"server.main"``, ``"assignors.default.DefaultReplicaAssignor"``)."""
    dotted = re.compile(rf"({'|'.join(map(re.escape, packages))})\.(\w+)(?:[.:]\w+)*")
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] in packages]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in packages:
                found.append(f"{node.lineno}: from {node.module}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = dotted.fullmatch(node.value)
            if match and match.group(2) in packages[match.group(1)]:
                found.append(f"{node.lineno}: {node.value!r}")
    return found


def test_no_code_uses_a_short_package_name() -> None:
    packages = {name: _members(name) for name in _linked()}
    problems = [f"{path.relative_to(ROOT)}:{use}" for path in _python_files()
                if path.relative_to(ROOT).as_posix() not in FIXTURE_FILES
                for use in short_name_uses(path, packages)]
    assert not problems, f"use {IMPORT_ROOT}.<package>:\n" + "\n".join(problems)


def test_the_short_name_check_sees_imports_and_module_strings(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("import server.main as m\nimport os\nfrom cli import x\nfrom . import y\n"
                      "A = ['server.main', 'server.properties', 'cli.main:main', 'kafka_replica_assignor.cli.main']\n")
    assert short_name_uses(source, {"server": {"main"}, "cli": {"main"}}) == [
        "1: import server.main", "3: from cli", "5: 'server.main'", "5: 'cli.main:main'"]


def test_nothing_under_short_names_was_imported() -> None:
    """After the fast suite's imports so far, no module runs twice under two names."""
    twins = sorted(name for name in sys.modules if name.split(".")[0] in _linked())
    assert not twins, twins


@pytest.mark.parametrize(("old", "cls"), [
    ("assignors.default.DefaultReplicaAssignor", DefaultReplicaAssignor),
    ("assignors.multi_level:MultiLevelRackAssignor", MultiLevelRackAssignor),
])
def test_an_old_dotted_class_name_loads_the_same_class_with_a_warning(old: str, cls: type) -> None:
    with pytest.warns(FutureWarning, match=re.escape(f"write {IMPORT_ROOT}.{old}")):
        assert load_assignor_class(old) is cls
    assert "assignors.default" not in sys.modules  # mapped before the import: no second copy


@pytest.mark.parametrize(("name", "cls"), [("default", DefaultReplicaAssignor), ("multi-level", MultiLevelRackAssignor),
                                           (f"{IMPORT_ROOT}.assignors.default.DefaultReplicaAssignor",
                                            DefaultReplicaAssignor)])
def test_registered_and_full_names_load_without_a_warning(name: str, cls: type) -> None:
    assert load_assignor_class(name) is cls  # warnings are errors in this suite


def test_a_plugin_importing_a_short_name_fails_with_a_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # in a checkout the short name would import (the repository root is on sys.path); an installed
    # wheel has no top-level ``assignors``, which is what the module below raises
    (tmp_path / "old_style_plugin.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'assignors'\", name='assignors')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(UnknownAssignorError, match=re.escape(f"is {IMPORT_ROOT}.assignors now")):
        load_assignor_class("old_style_plugin.Assignor")
    monkeypatch.delitem(sys.modules, "old_style_plugin", raising=False)
