"""Assignors by explicit name, or by dotted class path (``replica.assignor.class.name``).

Nothing is discovered by scanning for subclasses: a short name is listed here, and
anything else must be an importable ``package.module.ClassName`` (or
``package.module:ClassName``).
"""

from __future__ import annotations

import importlib

from .base import ReplicaAssignor

REGISTERED: dict[str, str] = {
    "default": "assignors.default.DefaultReplicaAssignor",
    "striped": "assignors.striped.StripedReplicaAssignor",
    "multi-level": "assignors.multi_level.MultiLevelRackAssignor",
}


class UnknownAssignorError(ValueError):
    """``replica.assignor.class.name`` names nothing loadable."""


def load_assignor_class(name: str) -> type[ReplicaAssignor]:
    path = REGISTERED.get(name, name)
    if ":" in path:
        module_name, _, attr = path.partition(":")
    else:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise UnknownAssignorError(
            f"unknown assignor {name!r}: use one of {sorted(REGISTERED)} or a dotted class path"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UnknownAssignorError(f"cannot load assignor {name!r}: {exc}") from None
    cls = getattr(module, attr, None)
    if not (isinstance(cls, type) and issubclass(cls, ReplicaAssignor)):
        raise UnknownAssignorError(
            f"assignor {name!r} is not a ReplicaAssignor class ({path} -> {cls!r})"
        )
    return cls


def create_assignor(name: str) -> ReplicaAssignor:
    cls = load_assignor_class(name)
    try:
        return cls()
    except Exception as exc:
        raise UnknownAssignorError(f"cannot create assignor {name!r}: {exc}") from None
