"""Each server property is declared once (``kafka_replica_assignor.server.config.ServerConfig``); the docs and the
parser follow that declaration, and these tests fail when one of them drifts from it."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import pytest

from kafka_replica_assignor.assignors.registry import REGISTERED
from kafka_replica_assignor.server.config import (
    CONFIG_KEYS,
    ConfigError,
    ServerConfig,
    default_value,
    load_config,
    property_table,
)

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_table_is_the_declared_one():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert property_table() in readme, (
        "README.md's server property table differs from server/config.py; paste "
        "`python -c 'from kafka_replica_assignor.server.config import property_table; print(property_table())'`")


def test_the_assignor_key_names_every_registered_assignor():
    """Its doc (and so the README's table) comes from assignors/registry.py: a new assignor is
    registered in one place."""
    _, key = CONFIG_KEYS["replica.assignor.class.name"]
    assert [name for name in REGISTERED if f"`{name}`" not in key.doc] == []


def test_every_security_key_is_in_the_security_guide():
    guide = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    missing = [name for name, (_, key) in CONFIG_KEYS.items() if key.security and f"`{name}" not in guide]
    assert missing == []


def test_every_field_is_a_declared_property_and_names_are_unique():
    assert [attribute for attribute, _ in CONFIG_KEYS.values()] == [f.name for f in fields(ServerConfig)]
    assert all(re.fullmatch(r"[a-z]+(\.[a-z]+)*", name) for name in CONFIG_KEYS)


SHOWN = [name for name, (_, key) in CONFIG_KEYS.items() if key.default_doc is None and default_value(name) not in (None, ())]


@pytest.mark.parametrize("name", SHOWN)
def test_a_shown_default_parses_back_to_the_default(name):
    """The default the docs show is text the parser accepts, and means the default itself."""
    attribute, key = CONFIG_KEYS[name]
    value = default_value(name)
    assert f"| `{name}` | `{key.type.show(value)}` |" in property_table(security=key.security)
    text = key.type.show(value)
    assert getattr(load_config(None, {name: text}), attribute) == value


@pytest.mark.parametrize("name", list(CONFIG_KEYS))
def test_every_declared_key_is_read_from_a_file(tmp_path, name):
    """A properties file may set any declared key to its default (the loader knows them all)."""
    attribute, key = CONFIG_KEYS[name]
    value = default_value(name)
    if value is None or value == ():
        return  # nothing to write: an unset key is the default already
    conf = tmp_path / "server.properties"
    conf.write_text(f"{name}={key.type.show(value)}\n", encoding="utf-8")
    assert getattr(load_config(conf), attribute) == value


@pytest.mark.parametrize(("name", "text", "fragment"), [
    ("min.insync.replicas", "0", ">= 1"),
    ("queued.max.request.bytes", "0", "-1 (unbounded) or >= 1"),
    ("queued.max.request.bytes", "-2", "-1 (unbounded) or >= 1"),
    ("replica.assignor.random.seed", "seven", "expected an integer"),
    ("enable.under.replicated.topic.creation", "maybe", "expected true or false"),
    ("log.format", "xml", "expected auto, json or console"),
    ("log.level", "loud", "expected debug, info, warning or error"),
    ("event.loop", "trio", "expected uvloop or asyncio"),
    ("listeners", "", "at least one listener is required"),
    ("replica.assignor.class.name", " ", "a class name is required"),
    ("cluster.metadata.file", "", "a path is required"),
])
def test_refusals_name_the_key(name, text, fragment):
    with pytest.raises(ConfigError) as refused:
        load_config(None, {name: text})
    assert str(refused.value).startswith(f"{name}: ") and fragment in str(refused.value)


def test_unknown_keys_are_refused_by_name():
    with pytest.raises(ConfigError, match="unknown configuration key 'listener'"):
        load_config(None, {"listener": "PLAINTEXT://127.0.0.1:0"})


def test_the_example_file_uses_declared_keys_only():
    load_config(ROOT / "config" / "server.properties")


def test_special_values_parse():
    cfg = load_config(None, {"queued.max.request.bytes": "-1", "replica.assignor.random.seed": "",
                             "advertised.listeners": "", "bootstrap.servers": " "})
    assert cfg.queued_max_request_bytes == -1 and cfg.replica_assignor_random_seed is None
    assert cfg.advertised_listeners == () and cfg.bootstrap_servers is None
    assert "hunter2" not in repr(load_config(None, {"ssl.key.password": "hunter2"}))
