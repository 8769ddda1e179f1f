"""SCRAM and PLAIN on the server side: RFC 7677's exchange byte for byte, interoperation
with kafka-python's client, what the users file holds (and does not), and that any token
a client can send ends in AuthenticationFailed, never in another exception."""

from __future__ import annotations

import base64
import json
import os
import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.net.sasl.scram import ScramClient

from kafka_replica_assignor.protocol.security import SASL_MECHANISMS
from kafka_replica_assignor.server.security.principal import distinguished_name, principal_from_certificate
from kafka_replica_assignor.server.security.sasl import (
    AUTHZID_MISMATCH,
    INVALID_CREDENTIALS,
    MECHANISM_SERVERS,
    PLAIN_INVALID,
    AuthenticationFailed,
    PlainServer,
    SaslSession,
    ScramServer,
    create_mechanism,
)
from kafka_replica_assignor.server.security.users import (
    MIN_ITERATIONS,
    ScramCredential,
    UsersFileError,
    UserStore,
    password_matches,
    read_users_file,
    scram_credential,
    write_users_file,
)

SECRET = b"\x07" * 32
MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Read-only for the tests (shared, so Hypothesis examples see the same store)."""
    path = tmp_path_factory.mktemp("users") / "users.json"
    write_users_file(path, {
        "alice": {m: scram_credential(m, "alice-secret", iterations=MIN_ITERATIONS) for m in MECHANISMS},
        "a,b=c": {"SCRAM-SHA-256": scram_credential("SCRAM-SHA-256", "odd-name", iterations=MIN_ITERATIONS)},
    })
    return UserStore(str(path))


def _scram(store, mechanism, user, password):
    """Run kafka-python's SCRAM client against the server; the principal or the failure."""
    session = SaslSession(MECHANISMS, store, SECRET)
    assert session.start(mechanism, raw=False)
    client = ScramClient(user, password, mechanism)
    try:
        client.process_server_first_message(session.evaluate(client.first_message()))
        client.process_server_final_message(session.evaluate(client.final_message()))
    except AuthenticationFailed as exc:
        assert session.state == "failed"
        return exc
    assert session.complete
    return session.principal


