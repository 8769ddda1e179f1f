"""The linters pass: ``ruff check .`` and ``mypy`` (the packages listed in ``[tool.mypy]``), both
configured in ``pyproject.toml``. A failure shows their output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("tool, arguments", [
    ("ruff", ["check", "."]),
    ("mypy", []),
])
def test_tool_is_clean(tool: str, arguments: list[str]) -> None:
    command = [sys.executable, "-m", tool, *arguments]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{' '.join(command[2:])} (exit {done.returncode}):\n{done.stdout}{done.stderr}"
