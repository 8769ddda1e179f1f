"""The exit codes of both commands, ``replica-assignor-server`` and ``replica-assignor``.

:data:`EXIT_OK` after a graceful shutdown, a healthy health check or a subcommand that did its
work; :data:`EXIT_FAILURE` when the operation failed (the listener cannot be bound, the health
check fails, the workers cannot be kept running; an unreachable server or cluster, failed
authentication, a refused request); :data:`EXIT_USAGE` for bad input or configuration (server
properties the server refuses; arguments, files, ``--command-config``).
"""

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
