"""Connections to the SQLite file: pysqlite3 with sqlite-vec loaded, WAL, a pool,
and `ControlFile`, the plumbing the control stores share.

The standard library's `sqlite3` on this platform cannot load extensions, so
the adapter uses `pysqlite3` (its own SQLite build, extension loading on).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import sqlite_vec
from pysqlite3 import dbapi2

from jennah.ports.work import Turns, in_background

if TYPE_CHECKING:
    from sqlite3 import Connection

BUSY_TIMEOUT_MS = 10_000
MAX_IDLE_CONNECTIONS = 8
# Reads go through a memory map of the file's first MMAP_BYTES (address space, not
# memory: the pages are the OS cache's, shared by every connection) instead of a read()
# per page into each connection's 2 MB page cache. A word search at 100k records reads
# ~20k index entries: ~12% less CPU per hybrid query (bench/query_latency.py's, A/B).
MMAP_BYTES = 1 << 30

OperationalError: type[Exception] = dbapi2.OperationalError
IntegrityError: type[Exception] = dbapi2.IntegrityError


class WriteLock:
    """A SQLite file's write lock in this process (see `write_lock`): a waiting
    interactive writer goes before a waiting background one (jennah.ports.work: a
    formation's commit, a lifecycle pass), and a background one at least every
    BACKGROUND_EVERY grants. Not reentrant."""

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())
        self._held = False
        self._waiting = {False: 0, True: 0}  # by in_background()
        self._next: bool | None = None  # the class the lock was handed to, while it waits
        self._turns = Turns()

    def acquire(self) -> None:
        mine = in_background()
        with self._changed:
            self._waiting[mine] += 1
            try:
                while self._held or self._next not in (None, mine):
                    self._changed.wait()
            except BaseException:  # handed the lock and gone: hand it on
                if self._next == mine and self._waiting[mine] == 1:
                    self._next = None
                    self._changed.notify_all()
                raise
            finally:
                self._waiting[mine] -= 1
            self._held, self._next = True, None

    def release(self) -> None:
        with self._changed:
            self._held = False
            interactive, background = self._waiting[False] > 0, self._waiting[True] > 0
            if interactive or background:
                self._next = self._turns.background_next(interactive, background)
                self._changed.notify_all()

    def waiting(self) -> tuple[int, int]:
        """How many interactive and background writers wait for the lock now."""
        with self._changed:
            return self._waiting[False], self._waiting[True]

    def __enter__(self) -> WriteLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


_WRITE_LOCKS: dict[Path, WriteLock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


def write_lock(path: Path) -> WriteLock:
    """This process's one write lock on the SQLite file at `path`, whatever the spelling of
    the path. Every store on the file (the memory store and each control store: they share
    `memory.db` locally) writes under it, so the writers of one process queue on a lock
    that wakes the next at once, in the order WriteLock gives, instead of in SQLite's busy
    handler, which sleeps 1 to 100 ms between polls of the file lock. Writers of other
    processes still meet at the file lock (BUSY_TIMEOUT_MS)."""
    key = path.resolve()
    with _WRITE_LOCKS_GUARD:
        lock = _WRITE_LOCKS.get(key)
        if lock is None:
            lock = _WRITE_LOCKS[key] = WriteLock()
        return lock


def open_connection(path: Path) -> Connection:
    """An autocommit connection (transactions are explicit BEGIN … COMMIT)."""
    conn: Connection = dbapi2.connect(
        str(path), isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
    )
    conn.row_factory = dbapi2.Row
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
    return conn


class ConnectionPool:
    """Reader connections handed to one thread at a time, reused across threads.

    The local server starts a thread per request, so a connection per thread
    would leak; the pool keeps up to MAX_IDLE_CONNECTIONS idle ones.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._idle: list[Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        conn = self._take()
        try:
            yield conn
        finally:
            self._give_back(conn)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _take(self) -> Connection:
        with self._lock:
            if self._closed:
                raise RuntimeError("the memory store is closed")
            if self._idle:
                return self._idle.pop()
        return open_connection(self._path)

    def _give_back(self, conn: Connection) -> None:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        with self._lock:
            if not self._closed and len(self._idle) < MAX_IDLE_CONNECTIONS:
                self._idle.append(conn)
                return
        conn.close()


@contextmanager
def immediate_transaction(conn: Connection, store: str) -> Iterator[Connection]:
    """One BEGIN IMMEDIATE … COMMIT on a writer connection, rolled back on any error.

    The caller holds its write lock. A writer that cannot start (another
    process holds the file past the busy timeout) is ABORTED, retryable.
    """
    from jennah.errors import Aborted

    try:
        conn.execute("BEGIN IMMEDIATE")
    except OperationalError as exc:
        raise Aborted(f"the {store} is busy ({exc}); retry", reason="STORE_BUSY") from exc
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


@contextmanager
def read_transaction(conn: Connection) -> Iterator[Connection]:
    """An autocommit connection in one read transaction: every read inside sees the same
    committed state (one WAL snapshot)."""
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        conn.execute("COMMIT")


class ControlFile:
    """One SQLite file a control store writes through one connection and reads
    through a pool of connections.

    Writes are serialized by the file's write lock (`write_lock`: one per file in the
    process, whichever store writes), each in one BEGIN IMMEDIATE transaction;
    reads never block the writer (WAL). `ddl` (statements separated by ";") is
    run in one transaction on open, so it must be idempotent (IF NOT EXISTS);
    `upgrade`, when given, runs first in that transaction, to bring tables an
    older build created up to date (it must recognize them, as another process
    may have upgraded them already). `store` names the store in its errors.
    """

    def __init__(
        self,
        path: str | Path,
        store: str,
        ddl: str = "",
        upgrade: Callable[[Connection], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._store = store
        self._writer = open_connection(self.path)
        self._write_lock = write_lock(self.path)
        with self.transaction() as conn:
            if upgrade is not None:
                upgrade(conn)
            for statement in ddl.split(";"):
                if statement.strip():
                    conn.execute(statement)
        self._pool = ConnectionPool(self.path)

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One write transaction on the writer, under the write lock (not reentrant)."""
        with self._write_lock, immediate_transaction(self._writer, self._store) as conn:
            yield conn

    def reader(self) -> AbstractContextManager[Connection]:
        """A pooled connection in autocommit: each statement reads committed state."""
        return self._pool.connection()

    @contextmanager
    def snapshot(self) -> Iterator[Connection]:
        """A pooled connection in one read transaction: every read inside sees the same
        committed state."""
        with self._pool.connection() as conn, read_transaction(conn):
            yield conn

    def close(self) -> None:
        with self._write_lock:
            self._pool.close()
            self._writer.close()
