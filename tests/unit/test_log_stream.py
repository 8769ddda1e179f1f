"""The log stream the server owns: lines are written on flush, together while a thread holds
them, and a reader that went away drops lines instead of failing the server."""

from __future__ import annotations

import io
import threading

from kafka_replica_assignor.server.logs import LogStream, hold_lines, release_lines


class Recording(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)


def test_each_flush_writes_the_pending_lines() -> None:
    target = Recording()
    stream = LogStream(target)
    stream.write("a\n")
    stream.flush()
    stream.write("b\n")
    stream.flush()
    assert target.writes == ["a\n", "b\n"]


def test_held_lines_are_written_together_when_the_outermost_hold_ends() -> None:
    target = Recording()
    stream = LogStream(target)
    held = hold_lines(stream)
    stream.write("a\n")
    stream.flush()
    stream.hold()  # holds nest
    stream.write("b\n")
    stream.flush()
    stream.release()
    assert target.writes == []
    stream.write("c\n")
    release_lines(held)
    assert target.writes == ["a\nb\nc\n"]


def test_a_hold_is_per_thread() -> None:
    target = Recording()
    stream = LogStream(target)
    stream.hold()

    def other() -> None:
        stream.write("other\n")
        stream.flush()

    stream.write("held\n")
    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert target.writes == ["held\nother\n"]  # the other thread's flush writes what is pending, in order
    stream.release()


def test_no_stream_means_no_batching() -> None:
    assert hold_lines(None) is None
    release_lines(None)  # nothing to release


def test_a_closed_reader_drops_lines() -> None:
    target = io.StringIO()
    stream = LogStream(target)
    target.close()
    stream.write("a\n")
    stream.write("b\n")
    stream.flush()
    assert stream.dropped == 2
