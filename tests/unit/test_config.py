"""The security, limit and isolation keys of server.properties: accepted values, refused
ones (with the key named), combinations that cannot work, and the TLS context they build."""

from __future__ import annotations

import ssl

import pytest

from kafka_replica_assignor.server.config import ConfigError, Listener, load_config, metrics_address
from kafka_replica_assignor.server.security.tls import build_ssl_context
from tests.e2e.pki import Pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki.create(tmp_path_factory.mktemp("pki"))


@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", "sasl_ssl"])
def test_listener_security_protocols(protocol):
    listener = Listener.parse(f"{protocol}://127.0.0.1:9094")
    assert listener.security_protocol == protocol.upper()
    assert listener.uses_tls == ("SSL" in protocol.upper())
    assert listener.uses_sasl == protocol.upper().startswith("SASL")


def test_unknown_security_protocol_is_refused():
    with pytest.raises(ConfigError, match="security protocol HTTPS is not supported"):
        Listener.parse("HTTPS://127.0.0.1:9094")


def test_defaults_are_kafka_like_and_safe():
    cfg = load_config(None, {})
    assert cfg.ssl_client_auth == "none"
    assert cfg.ssl_enabled_protocols == ("TLSv1.2", "TLSv1.3")
    assert cfg.sasl_enabled_mechanisms == ("SCRAM-SHA-256", "SCRAM-SHA-512")  # PLAIN is opt-in
    assert cfg.sasl_server_max_receive_size == 524_288
    assert cfg.connection_failed_authentication_delay_ms == 100
    assert cfg.authorizer_allowed_principals == ()
    assert cfg.assignor_isolation == "process"
    assert cfg.metrics_listener is None and metrics_address(cfg) is None


@pytest.mark.parametrize(("overrides", "fragment"), [
    ({"listeners": "SSL://127.0.0.1:0"}, "ssl.keystore.location"),
    ({"listeners": "SASL_SSL://127.0.0.1:0", "sasl.users.file": "u.json"}, "ssl.keystore.location"),
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:0"}, "sasl.users.file"),
    ({"ssl.client.auth": "required"}, "ssl.truststore.location"),
    ({"ssl.client.auth": "sometimes"}, "ssl.client.auth"),
    ({"ssl.keystore.type": "JKS"}, "only PEM"),
    ({"ssl.truststore.type": "PKCS12"}, "only PEM"),
    ({"ssl.enabled.protocols": "TLSv1.1,TLSv1.2"}, "ssl.enabled.protocols"),
    ({"sasl.enabled.mechanisms": "GSSAPI"}, "sasl.enabled.mechanisms"),
    ({"sasl.enabled.mechanisms": ""}, "sasl.enabled.mechanisms"),
    ({"authorizer.allowed.principals": "alice"}, "User:name"),
    ({"metrics.listener": "127.0.0.1:9404"}, "http://host:port"),
    ({"metrics.listener": "https://127.0.0.1:9404"}, "http://host:port"),
    ({"replica.assignor.isolation": "container"}, "process or thread"),
    ({"replica.assignor.worker.max.memory.bytes": "-1"}, ">= 0"),
    ({"sasl.server.max.receive.size": "0"}, ">= 1"),
    ({"max.connections.per.ip": "0"}, ">= 1"),
    ({"ssl.keystore.location": ""}, "a path is required"),
    ({"num.worker.processes": "0"}, ">= 1"),
    ({"num.worker.processes": "many"}, "expected an integer"),
    ({"num.worker.processes": "257"}, "<= 256"),
    ({"num.worker.processes": "2", "metrics.listener": "http://127.0.0.1:9404"}, "metrics.listener cannot be"),
])
def test_unusable_settings_fail_naming_the_key(overrides, fragment):
    with pytest.raises(ConfigError) as refused:
        load_config(None, overrides)
    assert fragment in str(refused.value)


