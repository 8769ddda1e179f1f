"""Principals as Kafka writes them, and the principal of the request being handled.

A principal is a string ``User:<name>``. On a SASL listener the name is the SASL user;
on an SSL listener with a client certificate it is the certificate's subject as an
RFC 2253 distinguished name (``User:CN=client,OU=eng,O=Example,C=US``, most specific
first), which is what Kafka's default principal builder produces; otherwise it is
``User:ANONYMOUS``.

:data:`current_principal` holds the principal of the request being handled: the
connection sets it before calling a handler, so a handler (and anything it calls on the
event loop) reads it with ``current_principal.get()``. Context variables do not cross
into executor threads or worker processes: pass the value on explicitly.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextvars import ContextVar
from typing import Any

from kafka_replica_assignor.assignors import ANONYMOUS

current_principal: ContextVar[str] = ContextVar("current_principal", default=ANONYMOUS)

# Python's attribute names (ssl.getpeercert) -> RFC 2253 short names
_SHORT_NAMES = {
    "commonName": "CN",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "countryName": "C",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}
_SPECIAL = set(',+"\\<>;')


def user_principal(name: str) -> str:
    return f"User:{name}"


def _escape(value: str) -> str:
    out = []
    last = len(value) - 1
    for i, ch in enumerate(value):
        if ch in _SPECIAL or (i == 0 and ch in "# ") or (i == last and ch == " "):
            out.append("\\" + ch)
        elif ord(ch) < 0x20:
            out.append(f"\\{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


def distinguished_name(subject: Iterable[Iterable[tuple[str, object]]]) -> str:
    """RFC 2253 string of a subject as ``ssl.SSLSocket.getpeercert()`` gives it
    (a sequence of RDNs, each a sequence of (attribute, value) pairs, in certificate
    order); RFC 2253 lists the RDNs last to first."""
    rdns = []
    for rdn in reversed(tuple(subject)):
        rdns.append("+".join(f"{_SHORT_NAMES.get(attr, attr)}={_escape(str(value))}" for attr, value in rdn))
    return ",".join(rdns)


def principal_from_certificate(peercert: dict[str, Any] | None) -> str:
    """``User:<subject DN>`` for a verified client certificate, else ``User:ANONYMOUS``."""
    if not peercert or not peercert.get("subject"):
        return ANONYMOUS
    name = distinguished_name(peercert["subject"])
    return user_principal(name) if name else ANONYMOUS
