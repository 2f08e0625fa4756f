"""The access matrix on the real SQLite adapters: the memory store, the identity store
and the vocabulary store on one SQLite file, as `jnh serve` wires them.

"Nothing written" is checked on the file itself: every row of every table, read
through a connection of its own, before and after each refused request. The cases that
write nothing share one world (each checked to write nothing at all); the ones that may
write get a world each (see tests/unit/test_access_matrix.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.adapters.sqlite.connection import open_connection
from jennah.adapters.sqlite.identity import SqliteIdentityStore
from jennah.adapters.sqlite.store import SqliteStore
from jennah.bootstrap import Container
from jennah.settings import Settings
from tests.unit.test_access_matrix import (
    MATRIX,
    OWN_CASES,
    READS,
    SHARED_CASES,
    SharedWorld,
    World,
    build_world,
    check_shared_case,
    run_case,
)

pytestmark = pytest.mark.slow


def dump(path: Path, enterprise: str | None) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table (of one enterprise's tables and rows when given)."""
    conn = open_connection(path)
    try:
        tables = [row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name")]  # fmt: skip
        rows: dict[str, list[tuple[Any, ...]]] = {}
        for table in tables:
            columns = [c[1] for c in conn.execute(f"PRAGMA table_info({table})")]
            if enterprise is not None and "enterprise_id" not in columns:
                continue
            where = "" if enterprise is None else " WHERE enterprise_id = ?"
            found = conn.execute(f"SELECT * FROM {table}{where}", () if enterprise is None
                                 else (enterprise,))  # fmt: skip
            rows[table] = sorted((tuple(r) for r in found), key=repr)
        return rows
    finally:
        conn.close()


def _world_maker(directory: Path) -> tuple[Any, list[Container]]:
    opened: list[Container] = []

    def make() -> World:
        path = directory / f"world{len(opened)}" / "memory.db"
        path.parent.mkdir()
        container = Container(
            Settings(data_dir=path.parent, embedder="hashing"),
            store=SqliteStore(path),
            identity=SqliteIdentityStore(path),
            embedder=HashingEmbedder(),
        )
        opened.append(container)
        return build_world(container, lambda enterprise: dump(path, enterprise))

    return make, opened


@pytest.fixture
def make_world(tmp_path: Path) -> Iterator[Any]:
    make, opened = _world_maker(tmp_path)
    yield make
    for container in opened:
        container.close()


@pytest.fixture(scope="module")
def shared_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedWorld]:
    make, opened = _world_maker(tmp_path_factory.mktemp("shared"))
    yield SharedWorld(make)
    for container in opened:
        container.close()


def test_the_sqlite_tables_hold_the_world(make_world: Any) -> None:
    world = make_world()
    local = world.snapshot("local")
    assert {"scopes", "users", "api_keys", "role_bindings", "memory_records",
            "vocabularies"} <= set(local)  # fmt: skip
    assert len(local["scopes"]) == 2 and len(local["api_keys"]) == 4
    assert len(local["vocabularies"]) == 1


@pytest.mark.parametrize(("operation_id", "case"), SHARED_CASES)
def test_matrix_on_sqlite_in_a_shared_world(
    shared_world: SharedWorld, operation_id: str, case: str
) -> None:
    check_shared_case(shared_world, operation_id, case)


@pytest.mark.parametrize(("operation_id", "case"), OWN_CASES)
def test_matrix_on_sqlite(make_world: Any, operation_id: str, case: str) -> None:
    run_case(make_world, operation_id, case)


@pytest.mark.parametrize("operation_id", READS)
def test_no_reach_is_answered_as_a_missing_scope_on_sqlite(
    make_world: Any, operation_id: str
) -> None:
    row = MATRIX[operation_id]
    world = make_world()
    unreached = world.send(row, f"Bearer {world.tokens['noreach']}")
    root = f"Bearer {world.tokens['root']}"
    for path in ("/v1/scopes/bot.a", "/v1/scopes/team.x"):
        assert (
            world.app.test_client().delete(path, headers={"Authorization": root}).status_code == 200
        )
    missing = world.send(row, root)
    assert unreached.status_code == missing.status_code == 404
    assert unreached.get_json() == missing.get_json()
    assert world.snapshot("local")["memory_records"] == []
