"""kafka-replica-assignor: the one import root of the distribution.

The repository keeps its packages as top-level folders (``assignors/``, ``protocol/``,
``server/``, ...); each is a subpackage of this one (a relative symlink here, real files in the
wheel), so the installed names cannot collide with another distribution's ``server`` or ``cli``.
Import them as ``kafka_replica_assignor.server``, never as ``server``.
"""
