"""What a client may hold of the watcher's web listener: many slow clients (sending their
request a byte now and then, or nothing) do not keep a bystander out, a request is cut at its
read deadline whatever its pace, and wrong credentials are answered at a bounded rate, in turns
fair between addresses."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_replica_assignor.web import server as web_server
from kafka_replica_assignor.web.admission import FailedAuthRate

from .test_watch_web import TOKEN, Setup


def serving(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **limits: float) -> Iterator[Setup]:
    """A listener with 8 slots and the web server's other ``limits`` set, serving a seen cluster."""
    monkeypatch.setattr(web_server, "MAX_CONNECTIONS", 8)
    for name, value in limits.items():
        monkeypatch.setattr(web_server, name, value)
    setup = Setup(tmp_path)
    setup.see()
    try:
        yield setup
    finally:
        setup.close()


@pytest.fixture
def quick(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    yield from serving(tmp_path, monkeypatch, READ_DEADLINE_S=1.5, FAILED_AUTH_RATE=4.0, FAILED_AUTH_WAIT_S=3.0)


def get(port: int, path: str, auth: str | None = None, source: str = "127.0.0.1") -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    conn.request("GET", path, headers={"Authorization": auth} if auth else {})
    try:
        return conn.getresponse().status
    finally:
        conn.close()


@pytest.fixture
def patient(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    """8 slots and a read deadline far longer than the test: a slot is freed for a bystander
    only by taking it from a slow client, never by that client's deadline."""
    yield from serving(tmp_path, monkeypatch, READ_DEADLINE_S=60.0)


def test_many_slow_clients_leave_a_bystander_served(patient: Setup) -> None:
    slow = []
    for i in range(30):        # far more than the 8 slots, each a request begun and never ended
        s = socket.create_connection(("127.0.0.1", patient.port))
        s.sendall(b"GET /api/state HTTP/1.1\r\nHost: x\r\n" + b"X-%d: " % i)
        slow.append(s)
    try:
        waited = 0.0
        while patient.server.slots.evictions < 22 and waited < 30:   # every slow client accepted
            time.sleep(0.05)
            waited += 0.05
        assert len(patient.server.slots) <= 8 and patient.server.slots.evictions >= 22
        started = time.monotonic()
        assert get(patient.port, "/api/state", f"Bearer {TOKEN}") == 200
        # served by taking a slow client's slot: long before any slow client's deadline freed one
        assert time.monotonic() - started < web_server.READ_DEADLINE_S / 4
    finally:
        for s in slow:
            s.close()


def test_a_request_sent_a_byte_at_a_time_is_cut_at_its_deadline(quick: Setup) -> None:
    s = socket.create_connection(("127.0.0.1", quick.port))
    started = time.monotonic()
    cut = None
    try:
        s.sendall(b"GET /api/state HTTP/1.1\r\n")
        for _ in range(60):        # a header byte every 0.1 s: each read is quick, the request never ends
            try:
                s.sendall(b"X")
                s.settimeout(0.1)
                if s.recv(1) == b"":
                    cut = time.monotonic() - started
                    break
            except TimeoutError:
                continue
            except OSError:
                cut = time.monotonic() - started
                break
    finally:
        s.close()
    assert cut is not None and 1.4 < cut < 2.5


def test_a_request_over_its_size_is_closed(quick: Setup) -> None:
    s = socket.create_connection(("127.0.0.1", quick.port))
    try:
        s.settimeout(5)
        with pytest.raises(OSError):
            s.sendall(b"GET / HTTP/1.1\r\n" + b"X-Long: " + b"x" * (4 * web_server.MAX_REQUEST))
            while s.recv(65536):
                pass
            raise ConnectionResetError("closed")
    finally:
        s.close()
    assert get(quick.port, "/") == 200


def test_wrong_credentials_are_answered_at_a_bounded_rate_and_right_ones_at_once(quick: Setup) -> None:
    codes: list[int] = []
    started = time.monotonic()
    guessers = [threading.Thread(target=lambda: codes.append(get(quick.port, "/api/state", "Bearer wrong-one")))
                for _ in range(6)]
    for t in guessers:
        t.start()
    time.sleep(0.1)
    right = time.monotonic()
    assert get(quick.port, "/api/state", f"Bearer {TOKEN}") == 200
    assert time.monotonic() - right < 0.5
    for t in guessers:
        t.join()
    assert codes == [401] * 6
    assert time.monotonic() - started >= 0.4      # a burst of 4, then 4 a second


def test_failed_authentications_take_turns_fair_between_addresses() -> None:
    rate = FailedAuthRate(2.0, 10.0)
    rate.turn("flood")
    rate.turn("flood")                # the burst spent
    order: list[str] = []
    lock = threading.Lock()

    def fail(ip: str) -> None:
        assert rate.turn(ip)
        with lock:
            order.append(ip)

    flood = [threading.Thread(target=fail, args=("flood",)) for _ in range(4)]
    for t in flood:
        t.start()
    while rate.waiting < 4:
        time.sleep(0.01)
    other = threading.Thread(target=fail, args=("other",))
    other.start()
    for t in [*flood, other]:
        t.join()
    assert order.index("other") <= 1      # not behind the flood's queue


def test_a_failure_waiting_too_long_is_refused() -> None:
    rate = FailedAuthRate(1.0, 0.3)
    assert rate.turn("a")
    started = time.monotonic()
    assert not rate.turn("a")
    assert 0.25 < time.monotonic() - started < 1.0 and rate.refused == 1
