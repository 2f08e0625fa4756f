"""The store contract: every test here runs against BOTH store adapters.

`store` is parametrized over the embedded SQLite store and Cloud Spanner (on
the local emulator, marked `spanner`). Each test writes into fresh, unique
scopes, so tests need no cleanup and may share one Spanner database.

Most tests drive the store through the real services (`commit`, `query`) with
a small deterministic embedder and a fixed clock, so the suite proves the
whole stack answers identically on both stores. `expected_search` is the
reference answer an exact scan gives, computed in Python from the domain rules.
"""

from __future__ import annotations

import hashlib
import math
import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from jennah.domain import rules
from jennah.domain.models import (
    EMBEDDING_DIMENSIONS,
    CommitResult,
    MemoryRecord,
    MetadataFilter,
    ScopeRef,
)
from jennah.domain.retrieval import RetrievalMode
from jennah.ports.store import MemoryStore
from jennah.services.commands import (
    ChunkInput,
    CommitCommand,
    EdgeInput,
    GraphQuery,
    NodeInput,
    QueryCommand,
    SemanticQuery,
    SupersessionInput,
)
from jennah.services.commit import commit
from jennah.services.query import QueryResult, query

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
_WORD = re.compile(r"\w+")


def at(year: int, month: int = 1, day: int = 1) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


class BagOfWordsEmbedder:
    """Each lowercase word adds 1 to one of 384 buckets (by SHA-256); unit length.

    Texts sharing words score higher; identical word bags tie exactly.
    """

    dimensions = EMBEDDING_DIMENSIONS
    model_name = "contract-bag-of-words"

    def embed(self, text: str) -> list[float]:
        counts = [0.0] * self.dimensions
        for word in _WORD.findall(text.lower()):
            digest = hashlib.sha256(word.encode("utf-8")).digest()
            counts[int.from_bytes(digest[:4], "big") % self.dimensions] += 1.0
        norm = math.sqrt(sum(c * c for c in counts))
        if norm == 0.0:
            return [1.0] + [0.0] * (self.dimensions - 1)
        return [c / norm for c in counts]

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.embed(text) for text in texts]

    def embed_soon(self, text: str) -> Callable[[], list[float]]:
        vector = self.embed(text)
        return lambda: vector


EMBEDDER = BagOfWordsEmbedder()


def _sqlite_store(tmp_path: Path) -> Iterator[MemoryStore]:
    from jennah.adapters.sqlite.store import SqliteStore

    store = SqliteStore(tmp_path / "memory.db")
    yield store
    store.close()


def _spanner_store() -> Iterator[MemoryStore]:
    from jennah.adapters.spanner.store import SpannerStore
    from tests.support.spanner_emulator import spanner_test_database

    yield SpannerStore(spanner_test_database())


