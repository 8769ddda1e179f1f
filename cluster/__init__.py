"""The cluster snapshot: what a Kafka cluster holds (brokers, racks, partitions, leaders, sizes).

One format and one parser, shared by the server (a snapshot file as its cluster source), the
planner and the command line. Standard library only, like ``assignors/``, whose model
(:class:`assignors.model.ClusterView`) a snapshot turns into.
"""
