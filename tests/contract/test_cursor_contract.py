"""The walk-cursor store contract (the nightly lifecycle pass's resume point): every test
runs against the embedded SQLite file and Firestore (on the local emulator, marked
`firestore`). Each test uses a fresh cursor name, so tests may share one emulator."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from jennah.domain.lifecycle import WalkCursor
from jennah.domain.models import ScopeRef
from jennah.ports.cursors import CursorStore

STARTED = datetime(2026, 12, 2, 3, 0, 0, 123456, tzinfo=UTC)


def _sqlite_cursors(tmp_path: Path) -> Iterator[CursorStore]:
    from jennah.adapters.sqlite.cursors import SqliteCursorStore

    store = SqliteCursorStore(tmp_path / "memory.db")
    yield store
    store.close()


def _firestore_cursors() -> Iterator[CursorStore]:
    from jennah.adapters.firestore.cursors import FirestoreCursorStore
    from tests.support.firestore_emulator import firestore_test_client

    yield FirestoreCursorStore(firestore_test_client())


@pytest.fixture(params=["sqlite", pytest.param("firestore", marks=pytest.mark.firestore)])
def cursors(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CursorStore]:
    if request.param == "sqlite":
        yield from _sqlite_cursors(tmp_path)
    else:
        yield from _firestore_cursors()


@pytest.fixture
def name() -> str:
    return f"walk-{uuid.uuid4().hex}"


def test_an_absent_cursor_is_none(cursors: CursorStore, name: str) -> None:
    assert cursors.get(name) is None


def test_a_cursor_reads_back_as_put_and_a_put_replaces_it_whole(
    cursors: CursorStore, name: str
) -> None:
    walking = WalkCursor(after=ScopeRef(enterprise_id="e/1", scope_id="bot.a"), started_at=STARTED)
    cursors.put(name, walking)
    assert cursors.get(name) == walking
    finished = WalkCursor(started_at=STARTED, finished_at=STARTED + timedelta(minutes=9))
    cursors.put(name, finished)
    assert cursors.get(name) == finished


def test_cursors_are_apart_by_name(cursors: CursorStore, name: str) -> None:
    cursors.put(name, WalkCursor(started_at=STARTED))
    assert cursors.get(name + "-other") is None
