"""Shared fixtures. Each kind of test lives in its own folder (unit, property,
conformance, e2e, spark); fixtures used by more than one kind live here."""

from __future__ import annotations

import logging

import pytest
import structlog
from hypothesis import HealthCheck, settings

from tests.tansu import TansuBroker

# One Hypothesis profile for every test: the same examples on every run (derandomize: seeded
# from each test's own source), no per-example deadline and no timing health check (both
# depend on how busy the machine is). A test states ``max_examples`` only where it needs a
# count other than this one.
settings.register_profile(
    "repository",
    derandomize=True,
    deadline=None,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("repository")


def pytest_configure(config: pytest.Config) -> None:
    """The server logs every connection at debug; tests log from info up, as the server's
    default ``log.level`` does (``structlog.testing.capture_logs`` too sees info and above)."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))


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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Markers by kind, so ``pytest -m "not slow"`` is the fast command: every test under
    tests/spark is ``spark``; every end-to-end test (real processes) and every ``kafka``,
    ``spark``, ``tansu``, ``docker`` or ``browser`` test is also ``slow``."""
    heavy = {"kafka", "spark", "tansu", "docker", "browser"}
    for item in items:
        parts = item.path.parts
        if "spark" in parts:
            item.add_marker(pytest.mark.spark)
        if "e2e" in parts or "kafka" in parts or heavy & {m.name for m in item.iter_markers()}:
            item.add_marker(pytest.mark.slow)
