"""Kafka client properties (``--command-config``): what is accepted, what is refused by name,
and how it maps to our client and to kafka-python's admin client."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_replica_assignor.protocol.client_config import (
    ClientConfigError,
    SecurityOptions,
    parse_jaas,
    parse_properties,
)

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def test_properties_syntax() -> None:
    text = ("# comment\n! also a comment\n\nsecurity.protocol = SASL_SSL\nsasl.mechanism: PLAIN\n"
            f'sasl.jaas.config={PLAIN} required \\\n    username="u" \\\n    password="p";\n')
    assert parse_properties(text) == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": f'{PLAIN} required username="u" password="p";'}
    with pytest.raises(ClientConfigError, match=r"client.properties line 1: expected key=value"):
        parse_properties("no separator\n", "client.properties")


@pytest.mark.parametrize("mechanism, module", [("PLAIN", PLAIN), ("SCRAM-SHA-256", SCRAM), ("SCRAM-SHA-512", SCRAM)])
def test_sasl_ssl_maps_to_both_clients(mechanism: str, module: str) -> None:
    options = SecurityOptions.from_properties({
        "security.protocol": "sasl_ssl", "sasl.mechanism": mechanism,
        "sasl.jaas.config": f'{module} required username="alice" password="s3\\"cret";',
        "ssl.truststore.type": "PEM", "ssl.truststore.location": "ca.pem",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": "me.pem", "ssl.key.password": "kp",
        "ssl.endpoint.identification.algorithm": "", "client.id": "ops"})
    assert (options.security_protocol, options.sasl_mechanism) == ("SASL_SSL", mechanism)
    assert (options.sasl_username, options.sasl_password) == ("alice", 's3"cret')
    assert options.kafka_configs() == {
        "security_protocol": "SASL_SSL", "client_id": "ops",
        "ssl_cafile": "ca.pem", "ssl_certfile": "me.pem", "ssl_keyfile": "me.pem", "ssl_password": "kp",
        "ssl_check_hostname": False,
        "sasl_mechanism": mechanism, "sasl_plain_username": "alice", "sasl_plain_password": 's3"cret'}


def test_plaintext_and_defaults() -> None:
    assert SecurityOptions.from_properties({}).kafka_configs() == {"security_protocol": "PLAINTEXT"}
    ssl_only = SecurityOptions.from_properties({"security.protocol": "SSL"})
    assert ssl_only.ssl_check_hostname is True and ssl_only.ssl_cafile is None
    assert ssl_only.kafka_configs()["ssl_check_hostname"] is True


@pytest.mark.parametrize("props, message", [
    ({"sasl.kerberos.service.name": "kafka"}, "client property 'sasl.kerberos.service.name' is not supported"),
    ({"security.protocol": "SASL_SSL", "sasl.jaas.config": f'{SCRAM} required username="u" password="p";'},
     "sasl.mechanism GSSAPI is not supported"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}, "sasl.mechanism OAUTHBEARER"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "needs a SASL user name and password"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
      "sasl.jaas.config": f'{SCRAM} required username="u" password="p";'}, "is not the login module"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
      "sasl.jaas.config": f'{PLAIN} required username="u";'}, 'needs username="..." and password'),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
      "sasl.jaas.config": f'{PLAIN} required username="u" password="p"'}, "must read <LoginModule> required"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
      "sasl.jaas.config": f'{PLAIN} required username="u" password="p" tokenauth="true";'},
     "option 'tokenauth' is not supported"),
    ({"ssl.keystore.type": "PKCS12"}, "ssl.keystore.type=PKCS12 is not supported"),
    ({"ssl.endpoint.identification.algorithm": "none"}, "ssl.endpoint.identification.algorithm=none"),
    ({"ssl.key.password": "x"}, "ssl.key.password is set but ssl.keystore.location is not"),
    ({"security.protocol": "SSL_PLAINTEXT"}, "security.protocol 'SSL_PLAINTEXT' is not supported"),
])
def test_refused_by_name(props: dict[str, str], message: str) -> None:
    with pytest.raises(ClientConfigError, match=message.replace("(", r"\(").replace(".", r"\.")):
        SecurityOptions.from_properties(props)


def test_jaas_escapes() -> None:
    assert parse_jaas(f'{SCRAM} required username="a\\\\b" password="x\\"y";', "SCRAM-SHA-256") == ("a\\b", 'x"y')


def test_from_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text("bogus.key=1\n")
    with pytest.raises(ClientConfigError, match=rf"^{path}: client property 'bogus.key'"):
        SecurityOptions.from_file(str(path))
    with pytest.raises(ClientConfigError, match=rf"^cannot read {tmp_path / 'absent'}: No such file"):
        SecurityOptions.from_file(str(tmp_path / "absent"))
    assert SecurityOptions.from_file(None) == SecurityOptions()
