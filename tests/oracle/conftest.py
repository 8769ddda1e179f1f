"""The oracle's one fixture: Kafka's jars, resolved once per session (the tests fail, never
skip, when Maven or the cache cannot give them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracle import kafka_oracle


@pytest.fixture(scope="session")
def kafka_lib() -> Path:
    try:
        return kafka_oracle.resolve()
    except kafka_oracle.OracleUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
