"""The cluster snapshot: what a Kafka cluster holds (brokers, racks, partitions, leaders, sizes).

One format and one parser, shared by the server (a snapshot file as its cluster source), the
planner and the command line. It uses the standard library and the model a snapshot turns into
(:class:`kafka_replica_assignor.assignors.model.ClusterView`), nothing else: no I/O, clock or event loop.
"""
