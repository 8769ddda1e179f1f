"""Where a listener binds (kafka_replica_assignor.server.binding), as Kafka's ``listeners``.

Issue 32: ``listeners=PLAINTEXT://[::]:9095`` listened on IPv6 only and an empty host bound
127.0.0.1 only; Kafka binds every interface of both families for both. The wildcard is checked
through the resolution (no test binds a wildcard); what is bound, on loopback only."""

from __future__ import annotations

import socket

import pytest

from kafka_replica_assignor.server.binding import (
    BindAddress,
    ListenerBindError,
    _bound,
    bind_addresses,
    bind_listener,
    client_host,
    ipv6_available,
)
from kafka_replica_assignor.server.config import Listener, load_config

DUAL_STACK = BindAddress(socket.AF_INET6, "::", dual_stack=True)
IPV4_ANY = BindAddress(socket.AF_INET, "0.0.0.0")
needs_ipv6 = pytest.mark.skipif(not ipv6_available(), reason="no IPv6 on this host")


@pytest.mark.parametrize(("text", "host"), [("PLAINTEXT://:9092", ""), ("PLAINTEXT://[::]:9095", "::"),
                                            ("PLAINTEXT://0.0.0.0:9092", "0.0.0.0"),
                                            ("PLAINTEXT://127.0.0.1:0", "127.0.0.1")])
def test_the_host_is_kept_as_written(text, host) -> None:
    listener = Listener.parse(text)
    assert listener.host == host
    assert str(listener) == text
    (loaded,) = load_config(None, [f"listeners={text}"]).listeners
    assert loaded == listener


@pytest.mark.parametrize("host", ["", "::"])
def test_an_empty_host_and_the_ipv6_wildcard_bind_every_interface_of_both_families(host) -> None:
    assert bind_addresses(host, ipv6=True) == (DUAL_STACK,)
    assert bind_addresses(host, ipv6=False) == (IPV4_ANY,)  # a host without IPv6


def test_the_ipv4_wildcard_binds_ipv4_only() -> None:
    assert bind_addresses("0.0.0.0", ipv6=True) == (IPV4_ANY,)


def test_an_address_binds_that_address_only() -> None:
    assert bind_addresses("127.0.0.1", ipv6=True) == (BindAddress(socket.AF_INET, "127.0.0.1"),)
    assert bind_addresses("::1", ipv6=True) == (BindAddress(socket.AF_INET6, "::1"),)


def test_a_name_binds_every_address_it_resolves_to_and_no_ipv6_one_without_ipv6() -> None:
    addresses = bind_addresses("localhost", ipv6=True)
    assert BindAddress(socket.AF_INET, "127.0.0.1") in addresses
    assert not any(address.dual_stack for address in addresses)
    assert all(address.family == socket.AF_INET for address in bind_addresses("localhost", ipv6=False))


def test_every_address_of_a_listener_is_bound_on_one_port() -> None:
    sockets = bind_listener(Listener("PLAINTEXT", "localhost", 0))
    try:
        assert len({sock.getsockname()[1] for sock in sockets}) == 1
        for sock in sockets:
            if sock.family == socket.AF_INET6:  # beside an IPv4 socket of the same port: IPv6 only
                assert sock.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY) == 1
    finally:
        for sock in sockets:
            sock.close()


@needs_ipv6
def test_the_dual_stack_socket_takes_the_ipv4_port_too() -> None:
    """Bound, never listening (it accepts nothing, from anywhere), closed at once: its IPv4 side
    holds the port on 127.0.0.1 too, whatever net.ipv6.bindv6only says."""
    with _bound(DUAL_STACK, 0, False) as sock:
        assert sock.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY) == 0
        with socket.socket() as ipv4, pytest.raises(OSError, match="Address already in use"):
            ipv4.bind(("127.0.0.1", sock.getsockname()[1]))


def test_a_taken_port_names_the_listener() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        listener = Listener("SASL_PLAINTEXT", "127.0.0.1", taken.getsockname()[1])
        with pytest.raises(ListenerBindError) as failed:
            bind_listener(listener)
    assert failed.value.listener == listener
    assert str(failed.value) == f"cannot listen on {listener}: Address already in use"


@pytest.mark.parametrize(("peer", "named"), [("::ffff:10.1.2.3", "10.1.2.3"), ("10.1.2.3", "10.1.2.3"),
                                             ("::1", "::1"), ("fe80::1%eth0", "fe80::1%eth0"), ("?", "?")])
def test_an_ipv4_client_of_the_dual_stack_socket_is_named_by_its_ipv4_address(peer, named) -> None:
    assert client_host(peer) == named
