"""``replica-assignor watch``: a long-running follower of a Kafka cluster that keeps it where the
assignor wants it (new topics placed, KIP-409 placeholders filled, dead brokers healed).

The pure core decides from a view of the cluster and the watcher's ledger
(:mod:`.profile`, :mod:`.decisions`); the ledger (:mod:`.ledger`) and the audit log
(:mod:`.audit`) are its files; :mod:`.status` is the one object a reader (the metrics, a later
web layer) takes the watcher's view, decisions and execution progress from. The I/O (reading
Kafka, asking the assignor, running the executor) is ``cli/watch.py``'s.
"""
