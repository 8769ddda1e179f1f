"""Assignors by explicit name, or by dotted class path (``replica.assignor.class.name``).

Nothing is discovered by scanning for subclasses: a short name is listed here, and
anything else must be an importable ``package.module.ClassName`` (or
``package.module:ClassName``). Whatever goes wrong while loading it (a missing module, a
syntax error, an exception, even ``sys.exit()``, at the module's import) is an
:class:`UnknownAssignorError` with a one-line message: a configuration error, which the
server reports in one line and exit code 2, never a traceback.

The project's modules live under one import root, ``kafka_replica_assignor``. A dotted path
to one of them written without it (as configurations were before the root) still loads the
same class, with a ``FutureWarning`` that names the path to write instead; a plug-in module
that itself imports a package of the project by its short name fails with a message that says
so.
"""

from __future__ import annotations

import importlib
import importlib.util
import warnings

from .base import ReplicaAssignor

REGISTERED: dict[str, str] = {
    "default": "kafka_replica_assignor.assignors.default.DefaultReplicaAssignor",
    "striped": "kafka_replica_assignor.assignors.striped.StripedReplicaAssignor",
    "multi-level": "kafka_replica_assignor.assignors.multi_level.MultiLevelRackAssignor",
    "multi-level-ring": "kafka_replica_assignor.assignors.multi_level.MultiLevelRingAssignor",
}


_ROOT = __name__.partition(".")[0]  # kafka_replica_assignor


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
    module_name = _under_root(name, module_name)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UnknownAssignorError(f"cannot load assignor {name!r}: {_one_line(exc)}{_old_root_hint(exc)}") from None
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


def _under_root(name: str, module_name: str) -> str:
    """``kafka_replica_assignor.assignors.default`` -> ``kafka_replica_assignor.assignors.default`` (with a warning) when
    the first part is one of the root's packages; anything else as it is."""
    first = module_name.partition(".")[0]
    if not first.isidentifier() or first == _ROOT or importlib.util.find_spec(f"{_ROOT}.{first}") is None:
        return module_name
    warnings.warn(f"replica.assignor.class.name={name}: the project's modules moved under {_ROOT}; "
                  f"write {_ROOT}.{name} (or a registered name: {', '.join(sorted(REGISTERED))})",
                  FutureWarning, stacklevel=3)
    return f"{_ROOT}.{module_name}"


def _old_root_hint(exc: ImportError) -> str:
    """A hint when a plug-in imports one of the project's packages by its name before the root."""
    first = (exc.name or "").partition(".")[0]
    if first.isidentifier() and first != _ROOT and importlib.util.find_spec(f"{_ROOT}.{first}") is not None:
        return f" (the project's {first} package is {_ROOT}.{first} now: import it by that name)"
    return ""


def _one_line(exc: BaseException) -> str:
    """The exception's message on one line (a SyntaxError names its file and line already)."""
    return " ".join(str(exc).split()) or "(no message)"


def is_builtin(cls: type[ReplicaAssignor]) -> bool:
    """The class is one of the project's assignors (``kafka_replica_assignor.assignors.*``), not a plug-in."""
    return cls.__module__.startswith(f"{_ROOT}.assignors.")


def create_assignor(name: str) -> ReplicaAssignor:
    cls = load_assignor_class(name)
    try:
        return cls()
    except Exception as exc:
        raise UnknownAssignorError(f"cannot create assignor {name!r}: {_one_line(exc)}") from None
