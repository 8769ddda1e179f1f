"""The observed-broker store (KIP-409): every broker ever seen, kept across restarts and crashes.

One SQLite file (``observed.brokers.path``) with one table. It is opened in WAL mode with
``synchronous=FULL``, and every :meth:`ObservedBrokerStore.record` is one transaction, so a
``kill -9`` (or a power cut) at any moment leaves the file intact and holding every sighting
whose ``record`` call returned. Several processes may open the same file at once: the server
records, while ``replica-assignor observed list|forget`` reads and deletes.

The methods block on disk I/O (``synchronous=FULL`` waits for fsync): call them from a worker
thread (``asyncio.to_thread``) in the server. One connection is shared by all threads, guarded
by a lock.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kafka_replica_assignor.assignors.model import BrokerMetadata

DEFAULT_OBSERVED_PATH = "observed-brokers.db"
"""The default of ``observed.brokers.path`` (relative to the working directory)."""

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS observed_brokers (
    broker_id  INTEGER PRIMARY KEY CHECK (broker_id >= 0),
    rack       TEXT,
    host       TEXT,
    port       INTEGER,
    first_seen REAL NOT NULL,
    last_seen  REAL NOT NULL
) STRICT
"""


class ObservedStoreError(Exception):
    """The store cannot be opened or used; the message names the file."""


class Sighting(Protocol):
    """What :meth:`ObservedBrokerStore.record` accepts: a broker id and rack, and optionally
    ``host`` and ``port`` (``BrokerMetadata``, ``kafka_replica_assignor.cluster.snapshot.BrokerEntry``, ...)."""

    @property
    def id(self) -> int: ...

    @property
    def rack(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class ObservedBroker:
    """One broker as last seen; times are seconds since the epoch."""

    id: int
    rack: str | None
    host: str | None
    port: int | None
    first_seen: float
    last_seen: float

    @property
    def metadata(self) -> BrokerMetadata:
        return BrokerMetadata(self.id, self.rack)

    def to_dict(self) -> dict[str, object]:
        return {"id": self.id, "rack": self.rack, "host": self.host, "port": self.port,
                "first_seen": self.first_seen, "last_seen": self.last_seen}


class ObservedBrokerStore:
    """Every broker ever seen, until forgotten. See the module docstring for the guarantees."""

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise ObservedStoreError(f"no observed broker store at {self.path}")
        self._lock = threading.Lock()
        try:
            uri = self.path.resolve().as_uri() + ("?mode=rwc" if create else "?mode=rw")
            self._db = sqlite3.connect(uri, uri=True, timeout=10.0, isolation_level=None,
                                       check_same_thread=False)
        except sqlite3.Error as exc:
            raise ObservedStoreError(f"cannot open observed broker store {self.path}: {exc}") from None
        try:
            self._setup(create)
        except sqlite3.Error as exc:
            self._db.close()
            raise ObservedStoreError(f"cannot open observed broker store {self.path}: {exc}") from None
        except ObservedStoreError:
            self._db.close()
            raise

    def _setup(self, create: bool) -> None:
        mode = self._db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise ObservedStoreError(f"observed broker store {self.path}: WAL mode unavailable ({mode})")
        self._db.execute("PRAGMA synchronous=FULL")
        exists = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'observed_brokers'"
        ).fetchone()
        if exists is None:
            if not create:
                raise ObservedStoreError(f"{self.path} is not an observed broker store")
            with self._transaction():
                self._db.execute(_SCHEMA)
                self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION:
            raise ObservedStoreError(
                f"observed broker store {self.path} has schema version {version}, "
                f"this build reads version {SCHEMA_VERSION}"
            )

    def _transaction(self) -> contextlib.AbstractContextManager[None]:
        return _transaction(self._db)

    # -- operations ------------------------------------------------------------------------
    def record(self, brokers: Iterable[Sighting], now: float) -> None:
        """Upsert the brokers seen at ``now``, all in one transaction (all or nothing).

        Every sighting is checked before anything is written: one bad value writes nothing.

        A broker seen again keeps its ``first_seen``; its rack is replaced, and its host and
        port are replaced when the sighting has them.
        """
        rows = {}
        for b in brokers:
            if isinstance(b.id, bool) or not isinstance(b.id, int) or b.id < 0:
                raise ValueError(f"broker id must be an int >= 0, got {b.id!r}")
            host, port = getattr(b, "host", None), getattr(b, "port", None)
            if not all(v is None or isinstance(v, str) for v in (b.rack, host)):
                raise ValueError(f"broker {b.id}: rack and host must be strings or None")
            if port is not None and (isinstance(port, bool) or not isinstance(port, int)):
                raise ValueError(f"broker {b.id}: port must be an int or None, got {port!r}")
            rows[b.id] = (b.id, b.rack, host, port, now, now)
        if not rows:
            return
        with self._lock, self._guard("record brokers in"), self._transaction():
            self._db.executemany(
                """
                INSERT INTO observed_brokers (broker_id, rack, host, port, first_seen, last_seen)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (broker_id) DO UPDATE SET
                    rack = excluded.rack,
                    host = coalesce(excluded.host, host),
                    port = coalesce(excluded.port, port),
                    last_seen = max(last_seen, excluded.last_seen)
                """,
                list(rows.values()),
            )

    def list(self) -> list[ObservedBroker]:
        """Every observed broker, by id."""
        with self._lock, self._guard("read"):
            rows = self._db.execute(
                "SELECT broker_id, rack, host, port, first_seen, last_seen "
                "FROM observed_brokers ORDER BY broker_id"
            ).fetchall()
        return [ObservedBroker(*row) for row in rows]

    def forget(self, broker_id: int) -> bool:
        """Remove a broker that will never return; False when it was not in the store."""
        with self._lock, self._guard("forget a broker in"), self._transaction():
            cursor = self._db.execute("DELETE FROM observed_brokers WHERE broker_id = ?", (broker_id,))
            return cursor.rowcount > 0

    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check`` answer: ``"ok"`` when the file is sound."""
        with self._lock, self._guard("check"):
            return "; ".join(str(r[0]) for r in self._db.execute("PRAGMA integrity_check"))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> ObservedBrokerStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _guard(self, action: str) -> contextlib.AbstractContextManager[None]:
        return _sqlite_errors(f"cannot {action} observed broker store {self.path}")


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` on an autocommit connection; ``ROLLBACK`` on any error."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


@contextlib.contextmanager
def _sqlite_errors(message: str) -> Iterator[None]:
    """Turns sqlite3 errors into :class:`ObservedStoreError` with a message naming the file."""
    try:
        yield
    except sqlite3.Error as exc:
        raise ObservedStoreError(f"{message}: {exc}") from exc
