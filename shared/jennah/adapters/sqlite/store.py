"""The embedded memory store: one SQLite file, sqlite-vec embeddings, FTS5 text.

Writes go through one writer connection, serialized by a lock inside the
process and by BEGIN IMMEDIATE across processes; a whole CommitPlan is one
transaction. Reads use pooled connections (WAL: readers never block the
writer). Semantic search runs on an exact in-process numpy index per scope,
see `vector_index.py` for why and how it stays coherent.
`list_claim_states` (the lifecycle pass's and the brief's read) answers from an
in-process cache of scopes' claim states kept coherent the same way (`claim_cache.py`).

The scope registry is the `scopes` table, written by the commit that first
writes a scope. Destroying a scope deletes from every table of
`schema.SCOPED_TABLES` in one transaction and drops the scope's index.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from jennah.adapters.sqlite import codec, reader, writer
from jennah.adapters.sqlite.claim_cache import ClaimCache, ScopeClaims
from jennah.adapters.sqlite.connection import (
    ConnectionPool,
    IntegrityError,
    OperationalError,
    open_connection,
    read_transaction,
    write_lock,
)
from jennah.adapters.sqlite.keyed import SqliteKeyedMemories, ensure_tables
from jennah.adapters.sqlite.schema import ensure_schema
from jennah.adapters.sqlite.vector_index import IndexCache, IndexEntry, ScopeIndex
from jennah.domain import rules
from jennah.domain.card import CardKey, ClaimFilter
from jennah.domain.claim_state import ClaimState
from jennah.domain.models import (
    BriefVariant,
    ChangeLogEntry,
    CommitPlan,
    CommitResult,
    Direction,
    Evidence,
    ExecutionLogStep,
    FormationKeyRecord,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    MetadataFilter,
    ScopeRecord,
    ScopeRef,
    ScoredRecord,
    Status,
    StoredBrief,
)
from jennah.domain.retrieval import trigrams
from jennah.domain.suppression import Suppression
from jennah.errors import Aborted, AlreadyExists, InvalidArgument, NotFound

if TYPE_CHECKING:
    from sqlite3 import Connection

# Rows of all scopes' in-memory indexes together (~1.5 KB each). A scope larger
# than this is searched with an exact sqlite-vec scan in SQL instead.
DEFAULT_INDEX_BUDGET_ROWS = 500_000
# Claims (ClaimStates, ~1 KB each in memory with their words) of all scopes' claim
# caches together; a larger scope's list_claim_states reads the table.
DEFAULT_CLAIM_CACHE_ROWS = 50_000


def _utc_now() -> datetime:
    return datetime.now(UTC)


class SqliteStore(SqliteKeyedMemories):
    """MemoryStore on a SQLite file (created with its schema if missing).

    Thread-safe. `clock` gives commit timestamps; they are kept strictly
    increasing across every process sharing the file.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Callable[[], datetime] = _utc_now,
        index_budget_rows: int = DEFAULT_INDEX_BUDGET_ROWS,
        claim_cache_rows: int = DEFAULT_CLAIM_CACHE_ROWS,
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._clock = clock
        self._writer = open_connection(self.path)
        ensure_schema(self._writer)
        ensure_tables(self._writer)  # keyed memory's own tables (adapters/sqlite/keyed.py)
        self._pool = ConnectionPool(self.path)
        self._write_lock = write_lock(self.path)  # the control stores on the file share it
        self._index_lock = threading.Lock()
        self._indexes = IndexCache(index_budget_rows)
        self._claims_lock = threading.Lock()
        self._claims = ClaimCache(claim_cache_rows)

    def close(self) -> None:
        with self._write_lock:
            self._pool.close()
            self._writer.close()

    # -- writes ---------------------------------------------------------------

    def apply(self, plan: CommitPlan) -> CommitResult:
        """Write the whole plan in ONE transaction, or nothing (see MemoryStore)."""
        rules.check_registration(plan)
        with self._write_lock, self._transaction() as conn:
            before, _ = reader.scope_generation(conn, plan.scope)
            result = writer.write_plan(conn, plan, self._commit_micros(conn))
            after, _ = reader.scope_generation(conn, plan.scope)
            touched = [c.id for c in plan.chunks]
            touched += [c.target_id for c in plan.chunk_supersessions]
            touched += [u.memory_id for u in plan.claim_updates]  # status, window
            entries: list[IndexEntry] | None = None  # None: not read back, drop the index
            if after != before and self._index_is_at(plan.scope, before):
                entries = reader.index_entries(conn, plan.scope, touched)
            claims: list[ClaimState] | None = None  # the same for the claim cache
            if after != before and self._claims_are_at(plan.scope, before):
                claims = reader.get_claim_states(conn, plan.scope, touched)
            with self._index_lock, self._claims_lock:
                conn.execute("COMMIT")
                self._indexes.after_commit(plan.scope, before, after, entries)
                self._claims.after_commit(plan.scope, before, after, claims)
        return result

    def destroy_scope(self, scope: ScopeRef) -> int:
        """Erase the scope's registration and every row of it in one transaction;
        returns the rows erased. The scope's in-process vector index goes with it."""
        with self._write_lock, self._transaction() as conn:
            erased = writer.destroy_scope(conn, scope)
            with self._index_lock, self._claims_lock:
                conn.execute("COMMIT")
                self._indexes.drop(scope)
                self._claims.drop(scope)
        return erased

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        conn = self._writer
        try:
            conn.execute("BEGIN IMMEDIATE")
        except OperationalError as exc:
            raise Aborted(
                f"the memory store is busy ({exc}); retry the commit", reason="STORE_BUSY"
            ) from exc
        try:
            yield conn
        except IntegrityError as exc:
            conn.execute("ROLLBACK")
            raise AlreadyExists(f"the commit conflicts with a stored row: {exc}") from exc
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def set_time_zone(self, scope: ScopeRef, time_zone: str) -> ScopeRecord:
        """Set a registered scope's time zone; NotFound when it is not registered."""
        with self._write_lock, self._transaction() as conn:
            updated = conn.execute(
                "UPDATE scopes SET time_zone = ? WHERE enterprise_id = ? AND scope_id = ?",
                (time_zone, scope.enterprise_id, scope.scope_id),
            ).rowcount
            record = reader.get_scope(conn, scope)
            conn.execute("COMMIT")
        if not updated or record is None:
            raise NotFound(
                f"scope {scope.scope_id} does not exist", metadata={"scopeId": scope.scope_id}
            )
        return record

    def _commit_micros(self, conn: Connection) -> int:
        """Now, or just after the last commit of any process, whichever is later (one
        statement: each one a writer issues holds the file's write lock a little longer)."""
        ((micros,),) = conn.execute(
            "INSERT INTO commit_clock (singleton, last_commit_us) VALUES (1, ?) "
            "ON CONFLICT (singleton) DO UPDATE "
            "SET last_commit_us = max(excluded.last_commit_us, last_commit_us + 1) "
            "RETURNING last_commit_us",
            (codec.required_micros(self._clock()),),
        ).fetchall()
        return int(micros)

    def _claims_are_at(self, scope: ScopeRef, generation: int) -> bool:
        with self._claims_lock:
            return self._claims.is_at(scope, generation)

    def _index_is_at(self, scope: ScopeRef, generation: int) -> bool:
        with self._index_lock:
            index = self._indexes.get(scope)
            return index is not None and index.generation == generation

    # -- semantic search --------------------------------------------------------

    def search_chunks(
        self,
        scope: ScopeRef,
        vector: Sequence[float],
        top_k: int,
        filters: Sequence[MetadataFilter],
        as_of: datetime,
    ) -> list[ScoredRecord]:
        """Nearest chunks valid at `as_of` matching every filter; best first, ties by id."""
        blob = codec.embedding_blob(vector, "vector")
        assert blob is not None
        if top_k < 1:
            raise InvalidArgument(f"topK must be at least 1; got {top_k}", field="topK")
        instant = codec.required_micros(as_of)
        with self._pool.connection() as conn:
            with self._index_lock:
                generation, count = reader.scope_generation(conn, scope)
                if count == 0:
                    return []
                if count > self._indexes.budget_rows:
                    ranked = reader.search_by_scan(conn, scope, blob, top_k, filters, instant)
                else:
                    index = self._index(conn, scope, generation)
                    ranked = self._search_index(conn, scope, index, vector, top_k, filters, instant)
            records = {r.id: r for r in reader.found_chunks(conn, scope, [i for i, _ in ranked])}
        return [
            ScoredRecord(record=records[record_id], score=score)
            for record_id, score in ranked
            if record_id in records
        ]

    def search_words(
        self,
        scope: ScopeRef,
        words: Sequence[str],
        limit: int,
        filters: Sequence[MetadataFilter],
        as_of: datetime,
        *,
        fuzzy: bool = False,
    ) -> list[ScoredRecord]:
        """Chunks valid at `as_of` matching every filter whose text holds one of `words`
        (Porter-stemmed FTS5), or with `fuzzy` holds two consecutive letter trigrams of
        one of the words (the trigram FTS5 index); best first by BM25, ties by id."""
        if limit < 1:
            return []
        instant = codec.required_micros(as_of)
        with self._pool.connection() as conn:
            if fuzzy:
                match = _trigram_match(words)
                if not match:
                    return []
                found = reader.search_text(
                    conn, scope, reader.TRIGRAM_INDEX, match, limit, filters, instant
                )
            else:
                phrases = _word_phrases(words)
                if not phrases:
                    return []
                # one snapshot: the row counts the bound is made of are FTS5's for its idf
                with read_transaction(conn):
                    found = reader.search_words(conn, scope, phrases, limit, filters, instant)
        return [ScoredRecord(record=record, score=score) for record, score in found]

    def held_words(
        self,
        scope: ScopeRef,
        words: Sequence[str],
        filters: Sequence[MetadataFilter],
        as_of: datetime,
    ) -> set[str]:
        """The `words` some chunk valid at `as_of`, shown and matching every filter holds
        as the word index reads it (Porter-stemmed)."""
        instant = codec.required_micros(as_of)
        with self._pool.connection() as conn:
            return reader.held_words(conn, scope, words, filters, instant)

    def warm_indexes(self) -> int:
        """Build the vector index of the scopes that fit the index budget now, largest
        first, so the first query of a large scope does not pay the build (`jnh serve`
        at start). Returns the scopes indexed."""
        warmed, rows = 0, 0
        with self._pool.connection() as conn:
            for scope, count in reader.scopes_by_size(conn):
                if rows + count > self._indexes.budget_rows:
                    continue
                with self._index_lock:  # one scope at a time: queries interleave
                    generation, count = reader.scope_generation(conn, scope)
                    if count > 0:
                        self._index(conn, scope, generation)
                        warmed, rows = warmed + 1, rows + count
        return warmed

    def _index(self, conn: Connection, scope: ScopeRef, generation: int) -> ScopeIndex:
        """The scope's index at `generation`, built from the table when missing or stale."""
        index = self._indexes.current(scope, generation)
        if index is None:
            index = ScopeIndex.build(generation, reader.index_rows(conn, scope))
            self._indexes.put(scope, index)
        return index

    def _search_index(
        self,
        conn: Connection,
        scope: ScopeRef,
        index: ScopeIndex,
        vector: Sequence[float],
        top_k: int,
        filters: Sequence[MetadataFilter],
        instant: int,
    ) -> list[tuple[str, float]]:
        allowed = index.valid_mask(instant)
        for flt in filters:
            if not index.has_column(flt.key):
                index.add_column(flt.key, reader.metadata_values(conn, scope, flt.key))
            allowed &= index.filter_mask(flt)
        return index.top_k(vector, top_k, allowed)

    # -- reads ----------------------------------------------------------------

    def get_chunks(self, scope: ScopeRef, ids: Sequence[str]) -> list[MemoryRecord]:
        """The named chunks that exist (any validity), in id order."""
        with self._pool.connection() as conn:
            return reader.get_chunks(conn, scope, ids)

    def list_chunks(
        self, scope: ScopeRef, as_of: datetime | None, limit: int, offset: int
    ) -> list[MemoryRecord]:
        """Chunks valid at `as_of` and not hidden (every row when None), ordered by id."""
        with self._pool.connection() as conn:
            return reader.list_chunks(conn, scope, codec.to_micros(as_of), limit, offset)

    def find_nodes(
        self, scope: ScopeRef, filters: Sequence[MetadataFilter], limit: int
    ) -> list[GraphNode]:
        """Nodes matching every filter on NodeId, Label or NodeType, by node id."""
        with self._pool.connection() as conn:
            return reader.find_nodes(conn, scope, filters, limit)

    def get_nodes(self, scope: ScopeRef, node_ids: Sequence[str]) -> list[GraphNode]:
        """The named nodes that exist, by node id."""
        with self._pool.connection() as conn:
            return reader.get_nodes(conn, scope, node_ids)

    def edges_touching(
        self,
        scope: ScopeRef,
        node_ids: Sequence[str],
        relations: Sequence[str],
        direction: Direction,
        as_of: datetime | None,
    ) -> list[GraphEdge]:
        """Edges leaving, entering or touching the nodes, valid at `as_of`, by edge id."""
        with self._pool.connection() as conn:
            return reader.edges_touching(
                conn, scope, node_ids, relations, direction, codec.to_micros(as_of)
            )

    def get_edges(self, scope: ScopeRef, edge_ids: Sequence[str]) -> list[GraphEdge]:
        """The named edges that exist (any validity), by edge id."""
        with self._pool.connection() as conn:
            return reader.get_edges(conn, scope, edge_ids)

    def get_step(self, scope: ScopeRef, step_id: str) -> ExecutionLogStep | None:
        with self._pool.connection() as conn:
            return reader.get_step(conn, scope, step_id)

    # -- the scope registry -----------------------------------------------------

    def get_scope(self, scope: ScopeRef) -> ScopeRecord | None:
        """The scope's registration, or None when never written or destroyed."""
        with self._pool.connection() as conn:
            return reader.get_scope(conn, scope)

    def list_scopes(
        self, enterprise_id: str, after: str | None = None, limit: int | None = None
    ) -> list[ScopeRecord]:
        """The enterprise's registered scopes by scope id (a page of them)."""
        with self._pool.connection() as conn:
            return reader.list_scopes(conn, enterprise_id, after, limit)

    def walk_scopes(self, after: ScopeRef | None, limit: int) -> list[ScopeRecord]:
        """Every enterprise's registered scopes by (enterprise id, scope id), a page."""
        with self._pool.connection() as conn:
            return reader.walk_scopes(conn, after, limit)

    # -- claims ---------------------------------------------------------------------

    def list_claims(
        self,
        scope: ScopeRef,
        statuses: Sequence[Status] | None,
        after: str | None,
        limit: int,
    ) -> list[MemoryRecord]:
        """The scope's claims of those statuses (all when None), any validity, by id;
        after `after`, at most `limit`; embeddings left out."""
        with self._pool.connection() as conn:
            return reader.list_claims(conn, scope, statuses, after, limit)

    def list_claim_states(
        self, scope: ScopeRef, statuses: Sequence[Status] | None
    ) -> list[ClaimState]:
        """The scope's claims of those statuses (all when None) as ClaimStates, by id.
        Answered from the claim cache (see `claim_cache.py`) unless the scope holds more
        than its budget."""
        with self._pool.connection() as conn, self._claims_lock:
            conn.execute("BEGIN")  # the generation and the rows, as of one moment
            try:
                generation, count = reader.scope_generation(conn, scope)
                if count > self._claims.budget_rows:
                    return reader.list_claim_states(conn, scope, statuses)
                cached = self._claims.current(scope, generation)
                if cached is None:
                    cached = ScopeClaims(generation, reader.list_claim_states(conn, scope, None))
                    self._claims.put(scope, cached)
            finally:
                conn.execute("COMMIT")
            return cached.select(statuses)

    def list_claims_page(
        self,
        scope: ScopeRef,
        claim_filter: ClaimFilter,
        after: CardKey | None,
        limit: int,
    ) -> list[MemoryRecord]:
        """The memory card's claims, newest first, a page (read through the index on
        created_at, never the claim cache: a page is a few rows)."""
        with self._pool.connection() as conn:
            return reader.list_claims_page(conn, scope, claim_filter, after, limit)

    def list_evidence(self, scope: ScopeRef, memory_ids: Sequence[str]) -> list[Evidence]:
        """The named claims' evidence lines by memory id, recorded_at, ref."""
        with self._pool.connection() as conn:
            return reader.list_evidence(conn, scope, memory_ids)

    def get_brief(self, scope: ScopeRef, variant: BriefVariant) -> StoredBrief | None:
        with self._pool.connection() as conn:
            return reader.get_brief(conn, scope, variant)

    def list_change_log(self, scope: ScopeRef, limit: int, offset: int = 0) -> list[ChangeLogEntry]:
        """The scope's change log, newest first, a page."""
        with self._pool.connection() as conn:
            return reader.list_change_log(conn, scope, limit, offset)

    def list_suppressions(
        self, scope: ScopeRef, after: str | None, limit: int
    ) -> list[Suppression]:
        """The scope's suppression rules by id, a page."""
        with self._pool.connection() as conn:
            return reader.list_suppressions(conn, scope, after, limit)

    # -- formation ----------------------------------------------------------------

    def find_chunks_by_content(
        self, scope: ScopeRef, content_hashes: Sequence[str], as_of: datetime | None
    ) -> list[MemoryRecord]:
        """Chunks with one of the content hashes, valid at `as_of` (all when None), by id."""
        with self._pool.connection() as conn:
            return reader.find_chunks_by_content(
                conn, scope, content_hashes, codec.to_micros(as_of)
            )

    def get_formation_key(self, scope: ScopeRef, formation_key: str) -> FormationKeyRecord | None:
        """The committed formation-key record, or None."""
        with self._pool.connection() as conn:
            return reader.get_formation_key(conn, scope, formation_key)


def _word_phrases(words: Sequence[str]) -> list[str]:
    """The distinct words as FTS5 strings (each stemmed by the index's tokenizer)."""
    return [reader.quoted(word) for word in dict.fromkeys(words) if word.strip()]


def _trigram_match(words: Sequence[str]) -> str:
    """Any two consecutive letter trigrams of any word: one typo in a word of four or
    more letters leaves such a pair (as Spanner's SEARCH_NGRAMS wants two n-grams)."""
    pairs: list[str] = []
    for word in dict.fromkeys(words):
        grams = trigrams(word)
        pairs.extend(
            f"({reader.quoted(a)} AND {reader.quoted(b)})" for a, b in itertools.pairwise(grams)
        )
    return " OR ".join(dict.fromkeys(pairs))