@pytest.fixture(params=["sqlite", pytest.param("spanner", marks=pytest.mark.spanner)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore]:
    if request.param == "sqlite":
        yield from _sqlite_store(tmp_path)
    else:
        yield from _spanner_store()


def new_scope(enterprise_id: str | None = None) -> ScopeRef:
    return ScopeRef(
        enterprise_id=enterprise_id or f"ent-{uuid.uuid4().hex}",
        scope_id=f"scope-{uuid.uuid4().hex}",
    )


@pytest.fixture
def scope() -> ScopeRef:
    return new_scope()


# -- driving the services -----------------------------------------------------


def commit_items(
    store: MemoryStore,
    scope: ScopeRef,
    *,
    chunks: Sequence[ChunkInput] = (),
    nodes: Sequence[NodeInput] = (),
    edges: Sequence[EdgeInput] = (),
    supersessions: Sequence[SupersessionInput] = (),
) -> CommitResult:
    command = CommitCommand(
        scope=scope,
        chunks=list(chunks),
        nodes=list(nodes),
        edges=list(edges),
        supersessions=list(supersessions),
    )
    return commit(command, store, EMBEDDER, lambda: NOW)


def search(
    store: MemoryStore,
    scope: ScopeRef,
    text: str,
    *,
    top_k: int = 10,
    filters: Sequence[MetadataFilter] = (),
    as_of: datetime | None = None,
    mode: RetrievalMode = RetrievalMode.SEMANTIC,
) -> list[tuple[str, float]]:
    """(id, score) of a semantic-section query through the query service (by meaning
    alone unless `mode` says otherwise)."""
    semantic = SemanticQuery(
        query_text=text, top_k=top_k, filters=list(filters), as_of_valid=as_of, mode=mode
    )
    result = query(QueryCommand(scope=scope, semantic=semantic), store, EMBEDDER, lambda: NOW)
    assert result.semantic is not None
    return [(hit.record.id, hit.score) for hit in result.semantic]


def search_ids(store: MemoryStore, scope: ScopeRef, text: str, **kwargs: Any) -> list[str]:
    return [record_id for record_id, _ in search(store, scope, text, **kwargs)]


def graph(store: MemoryStore, scope: ScopeRef, graph_query: GraphQuery) -> QueryResult:
    return query(QueryCommand(scope=scope, graph=graph_query), store, EMBEDDER, lambda: NOW)


def chunk_id(text: str, valid_at: datetime | None = None) -> str:
    return rules.chunk_id(text, valid_at)


def edge_id(source: str, relation: str, target: str, valid_at: datetime | None = None) -> str:
    return rules.edge_id(source, relation, target, valid_at)


def one_chunk(store: MemoryStore, scope: ScopeRef, record_id: str) -> MemoryRecord:
    (record,) = store.get_chunks(scope, [record_id])
    return record


# -- the reference answer -------------------------------------------------------


def expected_search(
    records: Sequence[MemoryRecord],
    text: str,
    top_k: int,
    filters: Sequence[MetadataFilter],
    as_of: datetime,
) -> list[tuple[str, float]]:
    """What an exact scan must return: cosine similarity, best first, ties by id."""
    vector = EMBEDDER.embed(text)
    hits = [
        (record.id, _cosine(vector, EMBEDDER.embed(record.text)))
        for record in records
        if rules.is_valid_at(record.valid_at, record.invalid_at, record.retired_at, as_of)
        and all(rules.matches_filter(record.metadata, flt) for flt in filters)
    ]
    hits.sort(key=lambda hit: (-hit[1], hit[0]))
    return hits[:top_k]


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norms if norms else 0.0


def assert_same_ranking(
    actual: Sequence[tuple[str, float]], expected: Sequence[tuple[str, float]]
) -> None:
    assert [record_id for record_id, _ in actual] == [record_id for record_id, _ in expected]
    for (_, got), (_, want) in zip(actual, expected, strict=True):
        assert got == pytest.approx(want, abs=1e-5)


# -- raw rows, below the port ---------------------------------------------------

# Tables a destroy empties but does not count: SQLite's per-scope generation and number.
BOOKKEEPING_TABLES = frozenset({"scope_generations", "scope_ordinals"})


def row_counts(store: MemoryStore, scope: ScopeRef) -> dict[str, int]:
    """Rows of `scope` in EVERY table with enterprise_id and scope_id columns, read
    straight from the database (tables are enumerated, so a new one is covered)."""
    from jennah.adapters.spanner.store import SpannerStore
    from jennah.adapters.sqlite.store import SqliteStore

    if isinstance(store, SqliteStore):
        return _sqlite_row_counts(store.path, scope)
    if isinstance(store, SpannerStore):
        from tests.support.spanner_emulator import spanner_test_database

        return _spanner_row_counts(spanner_test_database(), scope)
    raise TypeError(f"no raw row counts for {type(store).__name__}")


def keyword_index_orphans(store: MemoryStore) -> int:
    """Keyword-index entries whose memory record is gone (SQLite's FTS5 table, after
    its own integrity check); 0 for Spanner, whose search index lives in the table."""
    from jennah.adapters.sqlite.store import SqliteStore

    if not isinstance(store, SqliteStore):
        return 0
    conn = _sqlite_raw(store.path)
    try:
        conn.execute(
            "INSERT INTO memory_records_text (memory_records_text, rank) "
            "VALUES ('integrity-check', 1)"
        )
        (orphans,) = conn.execute(
            "SELECT count(*) FROM memory_records_text_docsize "
            "WHERE id NOT IN (SELECT row_id FROM memory_records)"
        ).fetchone()
        return int(orphans)
    finally:
        conn.close()


def keyword_index_size(store: MemoryStore) -> int | None:
    """Entries of SQLite's FTS5 keyword index; None for Spanner (no separate table)."""
    from jennah.adapters.sqlite.store import SqliteStore

    if not isinstance(store, SqliteStore):
        return None
    conn = _sqlite_raw(store.path)
    try:
        return int(conn.execute("SELECT count(*) FROM memory_records_text_docsize").fetchone()[0])
    finally:
        conn.close()


def _sqlite_raw(path: Path) -> Any:
    """A plain pysqlite3 connection to the store's file, no adapter code involved."""
    from pysqlite3 import dbapi2

    return dbapi2.connect(str(path))


def _sqlite_row_counts(path: Path, scope: ScopeRef) -> dict[str, int]:
    conn = _sqlite_raw(path)
    try:
        tables = [
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        counts: dict[str, int] = {}
        for table in tables:
            columns = {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}
            if {"enterprise_id", "scope_id"} <= columns:
                (count,) = conn.execute(
                    f'SELECT count(*) FROM "{table}" WHERE enterprise_id = ? AND scope_id = ?',
                    (scope.enterprise_id, scope.scope_id),
                ).fetchone()
                counts[table] = int(count)
        return counts
    finally:
        conn.close()


def _spanner_row_counts(database: Any, scope: ScopeRef) -> dict[str, int]:
    from google.cloud.spanner_v1 import param_types

    with database.snapshot(multi_use=True) as snapshot:
        tables = [
            row[0]
            for row in snapshot.execute_sql(
                "SELECT TABLE_NAME FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = ''"
                " AND COLUMN_NAME IN ('enterprise_id', 'scope_id')"
                " GROUP BY TABLE_NAME HAVING COUNT(*) = 2",
                timeout=30,
            )
        ]
        counts: dict[str, int] = {}
        for table in tables:
            rows = list(
                snapshot.execute_sql(
                    f"SELECT COUNT(*) FROM `{table}` WHERE enterprise_id = @e AND scope_id = @s",
                    params={"e": scope.enterprise_id, "s": scope.scope_id},
                    param_types={"e": param_types.STRING, "s": param_types.STRING},
                    timeout=30,
                )
            )
            counts[table] = int(rows[0][0])
    return counts
