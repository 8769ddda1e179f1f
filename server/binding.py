"""Where a listener binds: the addresses a ``listeners`` host stands for, bound on one port.

Kafka's rules for the host of ``PROTOCOL://host:port``, which this module follows:

=================  ============================================  ==========================
host               Kafka (Java's ``InetSocketAddress``)          here
=================  ============================================  ==========================
empty (``://:N``)  the wildcard: every interface, both families  ``::`` dual-stack
``[::]``           IPv6 any; Java binds it dual-stack             ``::`` dual-stack
``0.0.0.0``        IPv4 any                                       ``0.0.0.0``, IPv4 only
a name, an IP      that address                                   every address it resolves to
=================  ============================================  ==========================

Dual-stack is one IPv6 socket with ``IPV6_V6ONLY`` off, so IPv4 clients reach it too (as
``::ffff:a.b.c.d``) whatever the system's ``net.ipv6.bindv6only`` says; on a host without IPv6 the
wildcard is ``0.0.0.0``. A name that resolves to several addresses (``localhost``: ``127.0.0.1`` and
``::1``) binds each of them, every one on the port the first got (port 0 picks one port for all),
each IPv6 one IPv6 only, so that the sockets do not overlap.

:func:`client_host` names an IPv4 client of a dual-stack socket by its IPv4 address, so that
logs and the per-address limits (``max.connections.per.ip`` and its overrides) see ``a.b.c.d``.

:func:`bind_addresses` is the resolution alone (tests check it without binding a wildcard);
:func:`bind_listener` binds, and a failure is a :class:`ListenerBindError` that names the listener.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from dataclasses import dataclass

from .config import Listener

WILDCARD_HOSTS = ("", "::")  # every interface, both families


@dataclass(frozen=True, slots=True)
class BindAddress:
    """One socket to bind: its family and numeric host; ``dual_stack``: an IPv6 socket that
    accepts IPv4 too."""

    family: socket.AddressFamily
    host: str
    dual_stack: bool = False


class ListenerBindError(OSError):
    """A listener cannot be bound (its port is taken, its host is unknown or not ours);
    ``listener``: the one of ``listeners``, or a text naming another (``metrics.listener=...``)."""

    def __init__(self, listener: Listener | str, cause: OSError) -> None:
        self.listener = listener
        self.reason = cause.strerror or str(cause) or type(cause).__name__
        super().__init__(cause.errno, f"cannot listen on {listener}: {self.reason}")

    def __str__(self) -> str:
        return f"cannot listen on {self.listener}: {self.reason}"


def client_host(host: str) -> str:
    """A client's address as the server names it (logs, per-address limits): an IPv4 client of a
    dual-stack listener arrives as ``::ffff:a.b.c.d`` and is ``a.b.c.d``, as Java names it."""
    try:
        mapped = ipaddress.IPv6Address(host).ipv4_mapped
    except ValueError:
        return host
    return str(mapped) if mapped is not None else host


def ipv6_available() -> bool:
    """Whether this host can open an IPv6 socket (a kernel booted with ``ipv6.disable=1`` cannot)."""
    if not socket.has_ipv6:
        return False
    try:
        socket.socket(socket.AF_INET6, socket.SOCK_STREAM).close()
    except OSError:
        return False
    return True


def bind_addresses(host: str, ipv6: bool | None = None) -> tuple[BindAddress, ...]:
    """The sockets a listener on ``host`` binds (the table above); ``ipv6``: whether IPv6 is
    available (by default, asked of the system). A name is resolved here (``socket.gaierror``
    when it cannot be)."""
    ipv6 = ipv6_available() if ipv6 is None else ipv6
    if host in WILDCARD_HOSTS:
        if ipv6:
            return (BindAddress(socket.AF_INET6, "::", dual_stack=True),)
        return (BindAddress(socket.AF_INET, "0.0.0.0"),)
    if host == "0.0.0.0":
        return (BindAddress(socket.AF_INET, "0.0.0.0"),)
    found: dict[BindAddress, None] = {}
    for family, _, _, _, address in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM,
                                                        flags=socket.AI_PASSIVE):
        if family == socket.AF_INET or (family == socket.AF_INET6 and ipv6):
            found[BindAddress(socket.AddressFamily(family), str(address[0]))] = None
    if not found:
        raise socket.gaierror(socket.EAI_ADDRFAMILY, f"{host!r} has no address this host can bind")
    return tuple(found)


def bind_listener(listener: Listener, reuse_port: bool = False) -> list[socket.socket]:
    """Bound (not yet listening) sockets for ``listener``, all on one port; ListenerBindError
    naming it when any cannot be bound (the others are closed)."""
    sockets: list[socket.socket] = []
    try:
        port = listener.port
        for address in bind_addresses(listener.host):
            sockets.append(_bound(address, port, reuse_port))
            port = sockets[0].getsockname()[1]
    except OSError as exc:
        for sock in sockets:
            sock.close()
        raise ListenerBindError(listener, exc) from None
    return sockets


def _bound(address: BindAddress, port: int, reuse_port: bool) -> socket.socket:
    sock = socket.socket(address.family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as asyncio's create_server
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if address.family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0 if address.dual_stack else 1)
        sock.bind((address.host, port))
    except BaseException:
        with contextlib.suppress(OSError):
            sock.close()
        raise
    return sock
