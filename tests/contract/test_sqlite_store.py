"""SQLite-only checks: the schema, the keyword index, ledgers read back with raw SQL,
and the in-process vector index (exactness, coherence across connections, threads)."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from jennah.adapters.sqlite import schema
from jennah.adapters.sqlite.connection import MMAP_BYTES, open_connection
from jennah.adapters.sqlite.store import SqliteStore
from jennah.adapters.sqlite.vector_index import IndexRow, ScopeIndex
from jennah.domain import rules
from jennah.domain.claim_state import ClaimState
from jennah.domain.models import (
    BriefVariant,
    ClaimUpdate,
    CommitPlan,
    FilterOperator,
    MemoryRecord,
    MetadataFilter,
    ScopeRecord,
    ScopeRef,
    Status,
    StoredBrief,
    Supersession,
)
from jennah.domain.suppression import Suppression
from jennah.errors import FailedPrecondition, InvalidArgument, NotFound
from jennah.services.commands import ChunkInput, SupersessionInput
from tests.contract.conftest import (
    EMBEDDER,
    NOW,
    at,
    chunk_id,
    commit_items,
    new_scope,
    search_ids,
)
from tests.contract.test_ledger_contract import formation_plan


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SqliteStore]:
    store = SqliteStore(tmp_path / "memory.db")
    yield store
    store.close()


def test_schema_is_versioned_and_reopening_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "memory.db"
    SqliteStore(path).close()
    store = SqliteStore(path)
    conn = open_connection(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {
        "memory_records", "evidence", "memory_links", "graph_nodes", "graph_edges",
        "execution_log_steps", "formation_keys", "memory_records_text",
    } <= tables  # fmt: skip
    conn.close()
    store.close()


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    conn = open_connection(path)
    conn.execute(f"PRAGMA user_version = {schema.SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(FailedPrecondition, match="schema version"):
        SqliteStore(path)


def test_ledgers_read_back(sqlite_store: SqliteStore) -> None:
    scope = new_scope()
    result = sqlite_store.apply(formation_plan(scope))
    conn = open_connection(sqlite_store.path)
    keys = (scope.enterprise_id, scope.scope_id)
    first, second = chunk_id("Ana moved to Lisbon"), chunk_id("Ana lives in Lisbon")
    evidence = conn.execute(
        "SELECT id, ref, quote, recorded_at FROM evidence WHERE enterprise_id=? AND scope_id=?",
        keys,
    ).fetchall()
    assert [tuple(row) for row in evidence] == [
        (first, "step-1#0", "I moved to Lisbon", _micros(at(2026, 3, 4)))
    ]
    links = conn.execute(
        "SELECT source_id, target_id, created_at FROM memory_links "
        "WHERE enterprise_id=? AND scope_id=?",
        keys,
    ).fetchall()
    assert [tuple(row) for row in links] == [(first, second, _micros(result.commit_timestamp))]
    key = conn.execute(
        "SELECT formation_key, fingerprint, receipt_json, committed_at FROM formation_keys "
        "WHERE enterprise_id=? AND scope_id=?",
        keys,
    ).fetchall()
    assert [tuple(row) for row in key] == [
        ("conversation-1", "fp-1", '{"ok": true}', _micros(result.commit_timestamp))
    ]
    conn.close()


def _micros(value: datetime) -> int:
    return (value - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def test_connections_read_through_a_memory_map(sqlite_store: SqliteStore) -> None:
    """Pooled readers and the writer map the file (MMAP_BYTES), not read() it page by page."""
    with sqlite_store._pool.connection() as conn:
        assert conn.execute("PRAGMA mmap_size").fetchone()[0] == MMAP_BYTES
    assert sqlite_store._writer.execute("PRAGMA mmap_size").fetchone()[0] == MMAP_BYTES


def test_keyword_index_follows_writes(sqlite_store: SqliteStore) -> None:
    scope, other = new_scope(), new_scope()
    commit_items(sqlite_store, scope, chunks=[ChunkInput(text="Ana adopted a greyhound")])
    commit_items(sqlite_store, scope, chunks=[ChunkInput(text="Ana adopted a greyhound")])
    commit_items(sqlite_store, other, chunks=[ChunkInput(text="greyhounds elsewhere")])
    conn = open_connection(sqlite_store.path)
    rows = conn.execute(
        "SELECT r.id FROM memory_records_text AS t JOIN memory_records AS r "
        "ON r.row_id = t.rowid WHERE memory_records_text MATCH ? "
        "AND r.enterprise_id = ? AND r.scope_id = ?",
        ("greyhound", scope.enterprise_id, scope.scope_id),
    ).fetchall()
    assert [row[0] for row in rows] == [chunk_id("Ana adopted a greyhound")]
    conn.close()


def test_records_read_back_are_what_validating_the_row_would_give(
    sqlite_store: SqliteStore,
) -> None:
    # rows are built into MemoryRecords without validation (they were validated when
    # written): every field must still have the type validation would give it
    scope = new_scope()
    result = commit_items(sqlite_store, scope, chunks=[ChunkInput(text="typed", metadata={})])
    (read,) = sqlite_store.get_chunks(scope, result.chunk_ids)
    validated = MemoryRecord.model_validate(read.model_dump())
    assert read == validated
    for name in MemoryRecord.model_fields:
        assert type(getattr(read, name)) is type(getattr(validated, name)), name
    assert type(read.scope.enterprise_id) is str and read.scope == scope


def test_wrong_dimensions_are_invalid(sqlite_store: SqliteStore) -> None:
    scope = new_scope()
    with pytest.raises(InvalidArgument, match="384"):
        sqlite_store.search_chunks(scope, [0.1, 0.2], 10, [], NOW)
    bad = MemoryRecord(id="x", scope=scope, text="x", embedding=[1.0, 0.0])
    with pytest.raises(InvalidArgument, match="384"):
        sqlite_store.apply(CommitPlan(scope=scope, chunks=[bad]))


def test_commit_timestamps_increase_when_the_clock_stands_still(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "memory.db", clock=lambda: NOW)
    scope = new_scope()
    stamps = [
        store.apply(CommitPlan(scope=scope, chunks=[_record(scope, i)])).commit_timestamp
        for i in range(3)
    ]
    assert stamps == [NOW, NOW + timedelta(microseconds=1), NOW + timedelta(microseconds=2)]
    store.close()


# -- the vector index ---------------------------------------------------------------


def _record(
    scope: ScopeRef,
    i: int,
    vector: list[float] | None = None,
    metadata: dict[str, str] | None = None,
    valid_at: datetime | None = None,
) -> MemoryRecord:
    return MemoryRecord(
        id=f"rec-{i:05d}",
        scope=scope,
        text=f"record {i}",
        metadata=metadata or {},
        valid_at=valid_at,
        embedding=vector if vector is not None else EMBEDDER.embed(f"record {i}"),
    )


def _random_scope(store: SqliteStore, rng: random.Random, size: int) -> ScopeRef:
    """Random unit vectors (some duplicated, for ties), metadata, windows and supersessions."""
    scope = new_scope()
    nprng = np.random.default_rng(rng.randrange(1 << 30))
    vectors = nprng.normal(size=(size, 384))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    records = []
    for i in range(size):
        vector = vectors[i // 7 * 7] if i % 5 == 0 else vectors[i]  # duplicates tie exactly
        metadata = {}
        if rng.random() < 0.8:
            metadata["colour"] = rng.choice(["red", "green", "blue"])
        if rng.random() < 0.5:
            metadata["size"] = rng.choice(["s", "m"])
        valid_at = at(2020 + rng.randrange(6)) if rng.random() < 0.5 else None
        records.append(_record(scope, i, vector.tolist(), metadata, valid_at))
    store.apply(CommitPlan(scope=scope, chunks=records))
    supersessions = [
        Supersession(target_id=r.id, invalid_at=at(2026), superseded_by=f"next-{r.id}")
        for r in records
        if rng.random() < 0.2
    ]
    store.apply(CommitPlan(scope=scope, chunk_supersessions=supersessions))
    return scope


def _random_filters(rng: random.Random) -> list[MetadataFilter]:
    choices = [
        [],
        [MetadataFilter(key="colour", values=["red"])],
        [MetadataFilter(key="colour", operator=FilterOperator.NOT_EQUALS, values=["red"])],
        [MetadataFilter(key="colour", operator=FilterOperator.IN, values=["red", "blue"])],
        [
            MetadataFilter(key="colour", operator=FilterOperator.IN, values=["green", "blue"]),
            MetadataFilter(key="size", operator=FilterOperator.NOT_EQUALS, values=["m"]),
        ],
        [MetadataFilter(key="size", values=["s"]), MetadataFilter(key="colour", values=["red"])],
    ]
    return rng.choice(choices)


def _brute_force(
    rows: list[MemoryRecord],
    query: np.typing.NDArray[np.float64],
    top_k: int,
    filters: list[MetadataFilter],
    as_of: datetime,
) -> list[str]:
    hits = []
    for row in rows:
        if not rules.is_valid_at(row.valid_at, row.invalid_at, row.retired_at, as_of):
            continue
        if not all(rules.matches_filter(row.metadata, f) for f in filters):
            continue
        vector = np.asarray(row.embedding, dtype=np.float64)
        hits.append((-float(vector @ query / np.linalg.norm(vector)), row.id))
    return [record_id for _, record_id in sorted(hits)[:top_k]]


def test_index_answers_exactly_like_a_scan(tmp_path: Path) -> None:
    """Index search == sqlite-vec SQL scan (budget 0 forces it) == float64 brute force."""
    rng = random.Random(7)
    indexed = SqliteStore(tmp_path / "memory.db")
    scanned = SqliteStore(tmp_path / "memory.db", index_budget_rows=0)
    scope = _random_scope(indexed, rng, 1500)
    rows = indexed.list_chunks(scope, None, 100_000, 0)
    for _ in range(40):
        query = np.random.default_rng(rng.randrange(1 << 30)).normal(size=384)
        query /= np.linalg.norm(query)
        if rng.random() < 0.3:  # ask for an exact duplicate: ties broken by id
            query = np.asarray(indexed.get_chunks(scope, ["rec-00000"])[0].embedding)
        top_k, filters = rng.choice([1, 5, 10, 50]), _random_filters(rng)
        as_of = rng.choice([NOW, at(2022), at(2025, 6)])
        expected = _brute_force(rows, query, top_k, filters, as_of)
        for store in (indexed, scanned):
            hits = store.search_chunks(scope, query.tolist(), top_k, filters, as_of)
            assert [h.record.id for h in hits] == expected
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    indexed.close()
    scanned.close()


def test_index_sees_writes_from_another_connection(tmp_path: Path) -> None:
    reader_store = SqliteStore(tmp_path / "memory.db")
    writer_store = SqliteStore(tmp_path / "memory.db")
    scope = new_scope()
    commit_items(writer_store, scope, chunks=[ChunkInput(text="apples", valid_at=at(2024))])
    assert search_ids(reader_store, scope, "apples") == [chunk_id("apples", at(2024))]
    commit_items(
        writer_store,
        scope,
        chunks=[ChunkInput(text="apples and pears", metadata={"k": "v"})],
        supersessions=[
            SupersessionInput(
                chunk_id=chunk_id("apples", at(2024)),
                replacement_chunk=ChunkInput(text="apples again", valid_at=at(2025)),
            )
        ],
    )
    assert set(search_ids(reader_store, scope, "apples")) == {
        chunk_id("apples and pears"),
        chunk_id("apples again", at(2025)),
    }
    kv = [MetadataFilter(key="k", values=["v"])]
    assert search_ids(reader_store, scope, "apples", filters=kv) == [chunk_id("apples and pears")]
    commit_items(writer_store, scope, chunks=[ChunkInput(text="apples and pears")])
    assert search_ids(reader_store, scope, "apples", filters=kv) == []
    reader_store.close()
    writer_store.close()


def test_a_failed_commit_leaves_the_index_untouched(sqlite_store: SqliteStore) -> None:
    scope = new_scope()
    commit_items(sqlite_store, scope, chunks=[ChunkInput(text="kept")])
    assert search_ids(sqlite_store, scope, "kept") == [chunk_id("kept")]
    with pytest.raises(NotFound):
        sqlite_store.apply(
            CommitPlan(
                scope=scope,
                chunks=[_record(scope, 1, EMBEDDER.embed("kept"))],
                chunk_supersessions=[
                    Supersession(target_id="nope", invalid_at=NOW, superseded_by="x")
                ],
            )
        )
    assert search_ids(sqlite_store, scope, "kept") == [chunk_id("kept")]


def test_lru_eviction_keeps_answers_right(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "memory.db", index_budget_rows=3)
    scopes = [new_scope() for _ in range(3)]
    for i, scope in enumerate(scopes):
        commit_items(store, scope, chunks=[ChunkInput(text=f"w{i} x"), ChunkInput(text="y")])
    for _ in range(2):
        for i, scope in enumerate(scopes):
            assert search_ids(store, scope, f"w{i}", top_k=1) == [chunk_id(f"w{i} x")]
    store.close()


def test_concurrent_commits_and_searches(sqlite_store: SqliteStore) -> None:
    scope = new_scope()
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            for i in range(15):
                commit_items(sqlite_store, scope, chunks=[ChunkInput(text=f"w{worker} n{i}")])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def read() -> None:
        try:
            for _ in range(30):
                search_ids(sqlite_store, scope, "w0 n1")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(3)]
    threads += [threading.Thread(target=read) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(sqlite_store.list_chunks(scope, None, 1000, 0)) == 45
    assert len(search_ids(sqlite_store, scope, "n1", top_k=100)) == 45


def test_the_word_search_matches_stemmed_words(sqlite_store: SqliteStore) -> None:
    scope = new_scope()
    commit_items(sqlite_store, scope, chunks=[ChunkInput(text="Ana adopted two greyhounds")])
    hits = sqlite_store.search_words(scope, ["adopting", "greyhound"], 10, [], NOW)
    assert [hit.record.text for hit in hits] == ["Ana adopted two greyhounds"]


def test_a_version_2_file_gets_its_trigram_index_built(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store = SqliteStore(path)
    scope = new_scope()
    commit_items(store, scope, chunks=[ChunkInput(text="the tea ceremony history")])
    store.close()
    conn = open_connection(path)  # back to version 2: no trigram index, no triggers for it
    conn.execute("DROP TRIGGER memory_records_after_insert")
    conn.execute("DROP TABLE memory_records_trigrams")
    conn.execute("PRAGMA user_version = 2")
    conn.close()
    store = SqliteStore(path)
    hits = store.search_words(scope, ["ceremonei"], 10, [], NOW, fuzzy=True)  # a typo
    assert [hit.record.text for hit in hits] == ["the tea ceremony history"]
    commit_items(store, scope, chunks=[ChunkInput(text="a ceremonial dinner")])
    hits = store.search_words(scope, ["ceremonei"], 10, [], NOW, fuzzy=True)  # a typo
    assert len(hits) == 2  # and the triggers keep it in step again
    store.close()


def test_warming_at_start_spares_the_first_query_its_index_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `jnh serve` warms the store at start (Container.warm): the first query after a
    # restart must find the scope's vector index built, not build it (counted, not timed)
    path = tmp_path / "memory.db"
    store = SqliteStore(path, index_budget_rows=5)
    big, small, too_big = new_scope(), new_scope(), new_scope()
    commit_items(store, big, chunks=[ChunkInput(text=f"big {i}") for i in range(3)])
    commit_items(store, small, chunks=[ChunkInput(text="small")])
    commit_items(store, too_big, chunks=[ChunkInput(text=f"huge {i}") for i in range(6)])
    store.close()
    builds: list[int] = []
    real_build = ScopeIndex.build.__func__  # type: ignore[attr-defined]

    def counted(cls: type[ScopeIndex], generation: int, rows: list[IndexRow]) -> ScopeIndex:
        builds.append(len(rows))
        return real_build(cls, generation, rows)  # type: ignore[no-any-return]

    monkeypatch.setattr(ScopeIndex, "build", classmethod(counted))
    store = SqliteStore(path, index_budget_rows=5)
    assert store.warm_indexes() == 2  # largest first, within the budget; 6 rows are scanned
    assert builds == [3, 1]
    assert search_ids(store, big, "big 1", top_k=1) == [chunk_id("big 1")]
    assert search_ids(store, small, "small", top_k=1) == [chunk_id("small")]
    assert search_ids(store, too_big, "huge 2", top_k=1) == [chunk_id("huge 2")]
    assert builds == [3, 1]  # the first queries built nothing
    store.close()


def test_records_read_back_can_be_changed_one_by_one(sqlite_store: SqliteStore) -> None:
    scope = new_scope()
    result = commit_items(sqlite_store, scope, chunks=[ChunkInput(text="a"), ChunkInput(text="b")])
    first, second = sqlite_store.get_chunks(scope, result.chunk_ids)
    first.summary = "changed"
    assert second.summary == "" and "summary" in first.model_fields_set


def test_a_version_3_file_gets_the_search_index_and_its_searches_use_it(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store = SqliteStore(path)
    scope = new_scope()
    commit_items(store, scope, chunks=[ChunkInput(text="the tea ceremony history")])
    store.close()
    conn = open_connection(path)  # back to version 3: no memory_records_for_search
    conn.execute("DROP INDEX memory_records_for_search")
    conn.execute("PRAGMA user_version = 3")
    conn.close()
    store = SqliteStore(path)
    hits = store.search_words(scope, ["ceremony"], 10, [], NOW)
    assert [hit.record.text for hit in hits] == ["the tea ceremony history"]
    store.close()
    conn = open_connection(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION
    plan = " ".join(
        str(row[3])
        for row in conn.execute(
            "EXPLAIN QUERY PLAN SELECT r.id FROM memory_records_text CROSS JOIN "
            "memory_records AS r INDEXED BY memory_records_for_search "
            "ON r.row_id = memory_records_text.rowid WHERE memory_records_text MATCH 'tea'"
        )
    )
    assert "COVERING INDEX memory_records_for_search" in plan
    conn.close()


def test_a_version_4_file_gets_the_claim_columns_and_tables(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store = SqliteStore(path)
    scope = new_scope()
    store.apply(CommitPlan(scope=scope, registration=ScopeRecord(scope=scope, kind="agent")))
    commit_items(store, scope, chunks=[ChunkInput(text="the tea ceremony history")])
    store.close()
    conn = open_connection(path)  # back to version 4: no claim columns, tables or status
    conn.execute("DROP TRIGGER memory_records_after_insert_applies_to")
    conn.execute("DROP TRIGGER memory_records_after_applies_to_update")
    conn.execute("DROP TRIGGER memory_records_after_delete")
    conn.execute("DROP TABLE claim_applies_to")
    for table, column in [
        ("memory_records", "applies_to"), ("memory_records", "related"),
        ("memory_records", "needs_enrichment"), ("memory_records", "extensions"),
        ("scopes", "time_zone"),
    ]:  # fmt: skip
        conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    conn.execute("DROP TABLE briefs")
    conn.execute("DROP TABLE change_log")
    conn.execute("DROP INDEX memory_records_for_search")
    conn.execute(
        "CREATE INDEX memory_records_for_search ON memory_records "
        "(row_id, enterprise_id, scope_id, id, retired_at, valid_at, invalid_at)"
    )
    conn.execute("PRAGMA user_version = 4")
    conn.close()

    store = SqliteStore(path)
    (record,) = store.list_claims(scope, None, None, 10)
    assert (record.applies_to, record.related, record.extensions) == ([], [], {})
    assert record.needs_enrichment is False
    registration = store.get_scope(scope)
    assert registration is not None and registration.time_zone == "UTC"
    claimed = record.model_copy(update={"applies_to": ["tea"], "extensions": {"x": "1"}})
    brief = StoredBrief(variant=BriefVariant.FULL, text="# Brief", token_count=2)
    store.apply(CommitPlan(scope=scope, chunks=[claimed], briefs=[brief]))
    assert store.get_chunks(scope, [record.id])[0].applies_to == ["tea"]
    assert store.get_brief(scope, BriefVariant.FULL) is not None
    hits = store.search_words(scope, ["ceremony"], 10, [], NOW)
    assert [hit.record.extensions for hit in hits] == [{"x": "1"}]
    store.close()
    conn = open_connection(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION
    columns = [row[2] for row in conn.execute("PRAGMA index_info(memory_records_for_search)")]
    assert columns[-1] == "status"
    conn.close()


def test_a_vector_index_built_after_claims_were_hidden_leaves_them_out(tmp_path: Path) -> None:
    # built from the table (a restart, or another process's write), not kept in step
    path = tmp_path / "memory.db"
    writer_store, scope = SqliteStore(path), new_scope()
    result = commit_items(
        writer_store,
        scope,
        chunks=[ChunkInput(text="Ana plays chess"), ChunkInput(text="Ana chess")],
    )
    shown, hidden = result.chunk_ids
    reader_store = SqliteStore(path)
    assert len(search_ids(reader_store, scope, "Ana chess")) == 2  # its index, built now
    update = ClaimUpdate(memory_id=hidden, expected_revision=1, status=Status.DORMANT)
    writer_store.apply(CommitPlan(scope=scope, claim_updates=[update]))

    assert search_ids(reader_store, scope, "Ana chess") == [shown]  # rebuilt: newer generation
    assert search_ids(SqliteStore(path), scope, "Ana chess") == [shown]  # built at opening
    assert search_ids(writer_store, scope, "Ana chess") == [shown]


def test_claim_states_follow_every_write(tmp_path: Path) -> None:
    # list_claim_states answers from an in-process cache: it must follow this store's
    # commits (updated in place), another connection's, and a destroy
    path = tmp_path / "memory.db"
    store, other, scope = SqliteStore(path), SqliteStore(path), new_scope()
    first = commit_items(store, scope, chunks=[ChunkInput(text="Ana plays chess")]).chunk_ids[0]
    (listed,) = store.list_claim_states(scope, None)
    (stored,) = store.get_chunks(scope, [first])
    assert listed == ClaimState.of(stored)
    assert store.list_claim_states(scope, None)[0] is listed  # unchanged: the same object

    update = ClaimUpdate(memory_id=first, expected_revision=1, status=Status.DORMANT)
    store.apply(CommitPlan(scope=scope, claim_updates=[update]))  # this store's commit
    (dormant,) = store.list_claim_states(scope, None)
    assert (dormant.status, dormant.revision) == (Status.DORMANT, 2)
    second = commit_items(other, scope, chunks=[ChunkInput(text="Ana reads")]).chunk_ids[0]
    assert [s.id for s in store.list_claim_states(scope, None)] == sorted([first, second])
    assert [s.id for s in store.list_claim_states(scope, [Status.ACTIVE])] == [second]

    other.destroy_scope(scope)
    assert store.list_claim_states(scope, None) == []
    store.close()
    other.close()


def test_a_scope_over_the_claim_cache_budget_is_listed_from_the_table(tmp_path: Path) -> None:
    store, scope = SqliteStore(tmp_path / "memory.db", claim_cache_rows=2), new_scope()
    chunks = [ChunkInput(text=f"Ana fact {n}") for n in range(3)]
    ids = sorted(commit_items(store, scope, chunks=chunks).chunk_ids)
    assert [s.id for s in store.list_claim_states(scope, None)] == ids
    update = ClaimUpdate(memory_id=ids[0], expected_revision=1, status=Status.DORMANT)
    store.apply(CommitPlan(scope=scope, claim_updates=[update]))
    assert [s.id for s in store.list_claim_states(scope, [Status.ACTIVE])] == ids[1:]
    assert [r.id for r in store.list_claims(scope, None, ids[0], 1)] == ids[1:2]
    store.close()


def test_a_version_5_file_gets_the_suppressions_table(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store = SqliteStore(path)
    scope = new_scope()
    commit_items(store, scope, chunks=[ChunkInput(text="Ana is allergic to peanuts")])
    store.close()
    conn = open_connection(path)  # back to version 5: no suppression rules
    conn.execute("DROP TABLE suppressions")
    conn.execute("PRAGMA user_version = 5")
    conn.close()

    store = SqliteStore(path)
    assert store.list_suppressions(scope, None, 10) == []
    rule = Suppression(id="sup_0123456789abcdef", memory_id="c-1", text="Ana is allergic")
    store.apply(CommitPlan(scope=scope, suppressions=[rule]))
    assert [r.id for r in store.list_suppressions(scope, None, 10)] == [rule.id]
    assert len(store.list_claims(scope, None, None, 10)) == 1
    store.close()
    conn = open_connection(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION == 8
    conn.close()


def _row_ranges(path: Path) -> dict[str, list[tuple[int, int]]]:
    """Each scope's (row id, scope number) pairs, by scope id."""
    conn = open_connection(path)
    try:
        found: dict[str, list[tuple[int, int]]] = {}
        for scope_id, row_id, ordinal in conn.execute(
            "SELECT r.scope_id, r.row_id, o.ordinal FROM memory_records AS r "
            "LEFT JOIN scope_ordinals AS o USING (enterprise_id, scope_id) ORDER BY r.row_id"
        ):
            found.setdefault(scope_id, []).append((row_id, ordinal))
        return found
    finally:
        conn.close()


