"""Assignors by explicit name, or by dotted class path (``replica.assignor.class.name``).

Nothing is discovered by scanning for subclasses: a short name is listed here, and
anything else must be an importable ``package.module.ClassName`` (or
``package.module:ClassName``). Whatever goes wrong while loading it (a missing module, a
syntax error, an exception, even ``sys.exit()``, at the module's import) is an
:class:`UnknownAssignorError` with a one-line message: a configuration error, which the
server reports in one line and exit code 2, never a traceback.
"""

from __future__ import annotations

import importlib

from .base import ReplicaAssignor

REGISTERED: dict[str, str] = {
    "default": "kafka_replica_assignor.assignors.default.DefaultReplicaAssignor",
    "striped": "kafka_replica_assignor.assignors.striped.StripedReplicaAssignor",
    "multi-level": "kafka_replica_assignor.assignors.multi_level.MultiLevelRackAssignor",
    "multi-level-ring": "kafka_replica_assignor.assignors.multi_level.MultiLevelRingAssignor",
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
        raise UnknownAssignorError(f"cannot load assignor {name!r}: {_one_line(exc)}") from None
    except (Exception, SystemExit) as exc:  # the plug-in module failed while being imported
        raise UnknownAssignorError(
            f"cannot load assignor {name!r}: importing {module_name} failed: "
            f"{type(exc).__name__}: {_one_line(exc)}") from None
    cls = getattr(module, attr, None)
    if not (isinstance(cls, type) and issubclass(cls, ReplicaAssignor)):
        raise UnknownAssignorError(
            f"assignor {name!r} is not a ReplicaAssignor class ({path} -> {cls!r})"
        )
    return cls


def _one_line(exc: BaseException) -> str:
    """The exception's message on one line (a SyntaxError names its file and line already)."""
    return " ".join(str(exc).split()) or "(no message)"


def create_assignor(name: str) -> ReplicaAssignor:
    cls = load_assignor_class(name)
    try:
        return cls()
    except Exception as exc:
        raise UnknownAssignorError(f"cannot create assignor {name!r}: {_one_line(exc)}") from None
