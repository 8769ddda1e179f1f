"""Inputs: cluster snapshots from files, ``kafka-topics.sh --describe`` text, a live cluster,
and partition sizes from ``kafka-log-dirs.sh --describe``."""
