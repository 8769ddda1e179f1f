"""The command line's shared pieces: one-line error messages, exit codes, help text, and the
checks create-topic and add-partitions make on the answers they get."""

from __future__ import annotations

import argparse

import kafka.errors as kafka_errors
import pytest

from kafka_replica_assignor.cli.common import CommandError, error_message, exit_code, help_text, host_port, timeout_ms
from kafka_replica_assignor.cli.topics import check_created, new_partitions, topic_configs
from kafka_replica_assignor.protocol.client_config import ClientConfigError


@pytest.mark.parametrize("exc, line", [
    (kafka_errors.KafkaTimeoutError("KafkaTimeoutError: Unable to bootstrap from h:1"), "Unable to bootstrap from h:1"),
    (kafka_errors.KafkaConnectionError("cannot connect to h:1: Connection refused"),
     "cannot connect to h:1: Connection refused"),
    (kafka_errors.SaslAuthenticationFailedError("invalid credentials"), "authentication failed: invalid credentials"),
    (kafka_errors.SaslAuthenticationFailedError("authentication failed at h:1: bad"), "authentication failed at h:1: bad"),
    (kafka_errors.KafkaConnectionError(), "KafkaConnectionError"),
    (ValueError("first line\nsecond line"), "first line"),
    (kafka_errors.BrokerNotAvailableError("Broker(s) [99] not available"),
     "BrokerNotAvailableError (8): Broker(s) [99] not available"),
])
def test_error_message_is_one_line_without_doubled_names(exc: BaseException, line: str) -> None:
    assert error_message(exc) == line


def test_exit_codes() -> None:
    assert exit_code(CommandError("x", 2)) == 2
    assert exit_code(ClientConfigError("x")) == 2
    assert exit_code(kafka_errors.KafkaTimeoutError("x")) == 1
    assert exit_code(OSError("x"), 2) == 2


def test_help_text_drops_rst_markup() -> None:
    assert help_text("``a`` and :func:`b.c` and :class:`~d.E`") == "a and b.c and d.E"


def test_argument_types() -> None:
    assert timeout_ms("250") == 250
    for bad in ("0", "-1", "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            timeout_ms(bad)
    assert host_port("a:1,b:2") == "a:1,b:2"
    for bad in ("a", "a:", "a:x", "a:70000"):
        with pytest.raises(argparse.ArgumentTypeError):
            host_port(bad)


def test_created_topic_checks() -> None:
    assignment = {0: [1, 2], 1: [2, 1]}
    check_created("t", assignment, {"topics": [{"name": "t", "error_code": 0, "num_partitions": 2,
                                                "replication_factor": 2}]})
    check_created("t", assignment, {"topics": [{"name": "t", "error_code": 0}]})  # old versions say nothing
    with pytest.raises(CommandError, match=r"refused to create topic t: PolicyViolationError \(44\): no"):
        check_created("t", assignment, {"topics": [{"name": "t", "error_code": 44, "error_message": "no"}]})
    with pytest.raises(CommandError, match="ignored the replica assignment"):
        check_created("t", assignment, {"topics": [{"name": "t", "error_code": 0, "num_partitions": 3,
                                                    "replication_factor": 2}]})
    with pytest.raises(CommandError, match="does not mention topic"):
        check_created("t", assignment, {"topics": []})


def test_new_partitions_checks() -> None:
    current = {0: [1], 1: [2]}
    assert new_partitions({2: [1], 3: [2]}, current, 4, "t") == {2: [1], 3: [2]}
    assert new_partitions({0: [1], 2: [1]}, current, 3, "t") == {2: [1]}  # unchanged ones are fine
    with pytest.raises(CommandError, match=r"also moves existing partitions \[1\]"):
        new_partitions({1: [1], 2: [2]}, current, 3, "t")
    with pytest.raises(CommandError, match=r"answered partitions \[3\], not 2..3"):
        new_partitions({3: [1]}, current, 4, "t")


def test_topic_configs() -> None:
    assert topic_configs(["retention.ms=1", "cleanup.policy = compact"]) == {
        "retention.ms": "1", "cleanup.policy": "compact"}
    with pytest.raises(CommandError, match="--config must be KEY=VALUE"):
        topic_configs(["retention.ms"])


def test_every_listed_subcommand_module_adds_its_subcommand(monkeypatch) -> None:
    """``SUBCOMMAND_MODULES`` is the one list: each entry adds a subcommand, and an entry that
    names no module fails at once instead of leaving its subcommand out of ``--help``."""
    from kafka_replica_assignor.cli import main

    listed = main.build_parser().format_help()
    assert all(command in listed for command in ("assign", "state", "balance", "verify-plan", "users"))
    monkeypatch.setattr(main, "SUBCOMMAND_MODULES", (*main.SUBCOMMAND_MODULES, "kafka_replica_assignor.cli.no_such"))
    with pytest.raises(ModuleNotFoundError, match="no_such"):
        main.build_parser()
