"""The package's version, for ``--version`` and ApiVersions' ``client_software_version``:
the installed distribution's metadata, else (a checkout run without installing) the
``version`` in ``pyproject.toml`` beside the packages."""

from __future__ import annotations

import functools
import importlib.metadata
import tomllib
from pathlib import Path

DISTRIBUTION = "kafka-replica-assignor"


@functools.cache
def package_version() -> str:
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        with open(Path(__file__).resolve().parents[1] / "pyproject.toml", "rb") as f:
            return str(tomllib.load(f)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"