def _in_own_range(pairs: list[tuple[int, int]]) -> bool:
    return all(
        ordinal is not None
        and ordinal * schema.ROW_RANGE < row_id < (ordinal + 1) * schema.ROW_RANGE
        for row_id, ordinal in pairs
    )


def _fts_intact(path: Path) -> None:
    conn = open_connection(path)
    try:
        for index in ("memory_records_text", "memory_records_trigrams"):
            conn.execute(f"INSERT INTO {index} ({index}, rank) VALUES ('integrity-check', 1)")
    finally:
        conn.close()


def test_each_scopes_rows_take_row_ids_of_its_own_range_even_after_a_destroy(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memory.db"
    store = SqliteStore(path)
    a, b = new_scope(), new_scope()
    for i in range(3):  # interleaved writes
        commit_items(store, a, chunks=[ChunkInput(text=f"Ana's tea ceremony {i}")])
        commit_items(store, b, chunks=[ChunkInput(text=f"Bo's tea ceremony {i}")])
    commit_items(store, a, chunks=[ChunkInput(text="Ana's tea ceremony 0")])  # a replace
    ranges = _row_ranges(path)
    assert [len(ranges[a.scope_id]), len(ranges[b.scope_id])] == [3, 3]
    assert _in_own_range(ranges[a.scope_id]) and _in_own_range(ranges[b.scope_id])
    assert {o for _, o in ranges[a.scope_id]} != {o for _, o in ranges[b.scope_id]}
    store.destroy_scope(a)
    commit_items(store, a, chunks=[ChunkInput(text="Ana again")])
    ranges = _row_ranges(path)
    assert len(ranges[a.scope_id]) == 1 and _in_own_range(ranges[a.scope_id])
    assert sorted(hit.record.text for hit in store.search_words(b, ["tea"], 10, [], NOW)) == [
        f"Bo's tea ceremony {i}" for i in range(3)
    ]
    store.close()
    _fts_intact(path)


def _as_version_7(path: Path) -> None:
    """Back to version 7: row ids 1, 2, ... in the order the rows were written (scopes
    interleaved), no scope numbers, the FTS5 indexes rebuilt on those ids."""
    conn = open_connection(path)
    conn.execute("BEGIN")
    written = conn.execute("SELECT row_id FROM memory_records ORDER BY created_at, row_id")
    for new_id, (row_id,) in enumerate(list(written), start=1):
        conn.execute("UPDATE memory_records SET row_id = ? WHERE row_id = ?", (new_id, row_id))
    conn.execute("DROP TABLE scope_ordinals")
    for index in ("memory_records_text", "memory_records_trigrams"):
        conn.execute(f"INSERT INTO {index} ({index}) VALUES ('rebuild')")
    conn.execute("PRAGMA user_version = 7")
    conn.execute("COMMIT")
    conn.close()


def test_a_version_7_file_moves_each_scopes_rows_into_a_range_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store = SqliteStore(path)
    a, b = new_scope(), new_scope()
    for i in range(3):
        commit_items(store, b, chunks=[ChunkInput(text=f"Bo's tea ceremony {i}")])
        commit_items(store, a, chunks=[ChunkInput(text=f"Ana's tea ceremony {i}")])
    store.close()
    _as_version_7(path)
    conn = open_connection(path)
    old = conn.execute(
        "SELECT row_id FROM memory_records WHERE scope_id = ? ORDER BY row_id", (b.scope_id,)
    )
    assert [row_id for (row_id,) in old] == [1, 3, 5]
    conn.close()

    store = SqliteStore(path)
    ranges = _row_ranges(path)
    assert [row_id % schema.ROW_RANGE for row_id, _ in ranges[b.scope_id]] == [1, 3, 5]
    assert {o for _, o in ranges[b.scope_id]} == {1}  # numbered by their first row
    assert {o for _, o in ranges[a.scope_id]} == {2} and _in_own_range(ranges[a.scope_id])
    texts = [f"Ana's tea ceremony {i}" for i in range(3)]
    found = store.search_words(a, ["ceremony"], 10, [], NOW)
    assert sorted(hit.record.text for hit in found) == texts
    typo = store.search_words(a, ["ceremonei"], 10, [], NOW, fuzzy=True)
    assert sorted(hit.record.text for hit in typo) == texts
    commit_items(store, a, chunks=[ChunkInput(text="Ana's tea ceremony 3")])
    assert len(store.search_words(a, ["ceremony"], 10, [], NOW)) == 4
    store.close()
    assert _in_own_range(_row_ranges(path)[a.scope_id])
    _fts_intact(path)
    conn = open_connection(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION
    conn.close()
