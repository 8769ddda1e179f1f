"""Shared fixtures. Each kind of test lives in its own folder (unit, property,
conformance, e2e, spark); fixtures used by more than one kind live here."""

from __future__ import annotations

import pytest

from tests.tansu import TansuBroker


@pytest.fixture
def tansu():
    """A fresh Tansu broker on 127.0.0.1 (node 111, no rack), stopped after the test."""
    with TansuBroker() as broker:
        yield broker


@pytest.fixture
def server():
    """The real server on 127.0.0.1:0 (uvloop, embedded default cluster), in a thread."""
    from tests.servers import ServerThread

    with ServerThread() as running:
        yield running
