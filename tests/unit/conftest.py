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

# Modules that still run services or the API on the SQLite adapters (or build the embedded
# default's container) in fixtures of their own: to move onto tests/unit/fakes.py (or into
# tests/integration where they test the adapters). Every other unit test is guarded, and a
# module leaves this list as soon as it is converted.
NOT_YET_ON_FAKES = frozenset(
    {
        "test_api_auth",  # the local root credential of `jnh serve`'s container (bootstrap)
        "test_api_billing",  # sqlite_api
        "test_api_form",  # sqlite_api: the receipt against the SQLite rows
        "test_api_form_steps",  # sqlite_api
        "test_api_jobs",  # sqlite_api
        "test_api_vocabulary",  # sqlite_api
        "test_cli_form",  # a served SQLite container
        "test_cli_operations",  # a served SQLite container
        "test_cli_usage",  # `jnh usage rollup` on a data directory
        "test_formation_log",  # sqlite_api
        "test_formation_operations",  # a SqliteStore/ledger/operation-store world
    }
)
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
    if request.module.__name__.rpartition(".")[2] in NOT_YET_ON_FAKES:
        yield
        return
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
