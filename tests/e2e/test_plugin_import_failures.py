"""A plug-in whose module fails at import (syntax error, failing import, an exception or
``sys.exit()`` at import) is a configuration error like any other: one line on stderr and exit
code 2, no traceback, nothing served."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

MODULES = {
    "syntax_error": ("def broken(:\n    pass\n", "SyntaxError"),
    "import_error": ("import no_such_module_for_this_plugin\n", "no_such_module_for_this_plugin"),
    "runtime_error": ("raise RuntimeError('the plug-in\\nrefuses to load')\n",
                      "RuntimeError: the plug-in refuses to load"),
    "exits": ("import sys\nsys.exit(3)\n", "SystemExit: 3"),
}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_plugin_module_failing_at_import_is_one_line_and_exit_2(tmp_path, module):
    source, expected = MODULES[module]
    (tmp_path / f"{module}_plugin.py").write_text(source)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tmp_path), env.get("PYTHONPATH")) if p)
    name = f"{module}_plugin.Assignor"
    proc = subprocess.run(
        [sys.executable, "-m", "kafka_replica_assignor.server.main", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
         "--override", f"replica.assignor.class.name={name}"],
        capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("replica-assignor-server: cannot load assignor")
    assert name in lines[0] and expected in lines[0]
    assert "Traceback" not in proc.stderr and "server_started" not in proc.stdout
