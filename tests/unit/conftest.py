"""Unit tests run on fakes: no SQLite file, no thread pool.

A unit test that opens an SQLite database on a file (the SQLite adapters, `jnh serve`'s
container) or starts a thread pool's worker (LocalTaskQueue, any ThreadPoolExecutor) fails,
naming what it did: such a test belongs in tests/integration, or should use tests/fakes.
The guarded call raises a BaseException, so no `except Exception` in the code under test
can swallow it, and the test fails at teardown even if something did.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from pysqlite3 import dbapi2

IN_MEMORY = (":memory:", "")

CALL_FAILED = pytest.StashKey[bool]()
FOUND = pytest.StashKey[list[str]]()  # what the guarded test reached for


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[CALL_FAILED] = report.failed
    return report


class UnitTestBoundary(BaseException):
    """A unit test reached for a file database or a thread pool."""


def _memory_only(connect: Callable[..., Any], found: list[str]) -> Callable[..., Any]:
    def guarded(database: Any, *args: Any, **kwargs: Any) -> Any:
        name = str(database)
        in_memory = name in IN_MEMORY or (name.startswith("file:") and "mode=memory" in name)
        if not in_memory:
            found.append(f"opened the SQLite file {name}")
            raise UnitTestBoundary(f"a unit test opened the SQLite file {name}")
        return connect(database, *args, **kwargs)

    return guarded


@pytest.fixture(autouse=True)
def no_sqlite_file_and_no_thread_pool(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[None]:
    found: list[str] = []
    request.node.stash[FOUND] = found
    monkeypatch.setattr(dbapi2, "connect", _memory_only(dbapi2.connect, found))
    monkeypatch.setattr(sqlite3, "connect", _memory_only(sqlite3.connect, found))

    def submit(self: ThreadPoolExecutor, *args: Any, **kwargs: Any) -> Any:
        found.append(f"started a thread pool worker ({self._thread_name_prefix or 'pool'})")
        raise UnitTestBoundary("a unit test started a thread pool worker")

    monkeypatch.setattr(ThreadPoolExecutor, "submit", submit)
    yield
    if found and not request.node.stash.get(CALL_FAILED, True):  # else reported already
        pytest.fail(
            "a unit test must not touch a SQLite file or a thread pool (move it to "
            "tests/integration, or use tests/fakes): " + "; ".join(found),
            pytrace=False,
        )