def test_rfc7677_example_exchange_byte_for_byte(tmp_path):
    """RFC 7677 section 3: user "user", password "pencil", the RFC's salt and nonces."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    path = tmp_path / "users.json"
    write_users_file(path, {"user": {"SCRAM-SHA-256": scram_credential("SCRAM-SHA-256", "pencil",
                                                                       iterations=4096, salt=salt)}})
    server = ScramServer("SCRAM-SHA-256", UserStore(str(path)), SECRET,
                         server_nonce=lambda: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    first = server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    final = server.evaluate(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                            b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete and server.user == "user"


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_client_authenticates_and_wrong_password_fails(store, mechanism):
    assert _scram(store, mechanism, "alice", "alice-secret") == "User:alice"
    failure = _scram(store, mechanism, "alice", "alice-secreT")
    assert str(failure) == INVALID_CREDENTIALS.format(mechanism)
    assert failure.detail == "invalid client proof"


def test_user_name_escaping_follows_rfc5802(store):
    # kafka-python does not escape; build the message by hand: "a,b=c" is "a=2Cb=3Dc"
    server = ScramServer("SCRAM-SHA-256", store, SECRET)
    client = ScramClient("x", "odd-name", "SCRAM-SHA-256")
    client.user = b"a=2Cb=3Dc"
    client.process_server_first_message(server.evaluate(client.first_message()))
    client.process_server_final_message(server.evaluate(client.final_message()))
    assert server.user == "a,b=c"


def test_unknown_user_gets_a_stable_decoy_salt_and_the_same_failure_as_a_wrong_password(store):
    def server_first(user):
        server = ScramServer("SCRAM-SHA-256", store, SECRET)
        return dict(kv.split("=", 1) for kv in server.evaluate(f"n,,n={user},r=abc".encode()).decode().split(","))

    nobody, again, alice = server_first("nobody"), server_first("nobody"), server_first("alice")
    assert nobody["s"] == again["s"] and nobody["s"] != alice["s"]
    assert nobody["i"] == alice["i"] or int(nobody["i"]) >= MIN_ITERATIONS
    unknown = _scram(store, "SCRAM-SHA-256", "nobody", "alice-secret")
    wrong = _scram(store, "SCRAM-SHA-256", "alice", "nope")
    assert str(unknown) == str(wrong) == INVALID_CREDENTIALS.format("SCRAM-SHA-256")


@pytest.mark.parametrize(("first", "final", "detail"), [
    (b"p=tls-unique,,n=alice,r=abc", None, "channel binding is not supported"),
    (b"n,a=bob,n=alice,r=abc", None, None),  # authorization id differs: Kafka's own message
    (b"n,,r=abc,n=alice", None, "must start with n= and r="),
    (b"n,,n=al=ice,r=abc", None, "invalid escape"),
    (b"n,,n=alice,r=a b", None, "invalid nonce"),
    (b"n,,n=alice,r=abc,tokenauth=true", None, "delegation tokens"),
    (b"n,,n=alice,r=abc", b"c=biws,r=abc-wrong,p=AAAA", "Invalid client nonce"),
    (b"n,,n=alice,r=abc", b"c=eSws,r={nonce},p=AAAA", "does not repeat the GS2 header"),
    (b"n,,n=alice,r=abc", b"c=biws,r={nonce},p=AAAA", "wrong length"),
    (b"n,,n=alice,r=abc", b"c=biws,r={nonce}", "no proof"),
])
def test_malformed_scram_messages_fail_cleanly(store, first, final, detail):
    server = ScramServer("SCRAM-SHA-256", store, SECRET)
    with pytest.raises(AuthenticationFailed) as failed:
        reply = server.evaluate(first)
        nonce = dict(kv.split("=", 1) for kv in reply.decode().split(","))["r"]
        server.evaluate(final.replace(b"{nonce}", nonce.encode()))
    if detail is None:
        assert str(failed.value) == AUTHZID_MISMATCH
    else:
        assert detail in failed.value.detail
        assert str(failed.value) == INVALID_CREDENTIALS.format("SCRAM-SHA-256")
    with pytest.raises(AuthenticationFailed):  # nothing more after a failure
        server.evaluate(b"n,,n=alice,r=abc")


@settings(max_examples=300)
@given(first=st.binary(max_size=200), final=st.binary(max_size=200), mechanism=st.sampled_from(MECHANISMS))
def test_arbitrary_tokens_only_ever_raise_authentication_failed(store, first, final, mechanism):
    for tokens in ([first, final], [b"n,,n=alice,r=abc", final]):
        session = SaslSession(MECHANISMS, store, SECRET)
        session.start(mechanism, raw=True)
        try:
            for token in tokens:
                session.evaluate(token)
        except AuthenticationFailed:
            assert session.state == "failed"
        assert not session.complete


@given(token=st.binary(max_size=80))
def test_arbitrary_plain_tokens_only_ever_raise_authentication_failed(store, token):
    server = PlainServer(store, SECRET)
    try:
        server.evaluate(token)
    except AuthenticationFailed as exc:
        assert str(exc) in (PLAIN_INVALID, AUTHZID_MISMATCH)
    else:
        assert token in (b"\x00alice\x00alice-secret", b"alice\x00alice\x00alice-secret")


@pytest.mark.parametrize(("token", "ok", "message"), [
    (b"\x00alice\x00alice-secret", True, None),
    (b"alice\x00alice\x00alice-secret", True, None),
    (b"bob\x00alice\x00alice-secret", False, AUTHZID_MISMATCH),
    (b"\x00alice\x00wrong", False, PLAIN_INVALID),
    (b"\x00nobody\x00alice-secret", False, PLAIN_INVALID),
    (b"\x00alice", False, PLAIN_INVALID),
    (b"\x00\x00alice-secret", False, PLAIN_INVALID),
])
def test_plain_checks_the_salted_credential(store, token, ok, message):
    server = PlainServer(store, SECRET)
    if ok:
        assert server.evaluate(token) == b"" and server.complete and server.user == "alice"
    else:
        with pytest.raises(AuthenticationFailed) as failed:
            server.evaluate(token)
        assert str(failed.value) == message and not server.complete


def test_users_file_holds_salted_keys_only_and_is_private(tmp_path):
    path = tmp_path / "users.json"
    password = "correct horse battery staple"
    creds = {m: scram_credential(m, password) for m in MECHANISMS}
    write_users_file(path, {"alice": creds})
    text = path.read_text()
    assert password not in text and base64.b64encode(password.encode()).decode() not in text
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    entry = json.loads(text)["users"]["alice"]
    assert set(entry) == set(MECHANISMS)
    assert set(entry["SCRAM-SHA-256"]) == {"salt", "iterations", "stored_key", "server_key"}
    loaded = read_users_file(path)["alice"]
    assert loaded == creds
    assert all(password_matches(c, password) and not password_matches(c, password + "!") for c in loaded.values())
    # two credentials for one password never share a salt
    assert scram_credential("SCRAM-SHA-256", password).salt != creds["SCRAM-SHA-256"].salt


@pytest.mark.parametrize(("content", "fragment"), [
    ("not json", "not valid JSON"),
    ('{"version": 2, "users": {}}', "expected"),
    ('{"version": 1, "users": {"a": {"SCRAM-SHA-1": {}}}}', "unknown mechanism"),
    ('{"version": 1, "users": {"a": {"SCRAM-SHA-256": {"salt": "eA=="}}}}', "needs base64"),
    ('{"version": 1, "users": {"a": {"SCRAM-SHA-256": {"salt": "c2FsdHNhbHQ=", "iterations": 10, '
     '"stored_key": "", "server_key": ""}}}}', "iterations must be"),
])
def test_malformed_users_files_are_refused_with_the_entry_named(tmp_path, content, fragment):
    path = tmp_path / "users.json"
    path.write_text(content)
    with pytest.raises(UsersFileError) as refused:
        read_users_file(path)
    assert fragment in str(refused.value) and str(path) in str(refused.value)


def test_credential_invariants():
    good = scram_credential("SCRAM-SHA-512", "x", iterations=MIN_ITERATIONS)
    with pytest.raises(ValueError):
        ScramCredential("SCRAM-SHA-256", good.salt, good.iterations, good.stored_key, good.server_key)
    with pytest.raises(ValueError):
        scram_credential("SCRAM-SHA-512", "x", iterations=MIN_ITERATIONS - 1)


def test_user_store_rereads_the_file_when_it_changes_and_keeps_the_last_good_one(tmp_path):
    path = tmp_path / "users.json"
    write_users_file(path, {})
    users = UserStore(str(path))
    assert users.credential("alice", "SCRAM-SHA-256") is None
    cred = scram_credential("SCRAM-SHA-256", "pw", iterations=MIN_ITERATIONS)
    write_users_file(path, {"alice": {"SCRAM-SHA-256": cred}})
    assert users.credential("alice", "SCRAM-SHA-256") == cred
    path.write_text("{broken")
    assert users.credential("alice", "SCRAM-SHA-256") == cred


@pytest.mark.parametrize(("subject", "dn"), [
    # (RDN, RDN, ...) in certificate order, as ssl.getpeercert() gives them
    (((("countryName", "US"),), (("organizationName", "Example"),), (("commonName", "client-1"),)),
     "CN=client-1,O=Example,C=US"),
    (((("commonName", "a,b+c"),),), "CN=a\\,b\\+c"),
    (((("commonName", " lead"),), (("organizationName", "trail "),)), "O=trail\\ ,CN=\\ lead"),
    (((("organizationalUnitName", "x"), ("commonName", "y")),), "OU=x+CN=y"),
])
def test_certificate_subjects_become_rfc2253_names(subject, dn):
    assert distinguished_name(subject) == dn
    assert principal_from_certificate({"subject": subject}) == f"User:{dn}"


def test_no_certificate_is_anonymous():
    assert principal_from_certificate(None) == principal_from_certificate({}) == "User:ANONYMOUS"


def test_every_mechanism_the_config_accepts_has_a_server_side(store):
    """``sasl.enabled.mechanisms`` accepts the names in protocol/security.py; a name added there
    without a server in MECHANISM_SERVERS fails here, not at a client's SaslHandshake."""
    assert set(MECHANISM_SERVERS) == set(SASL_MECHANISMS)
    for name in SASL_MECHANISMS:
        session = SaslSession(SASL_MECHANISMS, store, SECRET)
        assert session.start(name, raw=False)
        assert session.mechanism is not None
        assert (session.mechanism.name, session.mechanism.complete) == (name, False)


def test_a_mechanism_without_a_server_side_is_refused_by_name(store):
    with pytest.raises(ValueError, match="no server side for SASL mechanism 'OAUTHBEARER'"):
        create_mechanism("OAUTHBEARER", store, SECRET)
