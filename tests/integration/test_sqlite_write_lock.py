"""One write lock per SQLite file in a process, for every store on it, serving waiting
interactive writers before waiting background ones (jennah.ports.work).

Threads coordinate by events and by the lock's own count of waiters, never by sleeping
for a while; the one bounded wait (that a write is held back) can only pass wrongly,
never fail wrongly, on a slow machine.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from jennah.adapters.sqlite.connection import WriteLock, write_lock
from jennah.adapters.sqlite.operations import SqliteOperationStore
from jennah.adapters.sqlite.store import SqliteStore
from jennah.domain.models import CommitPlan, MemoryRecord, ScopeRef
from jennah.domain.rules import chunk_id, content_hash
from jennah.ports.work import BACKGROUND_EVERY, background
from tests.support.threads import WAIT_S, started, until

SCOPE = ScopeRef(enterprise_id="e", scope_id="s")


def test_every_spelling_of_a_file_names_one_lock_and_other_files_their_own(
    tmp_path: Path,
) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "sub")
    lock = write_lock(tmp_path / "sub" / "memory.db")
    assert write_lock(tmp_path / "sub" / ".." / "sub" / "memory.db") is lock
    assert write_lock(tmp_path / "link" / "memory.db") is lock
    assert write_lock(tmp_path / "other.db") is not lock


def _plan(text: str) -> CommitPlan:
    record = MemoryRecord(
        id=chunk_id(text, None), scope=SCOPE, content_hash=content_hash(text), text=text
    )
    return CommitPlan(scope=SCOPE, chunks=[record])


def _held_back(path: Path, write: Callable[[], object]) -> None:
    """`write` waits while this thread holds the file's write lock, and runs once it is
    released."""
    lock = write_lock(path)
    done = threading.Event()

    def run() -> None:
        write()
        done.set()

    lock.acquire()
    try:
        thread = started(run)
        until(lambda: lock.waiting() == (1, 0))
        assert not done.wait(timeout=0.2)
    finally:
        lock.release()
    assert done.wait(timeout=WAIT_S)
    thread.join(timeout=WAIT_S)


def test_the_memory_store_and_a_control_store_on_one_file_write_under_its_lock(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memory.db"
    store = SqliteStore(path)
    operations = SqliteOperationStore(path)
    try:
        _held_back(path, lambda: store.apply(_plan("the lake was cold")))
        at = datetime(2026, 1, 1, tzinfo=UTC)
        _held_back(path, lambda: operations.claim("e", "missing", "w", at, timedelta(seconds=1)))
    finally:
        operations.close()
        store.close()


def _queue_in_order(lock: WriteLock, kinds: list[bool]) -> list[bool]:
    """Holding `lock`, let a thread per kind (True: background) wait for it, in turn;
    release it; the kinds in the order they got it."""
    got: list[bool] = []
    threads = []

    def waiter(kind: bool) -> None:
        def take() -> None:
            with lock:
                got.append(kind)

        if kind:
            with background():
                take()
        else:
            take()

    lock.acquire()
    for i, kind in enumerate(kinds):
        threads.append(started(functools.partial(waiter, kind)))
        waiting = (kinds[: i + 1].count(False), kinds[: i + 1].count(True))
        until(functools.partial(lambda w: lock.waiting() == w, waiting))
    lock.release()
    for thread in threads:
        thread.join(timeout=WAIT_S)
    assert len(got) == len(kinds)
    return got


def test_a_waiting_interactive_writer_goes_before_a_background_one_that_waited_longer() -> None:
    assert _queue_in_order(WriteLock(), [True, False, True, False]) == [False, False, True, True]


def test_a_waiting_background_writer_goes_after_at_most_background_every_interactive_ones() -> None:
    kinds = [True] + [False] * (BACKGROUND_EVERY + 1)
    assert _queue_in_order(WriteLock(), kinds) == ([False] * BACKGROUND_EVERY + [True] + [False])


def test_a_free_lock_goes_to_whoever_asks() -> None:
    lock = WriteLock()
    with background(), lock:
        assert lock.waiting() == (0, 0)
    with lock:
        pass
