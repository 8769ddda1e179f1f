"""KIP-879's CreateReplicaAssignment schemas (seed 000), copied exactly as published.

The JSON files hold the seed's text byte for byte, no comment added: a client generated
from KIP-879 is built from exactly this. ``test_golden_bytes.py`` loads them through
kafka-python (``ApiMessage`` with ``load_json=`` this package; the class name must equal
the file name) to prove our v0 stays readable by such a client.
"""
