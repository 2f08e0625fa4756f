"""The unit-test guard (tests/unit/conftest.py) refuses a SQLite file and a thread pool."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pysqlite3 import dbapi2

from tests.unit.conftest import FOUND, UnitTestBoundary


def test_a_file_database_and_a_pool_worker_are_refused(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    with pytest.raises(UnitTestBoundary):
        dbapi2.connect(str(tmp_path / "memory.db"))
    with pytest.raises(UnitTestBoundary):
        sqlite3.connect(tmp_path / "other.db")
    with pytest.raises(UnitTestBoundary):
        ThreadPoolExecutor(max_workers=1).submit(print)
    assert not list(tmp_path.iterdir())
    found = request.node.stash[FOUND]
    assert len(found) == 3 and "memory.db" in found[0], found
    found.clear()  # refused on purpose: the test passes


def test_an_in_memory_database_is_allowed() -> None:
    dbapi2.connect(":memory:").close()
    sqlite3.connect(":memory:").close()
