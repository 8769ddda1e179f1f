"""A plug-in assignor is constructed once in a child process before the server builds its own.

A constructor that raises, needs arguments or belongs to an abstract class is a configuration
error (one line, exit 2) found where the server constructs it. One that ends the process
(``os._exit``, a signal) cannot be caught there: the server would stop with the plug-in's exit
code, 0 included, and no line at all. So the server first constructs the class in a child
(``python -m kafka_replica_assignor.server.plugin_check NAME``, the same interpreter), which says ``constructed`` on
its last line of stdout; anything else (no such line, an exit code, a timeout) is that one
line and exit 2. The built-in assignors (``assignors.REGISTERED``) are not checked. The plug-in's
constructor therefore runs once more at start-up, in a process that exits at once.
"""

from __future__ import annotations

import subprocess
import sys

from kafka_replica_assignor.assignors import UnknownAssignorError, create_assignor
from kafka_replica_assignor.assignors.registry import REGISTERED

from .config import ConfigError

_CONSTRUCTED = "constructed"
_TIMEOUT_S = 60.0


def check_constructible(name: str) -> None:
    """Raise :class:`ConfigError` (one line) when constructing plug-in ``name`` fails or ends the process."""
    if name in REGISTERED:
        return
    try:
        done = subprocess.run([sys.executable, "-m", "kafka_replica_assignor.server.plugin_check", name], capture_output=True, text=True,
                              timeout=_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise ConfigError(f"replica.assignor.class.name: cannot create assignor {name!r}: its constructor did not "
                          f"return within {_TIMEOUT_S:.0f} s") from None
    lines = done.stdout.splitlines()
    if done.returncode == 0 and lines and lines[-1] == _CONSTRUCTED:
        return
    said = done.stderr.strip().splitlines()
    if done.returncode == 2 and said and said[-1].startswith("cannot "):
        raise ConfigError(f"replica.assignor.class.name: {said[-1]}")  # what the constructor raised
    how = f"exit code {done.returncode}" if done.returncode >= 0 else f"signal {-done.returncode}"
    raise ConfigError(f"replica.assignor.class.name: cannot create assignor {name!r}: its constructor ended the "
                      f"process ({how}) instead of returning")


def _main(name: str) -> int:
    try:
        create_assignor(name)
    except UnknownAssignorError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(f"\n{_CONSTRUCTED}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1]))
