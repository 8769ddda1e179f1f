"""The conformance kit: hold another implementation of the wire contract to the published vectors.

The codec (:mod:`protocol`) knows messages; this package knows the contract around them:

- :mod:`kafka_replica_assignor.conformance.vectors` - the vectors file (``schemas/vectors/``): its format, loading, and
  the codec both ways under the schemas' own field names;
- :mod:`kafka_replica_assignor.conformance.exchange` - one blocking connection: a request frame in, the answer out;
- :mod:`kafka_replica_assignor.conformance.properties` - what any correct answer to a vector must satisfy;
- :mod:`kafka_replica_assignor.conformance.results` - outcomes and the pass/fail table;
- :mod:`kafka_replica_assignor.conformance.runner` - the server role: every server vector sent to a server under test;
- :mod:`kafka_replica_assignor.conformance.listener` - the client role: a listener answering with the vectors' responses;
- :mod:`kafka_replica_assignor.conformance.generator` - the cases, recorded from a deterministic reference server
  (``python -m kafka_replica_assignor.conformance.generator --write``).

The command line is ``replica-assignor conformance`` (:mod:`kafka_replica_assignor.cli.conformance`); the user's guide
is ``docs/conformance.md``.
"""
