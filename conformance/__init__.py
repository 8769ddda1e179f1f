"""The conformance kit: hold another implementation of the wire contract to the published vectors.

The codec (:mod:`protocol`) knows messages; this package knows the contract around them:

- :mod:`conformance.vectors` - the vectors file (``schemas/vectors/``): its format, loading, and
  the codec both ways under the schemas' own field names;
- :mod:`conformance.exchange` - one blocking connection: a request frame in, the answer out;
- :mod:`conformance.properties` - what any correct answer to a vector must satisfy;
- :mod:`conformance.results` - outcomes and the pass/fail table;
- :mod:`conformance.runner` - the server role: every server vector sent to a server under test;
- :mod:`conformance.listener` - the client role: a listener answering with the vectors' responses;
- :mod:`conformance.generator` - the cases, recorded from a deterministic reference server
  (``python -m conformance.generator --write``).

The command line is ``replica-assignor conformance`` (:mod:`cli.conformance`); the user's guide
is ``docs/conformance.md``.
"""