def test_security_settings_are_read(tmp_path):
    cfg = load_config(None, {
        "listeners": "SASL_SSL://0.0.0.0:9094", "ssl.keystore.location": "server.pem", "ssl.keystore.type": "PEM",
        "ssl.truststore.location": str(tmp_path / "ca.pem"), "ssl.client.auth": "Requested",
        "ssl.enabled.protocols": "TLSv1.3", "sasl.enabled.mechanisms": "scram-sha-512, PLAIN,SCRAM-SHA-512",
        "sasl.users.file": "users.json", "connection.failed.authentication.delay.ms": "0",
        "metrics.listener": "http://127.0.0.1:9404/", "replica.assignor.isolation": "thread",
    })
    assert cfg.ssl_client_auth == "requested" and cfg.ssl_enabled_protocols == ("TLSv1.3",)
    assert cfg.sasl_enabled_mechanisms == ("SCRAM-SHA-512", "PLAIN")
    assert cfg.ssl_truststore_location == str(tmp_path / "ca.pem")
    assert cfg.connection_failed_authentication_delay_ms == 0
    assert metrics_address(cfg) == ("127.0.0.1", 9404)
    assert cfg.assignor_isolation == "thread"


def test_paths_in_a_file_are_relative_to_the_file(tmp_path):
    conf = tmp_path / "server.properties"
    conf.write_text("listeners=SASL_PLAINTEXT://127.0.0.1:0\nsasl.users.file=secrets/users.json\n")
    assert load_config(conf).sasl_users_file == str(tmp_path / "secrets" / "users.json")


def test_allowed_principals_may_be_certificate_subjects_with_commas():
    cfg = load_config(None, {"authorizer.allowed.principals":
                             "User:alice, User:CN=client-1,OU=eng,O=Example,C=US,User:bob"})
    assert cfg.authorizer_allowed_principals == ("User:alice", "User:CN=client-1,OU=eng,O=Example,C=US", "User:bob")


def test_tls_context_from_pem_files(pki):
    cfg = load_config(None, {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": str(pki.server_keystore),
                             "ssl.truststore.location": str(pki.ca.path), "ssl.client.auth": "required",
                             "ssl.enabled.protocols": "TLSv1.3"})
    ctx = build_ssl_context(cfg)
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    assert ctx.minimum_version == ctx.maximum_version == ssl.TLSVersion.TLSv1_3
    requested = build_ssl_context(load_config(None, {
        "listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": str(pki.server_keystore),
        "ssl.truststore.location": str(pki.ca.path), "ssl.client.auth": "requested"}))
    assert requested.verify_mode == ssl.CERT_OPTIONAL
    assert requested.minimum_version == ssl.TLSVersion.TLSv1_2


@pytest.mark.parametrize(("key", "which", "fragment"), [
    ("ssl.keystore.location", "missing", "cannot read"),
    ("ssl.keystore.location", "ca-only", "is not a PEM private key"),
    ("ssl.truststore.location", "missing", "cannot read"),
    ("ssl.truststore.location", "key-only", "holds no PEM CA certificate"),
])
def test_unreadable_tls_files_fail_naming_the_key(pki, tmp_path, key, which, fragment):
    files = {"missing": tmp_path / "nope.pem", "ca-only": pki.ca.path, "key-only": pki.client_key}
    props = {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": str(pki.server_keystore),
             "ssl.truststore.location": str(pki.ca.path), key: str(files[which])}
    with pytest.raises(ConfigError) as refused:
        build_ssl_context(load_config(None, props))
    assert str(refused.value).startswith(key) and fragment in str(refused.value)


def test_worker_processes_default_to_one_and_are_read():
    assert load_config(None, {}).num_worker_processes == 1
    assert load_config(None, {"num.worker.processes": " 4 "}).num_worker_processes == 4
    # one process keeps its metrics listener; the refusal is for workers only
    cfg = load_config(None, {"num.worker.processes": "1", "metrics.listener": "http://127.0.0.1:9404"})
    assert (cfg.num_worker_processes, metrics_address(cfg)) == (1, ("127.0.0.1", 9404))
