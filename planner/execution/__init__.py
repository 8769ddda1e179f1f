"""Execution: a plan's batches and timing, and the executor that runs it on a cluster with
throttles, per-broker caps, a state file, resume and cancel."""
