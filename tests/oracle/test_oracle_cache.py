"""The oracle's resolution: Maven once, then offline; every failure one line that fails the tests."""

from __future__ import annotations

import shutil

import pytest

from scripts import kafka_jars
from tests.oracle import kafka_oracle

pytestmark = pytest.mark.kafka


def _without_maven(monkeypatch: pytest.MonkeyPatch) -> None:
    real_which = shutil.which
    monkeypatch.setattr(kafka_jars.shutil, "which", lambda name: None if name == "mvn" else real_which(name))


def test_second_run_needs_no_maven(kafka_lib, monkeypatch):
    _without_maven(monkeypatch)
    assert kafka_oracle.resolve() == kafka_lib
    stamps = list(kafka_lib.parent.glob("resolved-*"))
    assert len(stamps) == 1
    jars = stamps[0].read_text(encoding="utf-8").split()
    version = kafka_oracle.kafka_version()
    assert f"kafka-server-common-{version}.jar" in jars and f"kafka-metadata-{version}.jar" in jars


def test_corrupt_cache_is_one_line(kafka_lib, tmp_path, monkeypatch):
    copy = tmp_path / kafka_lib.parent.name
    shutil.copytree(kafka_lib.parent, copy)
    (copy / "lib" / f"kafka-metadata-{kafka_oracle.kafka_version()}.jar").unlink()
    _without_maven(monkeypatch)
    with pytest.raises(kafka_oracle.OracleUnavailable) as caught:
        kafka_oracle.resolve(cache_root=tmp_path)
    message = str(caught.value)
    assert "\n" not in message and "corrupt" in message and "kafka-metadata" in message


def test_missing_maven_is_one_line(tmp_path, monkeypatch):
    _without_maven(monkeypatch)
    with pytest.raises(kafka_oracle.OracleUnavailable, match=r"^Maven \(mvn\) is not on PATH") as caught:
        kafka_oracle.resolve(cache_root=tmp_path)
    assert "\n" not in str(caught.value)


def test_maven_failure_is_one_line(tmp_path):
    """A version Maven Central does not have: Maven's own first error line, and no stamp."""
    pom = tmp_path / "pom.xml"
    pom.write_text(kafka_oracle.POM.read_text(encoding="utf-8").replace(
        f"<kafka.version>{kafka_oracle.kafka_version()}</kafka.version>",
        "<kafka.version>0.0.0-no-such-version</kafka.version>"), encoding="utf-8")
    with pytest.raises(kafka_oracle.OracleUnavailable) as caught:
        kafka_oracle.resolve(cache_root=tmp_path / "cache", pom=pom)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("Maven could not resolve Kafka 0.0.0-no-such-version (pom.xml): Failed to execute goal")
    assert "kafka-server-common" in message
    assert not list((tmp_path / "cache").glob("*/resolved-*"))


def test_program_failure_is_one_line(kafka_lib):
    """A line the program cannot read ends the JVM: the tests fail with its first error line."""
    with pytest.raises(kafka_oracle.OracleUnavailable) as caught:
        kafka_oracle.ask(["A"], kafka_lib)
    message = str(caught.value)
    assert "\n" not in message and "ArrayIndexOutOfBoundsException" in message
