"""A throw-away PKI for the TLS tests, generated per test session and never committed:
a CA, a server certificate for 127.0.0.1/localhost, client certificates, and a second
CA that the server does not trust. EC P-256 keys: fast to generate."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from ipaddress import IPv4Address
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def subject_name(**attrs: str) -> x509.Name:
    oids = {"C": NameOID.COUNTRY_NAME, "O": NameOID.ORGANIZATION_NAME,
            "OU": NameOID.ORGANIZATIONAL_UNIT_NAME, "CN": NameOID.COMMON_NAME}
    return x509.Name([x509.NameAttribute(oids[k], v) for k, v in attrs.items()])


def _pem_key(key, password: str | None = None) -> bytes:
    encryption = (serialization.BestAvailableEncryption(password.encode()) if password
                  else serialization.NoEncryption())
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)


def _pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


@dataclass(frozen=True)
class Authority:
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate
    path: Path  # the CA certificate, PEM (a truststore)

    @classmethod
    def create(cls, directory: Path, common_name: str) -> Authority:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        name = subject_name(O="Replica Assignor Tests", CN=common_name)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=2))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                             content_commitment=False, key_encipherment=False,
                                             data_encipherment=False, key_agreement=False,
                                             encipher_only=False, decipher_only=False), critical=True)
                .sign(key, hashes.SHA256()))
        path = directory / f"{common_name}.pem"
        path.write_bytes(_pem_cert(cert))
        return cls(key, cert, path)

    def issue(self, directory: Path, stem: str, subject: x509.Name, *, server: bool,
              password: str | None = None) -> tuple[Path, Path]:
        """(keystore PEM: key + chain, certificate PEM alone)."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(self.cert.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage(
                       [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]),
                       critical=False))
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(IPv4Address("127.0.0.1")), x509.DNSName("localhost")]), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        keystore = directory / f"{stem}-keystore.pem"
        keystore.write_bytes(_pem_key(key, password) + _pem_cert(cert) + _pem_cert(self.cert))
        keystore.chmod(0o600)
        cert_path = directory / f"{stem}-cert.pem"
        cert_path.write_bytes(_pem_cert(cert))
        key_path = directory / f"{stem}-key.pem"
        key_path.write_bytes(_pem_key(key, password))
        key_path.chmod(0o600)
        return keystore, cert_path


@dataclass(frozen=True)
class Pki:
    ca: Authority
    other_ca: Authority
    server_keystore: Path
    client_keystore: Path  # subject C=US,O=Example,OU=eng,CN=client-1
    client_cert: Path
    client_key: Path
    stranger_keystore: Path  # signed by other_ca
    stranger_cert: Path
    stranger_key: Path

    CLIENT_PRINCIPAL = "User:CN=client-1,OU=eng,O=Example,C=US"

    @classmethod
    def create(cls, directory: Path) -> Pki:
        directory.mkdir(parents=True, exist_ok=True)
        ca = Authority.create(directory, "test-ca")
        other = Authority.create(directory, "other-ca")
        server_keystore, _ = ca.issue(directory, "server", subject_name(O="Replica Assignor Tests", CN="localhost"),
                                      server=True)
        client_keystore, client_cert = ca.issue(directory, "client", subject_name(C="US", O="Example", OU="eng",
                                                                           CN="client-1"), server=False)
        stranger_keystore, stranger_cert = other.issue(directory, "stranger", subject_name(CN="stranger"), server=False)
        return cls(ca, other, server_keystore, client_keystore, client_cert, directory / "client-key.pem",
                   stranger_keystore, stranger_cert, directory / "stranger-key.pem")
