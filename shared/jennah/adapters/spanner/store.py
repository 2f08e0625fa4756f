"""The memory store on Cloud Spanner (GoogleSQL dialect): the production system of record.

Writes go through `Database.run_in_transaction` with a transaction function
that only reads and buffers mutations, so Spanner may run it several times
(it retries on ABORTED). Every call has a time bound: a query that runs away,
or a Spanner (emulator) that falls over, fails the call with DEADLINE_EXCEEDED
or UNAVAILABLE instead of hanging the function. The client library alone does
not bound them: it restarts a streaming read after UNAVAILABLE without limit,
and its Commit RPC retries for up to an hour.

Semantic search is the exact `COSINE_DISTANCE` scan everywhere, the emulator
included; production may add the ANN index of `vector_index.sql`.

A plan's claim updates are checked against the revisions the transaction itself read
(or the plan's own chunk writes and supersessions left), never written blind: when two
plans update one claim at the same revision, Spanner aborts and reruns the later one,
whose rerun then finds the new revision and fails with REVISION_CHANGED. Evidence lines
are inserted only when their (memory, ref) is not stored yet. Hidden claims (domain
HIDDEN_STATUSES) are out of the searches and of `list_chunks` as of an instant.

Destroying a scope deletes its registration and every row of it with key-range
deletes in one transaction, as long as the scope holds at most
`destroy_rows_per_transaction` rows (interleaved evidence not counted): see
DESTROY_ROWS_PER_TRANSACTION for the mutation arithmetic. A larger scope is
first thinned by deleting rows in batches of that size, each batch its own
transaction, then the rest goes in one final transaction with the registration.
If that is interrupted, the scope stays registered with part of its rows gone;
destroying it again finishes the job.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import Enum
from typing import Any, TypeVar

from google.cloud.spanner_v1 import COMMIT_TIMESTAMP, KeyRange, KeySet, param_types
from pydantic import BaseModel

from jennah import errors
from jennah.adapters.spanner.calls import CallBound, bounded, utc
from jennah.adapters.spanner.keyed import SpannerKeyedMemories
from jennah.domain import rules
from jennah.domain.card import CardKey, ClaimFilter
from jennah.domain.claim_state import ClaimState
from jennah.domain.formation import SOURCE_STEP
from jennah.domain.models import (
    HIDDEN_STATUSES,
    Authority,
    BriefVariant,
    ChangeLogEntry,
    ClaimUpdate,
    CommitPlan,
    CommitResult,
    Direction,
    Durability,
    Evidence,
    ExecutionLogStep,
    FilterOperator,
    FormationKeyRecord,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    MemoryType,
    MetadataFilter,
    ScopeRecord,
    ScopeRef,
    ScoredRecord,
    Sensitivity,
    Status,
    StoredBrief,
    Strength,
    Supersession,
)
from jennah.domain.suppression import Suppression

RECORD_COLUMNS = (
    "id", "key", "revision", "content_hash", "text", "summary", "about", "when_to_use",
    "type", "metadata", "strength", "pin", "authority", "confidence", "sensitivity",
    "valid_at", "invalid_at", "valid_until", "created_at", "updated_at", "retired_at",
    "status", "supersedes", "superseded_by", "durability", "reinforcement_count",
    "last_reinforced_at", "applies_to", "related", "needs_enrichment", "extensions",
    "embedding",
)  # fmt: skip
# What a read of many claims selects: every column but the embedding.
CLAIM_COLUMNS = RECORD_COLUMNS[:-1]
# A ClaimState's columns, in its fields' order (its source step is read apart).
CLAIM_STATE_COLUMNS = (
    "id", "revision", "status", "type", "about", "summary", "text", "strength", "pin",
    "authority", "sensitivity", "durability", "reinforcement_count", "valid_at",
    "invalid_at", "valid_until", "retired_at", "created_at", "last_reinforced_at",
)  # fmt: skip
NODE_COLUMNS = ("node_id", "label", "node_type", "properties", "created_at", "updated_at")
EDGE_COLUMNS = (
    "edge_id", "source", "relation", "target", "properties", "valid_at", "invalid_at",
    "created_at", "retired_at", "supersedes", "superseded_by",
)  # fmt: skip
STEP_COLUMNS = ("step_id", "tool_input", "metadata", "created_at")
SCOPE_COLUMNS = ("kind", "created_at", "created_by", "time_zone")
EVIDENCE_COLUMNS = ("id", "ref", "quote", "recorded_at")
BRIEF_COLUMNS = ("variant", "text", "token_count", "expiries", "compiled_at")
CHANGE_COLUMNS = ("id", "day", "change", "from_value", "to_value", "recorded_at")
FORMATION_KEY_COLUMNS = ("formation_key", "fingerprint", "receipt_json", "committed_at")
SUPPRESSION_COLUMNS = (
    "id", "memory_id", "about", "summary", "text", "embedding", "created_at", "created_by",
)  # fmt: skip

# Every table keyed by (enterprise_id, scope_id), with the rest of its primary
# key, in the order a destroy deletes them: children first, the registry last.
SCOPED_TABLES: dict[str, tuple[str, ...]] = {
    "keyed_memory_links": ("source_key", "target_key"),  # keyed memory: spanner/keyed.py
    "keyed_memory_terms": ("key", "term"),
    "keyed_memories": ("key",),
    "evidence": ("id", "ref"),
    "briefs": ("variant",),
    "change_log": ("recorded_at", "id", "change"),
    "suppressions": ("id",),
    "memory_links": ("source_id", "target_id"),
    "memory_records": ("id",),
    "graph_nodes": ("node_id",),
    "graph_edges": ("edge_id",),
    "execution_log_steps": ("step_id",),
    "formation_keys": ("formation_key",),
    "scopes": (),
}
# Spanner refuses a commit of more than 80,000 mutations. A key-range delete
# counts 1 for the range plus 1 per secondary-index entry of each row it
# deletes; interleaved evidence goes with its memory record without counting
# (and has no index). A memory record has at most 4 index entries (content
# hash, key, the search index, and in production the vector index), a node or
# an edge 2, a link 1. So a transaction deleting at most 10,000 rows (evidence
# aside) stays under 40,000 + 8 mutations, half the limit.
DESTROY_ROWS_PER_TRANSACTION = 10_000
# What a large scope is thinned by first (evidence goes with its memory records).
_BATCHED_TABLES = tuple(t for t in SCOPED_TABLES if t not in {"evidence", "scopes"})

# Columns a create-or-replace never rewrites on an existing row: the validity
# window and lifecycle (only supersessions change them), the reinforcement (only claim
# updates change it) and the transaction time. A replace is the claim's next revision.
_KEPT_ON_REPLACE = frozenset(
    {
        "valid_at", "invalid_at", "superseded_by", "status", "retired_at", "created_at",
        "reinforcement_count", "last_reinforced_at",
    }
)  # fmt: skip
# Node filter keys and the columns they match.
NODE_FILTER_COLUMNS = {"NodeId": "node_id", "Label": "label", "NodeType": "node_type"}

_T = TypeVar("_T")
_M = TypeVar("_M", bound=BaseModel)
# How long past its bound a call may take to report its own error (UNAVAILABLE,
# a deadline) before we stop waiting for it.
_GRACE_SECONDS = 0.5

_SCOPE_SQL = "enterprise_id = @enterprise_id AND scope_id = @scope_id"
_VALID_AT_SQL = (
    "retired_at IS NULL AND (valid_at IS NULL OR valid_at <= @as_of)"
    " AND (invalid_at IS NULL OR invalid_at > @as_of)"
)
# Not hidden: out of every default read (domain HIDDEN_STATUSES).
_SHOWN_SQL = "status NOT IN ({})".format(
    ", ".join(f"'{status.value}'" for status in sorted(HIDDEN_STATUSES))
)


class SpannerStore(SpannerKeyedMemories):
    """MemoryStore on a Cloud Spanner database created from `schema.sql`.

    Every statement filters by the scope's enterprise and scope ids (the key
    prefix of every table). `timeout_seconds` bounds each read and the whole
    read-write transaction, retries included. Spanner errors surface as
    `jennah.errors` with the same canonical status.
    """

    def __init__(
        self,
        database: Any,
        *,
        timeout_seconds: float = 30.0,
        destroy_rows_per_transaction: int = DESTROY_ROWS_PER_TRANSACTION,
    ) -> None:
        self._database = database
        self._timeout = timeout_seconds
        self._destroy_rows = destroy_rows_per_transaction
        self._bound = CallBound.of(timeout_seconds)

    # writes

    def apply(self, plan: CommitPlan) -> CommitResult:
        rules.check_registration(plan)
        writer = _PlanWriter(plan, self._bound)
        written: _Written = self._bounded(
            "commit",
            lambda: self._database.run_in_transaction(writer.write, timeout_secs=self._timeout),
        )
        return CommitResult(
            commit_timestamp=utc(written.transaction.committed),
            chunks_written=len(plan.chunks),
            nodes_written=len(plan.nodes),
            edges_written=len(plan.edges),
            chunk_supersessions=written.chunk_supersessions,
            edge_supersessions=written.edge_supersessions,
            claims_updated=len(plan.claim_updates),
        )

    def destroy_scope(self, scope: ScopeRef) -> int:
        """Erase the scope's registration and every row of it; returns the rows erased.

        One transaction when the scope holds at most `destroy_rows_per_transaction`
        rows (evidence aside); a larger one is thinned in batches first (see the
        module docstring).
        """
        destroyer = _ScopeDestroyer(scope, self._bound, self._destroy_rows)
        erased = 0
        while True:
            step: _DestroyStep = self._bounded(
                "destroy scope",
                lambda: self._database.run_in_transaction(
                    destroyer.step, timeout_secs=self._timeout
                ),
            )
            erased += step.erased
            if step.done:
                return erased

    # the scope registry

    def get_scope(self, scope: ScopeRef) -> ScopeRecord | None:
        rows = self._read("scopes", SCOPE_COLUMNS, scope, [()])
        return _scope_record(scope, rows[0]) if rows else None

    def list_scopes(
        self, enterprise_id: str, after: str | None = None, limit: int | None = None
    ) -> list[ScopeRecord]:
        query = _Query()
        query.where(
            f"enterprise_id = {query.bind('enterprise_id', enterprise_id, param_types.STRING)}"
        )
        if after is not None:
            query.where(f"scope_id > {query.bind('after', after, param_types.STRING)}")
        page = "" if limit is None else f" LIMIT {query.bind('limit', limit, param_types.INT64)}"
        sql = (
            f"SELECT scope_id, {_select(SCOPE_COLUMNS)} FROM scopes"
            f" WHERE {query.conditions()} ORDER BY scope_id{page}"
        )
        return [
            _scope_record(ScopeRef(enterprise_id=enterprise_id, scope_id=row[0]), row[1:])
            for row in self._execute(query, sql, "list scopes")
        ]

    def set_time_zone(self, scope: ScopeRef, time_zone: str) -> ScopeRecord:
        """Set a registered scope's time zone (read and written in one transaction);
        NotFound when it is not registered."""

        def update(txn: Any) -> ScopeRecord:
            rows = list(
                txn.read("scopes", SCOPE_COLUMNS, _keyset(scope, [()]), **self._bound.kwargs)
            )
            if not rows:
                raise errors.NotFound(
                    f"scope {scope.scope_id} does not exist", metadata={"scopeId": scope.scope_id}
                )
            txn.update("scopes", *_mutation(scope, {"time_zone": time_zone}))
            return _scope_record(scope, [*rows[0][:-1], time_zone])

        record: ScopeRecord = self._bounded(
            "set time zone",
            lambda: self._database.run_in_transaction(update, timeout_secs=self._timeout),
        )
        return record

    def walk_scopes(self, after: ScopeRef | None, limit: int) -> list[ScopeRecord]:
        """Every enterprise's registered scopes by (enterprise id, scope id), a page."""
        query = _Query()
        if after is not None:
            enterprise = query.bind("after_enterprise", after.enterprise_id, param_types.STRING)
            scope_id = query.bind("after_scope", after.scope_id, param_types.STRING)
            query.where(
                f"enterprise_id > {enterprise} OR (enterprise_id = {enterprise}"
                f" AND scope_id > {scope_id})"
            )
        where = f" WHERE {query.conditions()}" if after is not None else ""
        sql = (
            f"SELECT enterprise_id, scope_id, {_select(SCOPE_COLUMNS)} FROM scopes{where}"
            " ORDER BY enterprise_id, scope_id"
            f" LIMIT {query.bind('limit', limit, param_types.INT64)}"
        )
        return [
            _scope_record(ScopeRef(enterprise_id=row[0], scope_id=row[1]), row[2:])
            for row in self._execute(query, sql, "walk scopes")
        ]

    # claims

    def list_claims(
        self,
        scope: ScopeRef,
        statuses: Sequence[Status] | None,
        after: str | None,
        limit: int,
    ) -> list[MemoryRecord]:
        """The scope's claims of those statuses (all when None), any validity, by id;
        after `after`, at most `limit`; embeddings left out."""
        query = _Query.scoped(scope)
        if after is not None:
            query.where(f"id > {query.bind('after', after, param_types.STRING)}")
        if statuses is not None:
            wanted = sorted({status.value for status in statuses})
            query.where(f"status IN UNNEST({query.bind('statuses', wanted, _STRING_ARRAY)})")
        sql = (
            f"SELECT {_select(CLAIM_COLUMNS)} FROM memory_records WHERE {query.conditions()}"
            f" ORDER BY id LIMIT {query.bind('limit', limit, param_types.INT64)}"
        )
        return [_claim(scope, row) for row in self._execute(query, sql, "list claims")]

    def list_claims_page(
        self,
        scope: ScopeRef,
        claim_filter: ClaimFilter,
        after: CardKey | None,
        limit: int,
    ) -> list[MemoryRecord]:
        """The memory card's claims, newest first (created_at DESC, id), after the card
        key `after`: memory_records_by_created_at read in its order (card.sql)."""
        query = _Query.scoped(scope)
        if after is not None:
            created = query.bind("after_created_at", after[0], param_types.TIMESTAMP)
            after_id = query.bind("after_id", after[1], param_types.STRING)
            query.where(f"created_at < {created} OR (created_at = {created} AND id > {after_id})")
        wanted = sorted(status.value for status in claim_filter.statuses)
        query.where(f"status IN UNNEST({query.bind('statuses', wanted, _STRING_ARRAY)})")
        if claim_filter.type is not None:
            query.where(f"type = {query.bind('type', claim_filter.type.value, param_types.STRING)}")
        if claim_filter.sensitivity is not None:
            value = claim_filter.sensitivity.value
            query.where(f"sensitivity = {query.bind('sensitivity', value, param_types.STRING)}")
        if claim_filter.applies_to is not None:
            node = query.bind("applies_to", claim_filter.applies_to, param_types.STRING)
            query.where(f"{node} IN UNNEST(applies_to)")
        sql = (
            f"SELECT {_select(CLAIM_COLUMNS)} "
            "FROM memory_records@{FORCE_INDEX=memory_records_by_created_at} "
            f"WHERE {query.conditions()} ORDER BY created_at DESC, id "
            f"LIMIT {query.bind('limit', limit, param_types.INT64)}"
        )
        return [_claim(scope, row) for row in self._execute(query, sql, "list the memory card")]

    def list_claim_states(
        self, scope: ScopeRef, statuses: Sequence[Status] | None
    ) -> list[ClaimState]:
        """The scope's claims of those statuses (all when None) as ClaimStates, by id:
        one query of the columns they hold (the source step read out of the metadata)."""
        query = _Query.scoped(scope)
        if statuses is not None:
            wanted = sorted({status.value for status in statuses})
            query.where(f"status IN UNNEST({query.bind('statuses', wanted, _STRING_ARRAY)})")
        step = query.bind("source_step", SOURCE_STEP, param_types.STRING)
        sql = (
            f"SELECT {_select(CLAIM_STATE_COLUMNS)}, JSON_VALUE(metadata[{step}]) "
            f"FROM memory_records WHERE {query.conditions()} ORDER BY id"
        )
        return [_claim_state(row) for row in self._execute(query, sql, "list claim states")]

    def list_evidence(self, scope: ScopeRef, memory_ids: Sequence[str]) -> list[Evidence]:
        """The named claims' evidence lines by memory id, recorded_at, ref."""
        if not memory_ids:
            return []
        query = _Query.scoped(scope)
        ids = query.bind("ids", sorted(set(memory_ids)), _STRING_ARRAY)
        query.where(f"id IN UNNEST({ids})")
        sql = (
            f"SELECT {_select(EVIDENCE_COLUMNS)} FROM evidence WHERE {query.conditions()}"
            " ORDER BY id, recorded_at, ref"
        )
        return [
            Evidence(memory_id=row[0], ref=row[1], quote=row[2], recorded_at=utc(row[3]))
            for row in self._execute(query, sql, "list evidence")
        ]

    def get_brief(self, scope: ScopeRef, variant: BriefVariant) -> StoredBrief | None:
        rows = self._read("briefs", BRIEF_COLUMNS, scope, [(variant.value,)])
        if not rows:
            return None
        _, text, token_count, expiries, compiled_at = rows[0]
        return StoredBrief(
            variant=variant,
            text=text,
            token_count=token_count,
            expiries={k: datetime.fromisoformat(v) for k, v in _string_map(expiries).items()},
            compiled_at=utc(compiled_at),
        )

    def list_change_log(self, scope: ScopeRef, limit: int, offset: int = 0) -> list[ChangeLogEntry]:
        """The scope's change log, newest first (the key's order), a page."""
        query = _Query.scoped(scope)
        sql = (
            f"SELECT {_select(CHANGE_COLUMNS)} FROM change_log WHERE {query.conditions()}"
            " ORDER BY recorded_at DESC, id, `change`"
            f" LIMIT {query.bind('limit', limit, param_types.INT64)}"
            f" OFFSET {query.bind('offset', offset, param_types.INT64)}"
        )
        return [
            _from_row(ChangeLogEntry, ("memory_id", *CHANGE_COLUMNS[1:]), row)
            for row in self._execute(query, sql, "list change log")
        ]

    def list_suppressions(
        self, scope: ScopeRef, after: str | None, limit: int
    ) -> list[Suppression]:
        """The scope's suppression rules by id, a page (embeddings included)."""
        query = _Query.scoped(scope)
        if after is not None:
            query.where(f"id > {query.bind('after', after, param_types.STRING)}")
        sql = (
            f"SELECT {_select(SUPPRESSION_COLUMNS)} FROM suppressions WHERE {query.conditions()}"
            f" ORDER BY id LIMIT {query.bind('limit', limit, param_types.INT64)}"
        )
        return [
            Suppression(
                id=row[0],
                memory_id=row[1],
                about=row[2],
                summary=row[3],
                text=row[4],
                embedding=None if row[5] is None else [float(x) for x in row[5]],
                created_at=utc(row[6]),
                created_by=row[7],
            )
            for row in self._execute(query, sql, "list suppressions")
        ]

    # chunks

    def search_chunks(
        self,
        scope: ScopeRef,
        vector: Sequence[float],
        top_k: int,
        filters: Sequence[MetadataFilter],
        as_of: datetime,
    ) -> list[ScoredRecord]:
        query = _Query.scoped(scope)
        vector_param = query.bind("query_vector", _vector(vector), _FLOAT32_ARRAY)
        _valid_and_filtered(query, as_of, filters, "embedding IS NOT NULL")
        sql = (
            f"SELECT {_select(CLAIM_COLUMNS)}, COSINE_DISTANCE(embedding, {vector_param})"
            f" AS distance FROM memory_records WHERE {query.conditions()}"
            f" ORDER BY distance, id LIMIT {query.bind('top_k', top_k, param_types.INT64)}"
        )
        rows = self._execute(query, sql, "semantic search")
        return [
            ScoredRecord(record=_claim(scope, row[:-1]), score=1.0 - float(row[-1])) for row in rows
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
        """Chunks valid at `as_of` matching every filter whose full-text tokens hold one
        of `words` (SEARCH / SCORE on the search index), or with `fuzzy` that share
        letter trigrams with them (SEARCH_NGRAMS / SCORE_NGRAMS); best first, ties by id."""
        terms = [word for word in dict.fromkeys(words) if word.strip()]
        if not terms or limit < 1:
            return []
        query = _Query.scoped(scope)
        if fuzzy:
            text = query.bind("words", " ".join(terms), param_types.STRING)
            search = f"SEARCH_NGRAMS(text_ngrams, {text})"
            score, order = f"SCORE_NGRAMS(text_ngrams, {text})", "relevance DESC"
        else:
            # Bound, never spliced: the words are plain tokens joined by the OR operator.
            text = query.bind("words", " OR ".join(terms), param_types.STRING)
            search = f"SEARCH(text_tokens, {text})"
            # More of the words first, then SCORE (whose weighting differs between
            # Spanner and its emulator, which counts occurrences).
            held = " + ".join(
                f"IF(SEARCH(text_tokens, {query.bind(f'word_{i}', t, param_types.STRING)}), 1, 0)"
                for i, t in enumerate(terms)
            )
            score, order = f"SCORE(text_tokens, {text})", f"({held}) DESC, relevance DESC"
        _valid_and_filtered(query, as_of, filters, search)
        sql = (
            f"SELECT {_select(CLAIM_COLUMNS)}, {score} AS relevance FROM memory_records"
            f" WHERE {query.conditions()}"
            f" ORDER BY {order}, id LIMIT {query.bind('limit', limit, param_types.INT64)}"
        )
        rows = self._execute(query, sql, "word search")
        return [ScoredRecord(record=_claim(scope, row[:-1]), score=float(row[-1])) for row in rows]

    def held_words(
        self,
        scope: ScopeRef,
        words: Sequence[str],
        filters: Sequence[MetadataFilter],
        as_of: datetime,
    ) -> set[str]:
        """The `words` some chunk valid at `as_of`, shown and matching every filter holds
        among its full-text tokens."""
        terms = [word for word in dict.fromkeys(words) if word.strip()]
        return {term for term in terms if self._holds_word(scope, term, filters, as_of)}

    def _holds_word(
        self, scope: ScopeRef, word: str, filters: Sequence[MetadataFilter], as_of: datetime
    ) -> bool:
        """Whether a chunk valid at `as_of`, shown and matching every filter holds `word`
        among its full-text tokens (stops at the first)."""
        query = _Query.scoped(scope)
        token = query.bind("word", word, param_types.STRING)
        _valid_and_filtered(query, as_of, filters, f"SEARCH(text_tokens, {token})")
        sql = f"SELECT 1 FROM memory_records WHERE {query.conditions()} LIMIT 1"
        return bool(list(self._execute(query, sql, "word probe")))

    def get_chunks(self, scope: ScopeRef, ids: Sequence[str]) -> list[MemoryRecord]:
        rows = self._read("memory_records", RECORD_COLUMNS, scope, [(i,) for i in ids])
        return sorted((_record(scope, row) for row in rows), key=lambda r: r.id)

    def list_chunks(
        self, scope: ScopeRef, as_of: datetime | None, limit: int, offset: int
    ) -> list[MemoryRecord]:
        query = _Query.scoped(scope)
        if as_of is not None:
            query.bind("as_of", as_of, param_types.TIMESTAMP)
            query.where(_VALID_AT_SQL, _SHOWN_SQL)
        sql = (
            f"SELECT {_select(RECORD_COLUMNS)} FROM memory_records WHERE {query.conditions()}"
            f" ORDER BY id LIMIT {query.bind('limit', limit, param_types.INT64)}"
            f" OFFSET {query.bind('offset', offset, param_types.INT64)}"
        )
        return [_record(scope, row) for row in self._execute(query, sql, "list chunks")]

    # graph

    def find_nodes(
        self, scope: ScopeRef, filters: Sequence[MetadataFilter], limit: int
    ) -> list[GraphNode]:
        query = _Query.scoped(scope)
        for flt in filters:
            column = NODE_FILTER_COLUMNS.get(flt.key)
            if column is None:
                raise errors.InvalidArgument(
                    f"{flt.key!r} is not a node filter key; use one of "
                    + ", ".join(NODE_FILTER_COLUMNS),
                    field="key",
                )
            query.where(_filter_sql(query, column, flt))
        sql = (
            f"SELECT {_select(NODE_COLUMNS)} FROM graph_nodes WHERE {query.conditions()}"
            f" ORDER BY node_id LIMIT {query.bind('limit', limit, param_types.INT64)}"
        )
        return [_node(row) for row in self._execute(query, sql, "find nodes")]

    def get_nodes(self, scope: ScopeRef, node_ids: Sequence[str]) -> list[GraphNode]:
        rows = self._read("graph_nodes", NODE_COLUMNS, scope, [(i,) for i in node_ids])
        return sorted((_node(row) for row in rows), key=lambda n: n.node_id)

    def edges_touching(
        self,
        scope: ScopeRef,
        node_ids: Sequence[str],
        relations: Sequence[str],
        direction: Direction,
        as_of: datetime | None,
    ) -> list[GraphEdge]:
        if not node_ids:
            return []
        query = _Query.scoped(scope)
        nodes = query.bind("node_ids", list(node_ids), _STRING_ARRAY)
        ends = {
            Direction.OUTBOUND: f"source IN UNNEST({nodes})",
            Direction.INBOUND: f"target IN UNNEST({nodes})",
            Direction.ANY: f"(source IN UNNEST({nodes}) OR target IN UNNEST({nodes}))",
        }
        query.where(ends[direction])
        if relations:
            query.where(
                f"relation IN UNNEST({query.bind('relations', list(relations), _STRING_ARRAY)})"
            )
        if as_of is not None:
            query.bind("as_of", as_of, param_types.TIMESTAMP)
            query.where(_VALID_AT_SQL)
        sql = (
            f"SELECT {_select(EDGE_COLUMNS)} FROM graph_edges WHERE {query.conditions()}"
            " ORDER BY edge_id"
        )
        return [_edge(row) for row in self._execute(query, sql, "edges touching nodes")]

    def get_edges(self, scope: ScopeRef, edge_ids: Sequence[str]) -> list[GraphEdge]:
        rows = self._read("graph_edges", EDGE_COLUMNS, scope, [(i,) for i in edge_ids])
        return sorted((_edge(row) for row in rows), key=lambda e: e.edge_id)

    # execution log

    def get_step(self, scope: ScopeRef, step_id: str) -> ExecutionLogStep | None:
        rows = self._read("execution_log_steps", STEP_COLUMNS, scope, [(step_id,)])
        return _step(rows[0]) if rows else None

    # formation

    def find_chunks_by_content(
        self, scope: ScopeRef, content_hashes: Sequence[str], as_of: datetime | None
    ) -> list[MemoryRecord]:
        """Chunks with one of the content hashes (through the content-hash index),
        valid at `as_of` (every row when None), by id."""
        if not content_hashes:
            return []
        query = _Query.scoped(scope)
        hashes = query.bind("content_hashes", sorted(set(content_hashes)), _STRING_ARRAY)
        query.where(f"content_hash IN UNNEST({hashes})")
        if as_of is not None:
            query.bind("as_of", as_of, param_types.TIMESTAMP)
            query.where(_VALID_AT_SQL)
        sql = (
            f"SELECT {_select(RECORD_COLUMNS)}"
            " FROM memory_records@{FORCE_INDEX=memory_records_by_content_hash}"
            f" WHERE {query.conditions()} ORDER BY id"
        )
        return [_record(scope, row) for row in self._execute(query, sql, "find by content")]

    def get_formation_key(self, scope: ScopeRef, formation_key: str) -> FormationKeyRecord | None:
        """The committed formation-key record, or None."""
        rows = self._read("formation_keys", FORMATION_KEY_COLUMNS, scope, [(formation_key,)])
        return _from_row(FormationKeyRecord, FORMATION_KEY_COLUMNS, rows[0]) if rows else None

    # plumbing

    def _read(
        self, table: str, columns: Sequence[str], scope: ScopeRef, keys: Sequence[Sequence[str]]
    ) -> list[list[Any]]:
        if not keys:
            return []

        def read() -> list[list[Any]]:
            with self._database.snapshot() as snapshot:
                rows = snapshot.read(table, columns, _keyset(scope, keys), **self._bound.kwargs)
                return list(rows)

        return self._bounded(f"read {table}", read)

    def _execute(self, query: _Query, sql: str, what: str) -> list[list[Any]]:
        def execute() -> list[list[Any]]:
            with self._database.snapshot() as snapshot:
                rows = snapshot.execute_sql(
                    sql, params=query.params, param_types=query.types, **self._bound.kwargs
                )
                return list(rows)

        return self._bounded(what, execute)

    def _bounded(self, what: str, call: Callable[[], _T]) -> _T:
        """Run one Spanner call within the time bound, its errors mapped to ours."""
        return bounded(what, call, self._timeout)


# The transaction function


@dataclass(frozen=True)
class _Written:
    """What the transaction function hands back once Spanner commits it."""

    transaction: Any
    chunk_supersessions: int
    edge_supersessions: int


@dataclass(frozen=True)
class _Window:
    """A row's validity window, and a chunk's revision (None for an edge) as this
    transaction leaves it so far."""

    valid_at: datetime | None
    invalid_at: datetime | None
    superseded_by: str | None
    revision: int | None = None


@dataclass(frozen=True)
class _VersionedRow:
    """One chunk or edge of the plan: its columns for an insert and for a replace."""

    id: str
    window: _Window
    insert: dict[str, Any]

    @property
    def replace(self) -> dict[str, Any]:
        values = {k: v for k, v in self.insert.items() if k not in _KEPT_ON_REPLACE}
        if values.get("supersedes") is None:
            values.pop("supersedes", None)  # a plain rewrite keeps the lineage
        return values


@dataclass(frozen=True)
class _VersionedTable:
    """A table of rows with validity windows that supersessions close (chunks, edges)."""

    name: str
    id_column: str
    noun: str
    has_status: bool

    def closed(self, window: _Window) -> dict[str, Any]:
        values: dict[str, Any] = {
            "invalid_at": window.invalid_at,
            "superseded_by": window.superseded_by,
            "updated_at": COMMIT_TIMESTAMP,
        }
        if self.has_status:
            values["status"] = Status.SUPERSEDED.value
            values["revision"] = window.revision
        return values


_CHUNKS = _VersionedTable("memory_records", "id", "chunk", has_status=True)
_EDGES = _VersionedTable("graph_edges", "edge_id", "edge", has_status=False)


class _PlanWriter:
    """Buffers a CommitPlan's mutations inside one read-write transaction.

    `write` may run several times (Spanner retries aborted transactions): it
    reads what it needs through the transaction, buffers mutations, and
    changes nothing else.
    """

    def __init__(self, plan: CommitPlan, bound: CallBound) -> None:
        self._plan = plan
        self._scope = plan.scope
        self._bound = bound
        self._windows: dict[str, _Window] = {}  # the chunks' windows, set by each `write`

    def write(self, txn: Any) -> _Written:
        plan = self._plan
        self._register(txn)
        chunk_rows = [_chunk_row(c) for c in plan.chunks]
        edge_rows = [_edge_row(e) for e in plan.edges]
        chunk_supersessions = self._write_versioned(
            txn, _CHUNKS, chunk_rows, plan.chunk_supersessions
        )
        self._write_nodes(txn, plan.nodes)
        edge_supersessions = self._write_versioned(txn, _EDGES, edge_rows, plan.edge_supersessions)
        self._update_claims(txn)
        self._write_evidence(txn)
        self._write_briefs(txn)
        self._write_links(txn)
        self._write_steps(txn)
        self._write_formation_key(txn)
        self._write_suppressions(txn)
        if _writes_nothing(plan):
            # A transaction begins with its first read or at commit with its first
            # mutation; with neither, the client refuses to commit it.
            list(txn.execute_sql("SELECT 1", **self._bound.kwargs))
        return _Written(txn, chunk_supersessions, edge_supersessions)

    def _update_claims(self, txn: Any) -> None:
        """Apply the claim updates in order, each checked against the revision read in
        this transaction (or left by this plan's own writes), as one update each."""
        updates = self._plan.claim_updates
        windows = dict(self._windows)
        unread = sorted({u.memory_id for u in updates} - windows.keys())
        columns = ("id", "valid_at", "invalid_at", "superseded_by", "revision")
        for row in self._read(txn, "memory_records", columns, [(i,) for i in unread]):
            windows[row[0]] = _Window(_utc_or_none(row[1]), _utc_or_none(row[2]), row[3], row[4])
        for update in updates:
            window = windows.get(update.memory_id)
            rules.check_claim_revision(update, None if window is None else window.revision)
            assert window is not None and window.revision is not None
            values = _claim_changes(update) | {
                "id": update.memory_id,
                "revision": window.revision + 1,
                "updated_at": COMMIT_TIMESTAMP,
            }
            invalid_at = window.invalid_at
            if invalid_at is None and update.invalid_at is not None:
                invalid_at = values["invalid_at"] = update.invalid_at  # only an open window
            windows[update.memory_id] = _Window(
                window.valid_at, invalid_at, window.superseded_by, window.revision + 1
            )
            self._put(txn, "memory_records", True, values)

    def _register(self, txn: Any) -> None:
        """Insert the registration unless the scope is registered already."""
        record = self._plan.registration
        if record is None or self._read(txn, "scopes", ("scope_id",), [()]):
            return
        values = {
            "kind": record.kind,
            "created_at": COMMIT_TIMESTAMP,
            "created_by": record.created_by,
            "time_zone": record.time_zone,
        }
        self._put(txn, "scopes", False, values)

    def _write_versioned(
        self,
        txn: Any,
        table: _VersionedTable,
        rows: Sequence[_VersionedRow],
        supersessions: Sequence[Supersession],
    ) -> int:
        """Create-or-replace the rows, then apply the supersessions; how many were applied."""
        planned = {row.id: row for row in rows}
        existing = self._read_windows(
            txn, table, set(planned) | {c.target_id for c in supersessions}
        )
        windows = {row_id: row.window for row_id, row in planned.items()} | existing
        for row_id in planned.keys() & existing.keys():  # a replace is the next revision
            stored = existing[row_id].revision
            windows[row_id] = replace(
                windows[row_id], revision=None if stored is None else stored + 1
            )
        closed = _apply_supersessions(table, windows, supersessions)
        if table.has_status:
            self._windows = windows  # what the claim updates check against
        for row_id, row in planned.items():
            values = row.replace if row_id in existing else dict(row.insert)
            if row_id in existing and table.has_status:
                values = values | {"revision": windows[row_id].revision}
            if row_id in closed:
                values |= table.closed(windows[row_id])
            self._put(txn, table.name, row_id in existing, {table.id_column: row_id} | values)
        for row_id in closed - planned.keys():
            self._put(
                txn, table.name, True, {table.id_column: row_id} | table.closed(windows[row_id])
            )
        return len(closed)

    def _read_windows(self, txn: Any, table: _VersionedTable, ids: set[str]) -> dict[str, _Window]:
        columns: tuple[str, ...] = (table.id_column, "valid_at", "invalid_at", "superseded_by")
        if table.has_status:
            columns += ("revision",)
        rows = self._read(txn, table.name, columns, [(i,) for i in sorted(ids)])
        return {
            row[0]: _Window(_utc_or_none(row[1]), _utc_or_none(row[2]), row[3], *row[4:])
            for row in rows
        }

    def _write_nodes(self, txn: Any, nodes: Sequence[GraphNode]) -> None:
        merged: dict[str, GraphNode] = {}
        for node in nodes:
            earlier = merged.get(node.node_id)
            kept_type = earlier.node_type if earlier is not None else None
            merged[node.node_id] = node.model_copy(
                update={"node_type": kept_type or node.node_type}
            )
        rows = self._read(
            txn, "graph_nodes", ("node_id", "node_type"), [(i,) for i in sorted(merged)]
        )
        stored_types: dict[str, str | None] = {row[0]: row[1] for row in rows}
        for node_id, node in merged.items():
            exists = node_id in stored_types
            values: dict[str, Any] = {
                "node_id": node_id,
                "label": node.label,
                "node_type": stored_types.get(node_id) or node.node_type,  # assign-once
                "properties": _json(node.properties),
                "updated_at": COMMIT_TIMESTAMP,
            }
            if not exists:
                values["created_at"] = COMMIT_TIMESTAMP
            self._put(txn, "graph_nodes", exists, values)

    def _write_evidence(self, txn: Any) -> None:
        """Insert the lines whose (memory, ref) is new; a recorded one is left as it is."""
        lines: dict[tuple[str, str], Evidence] = {}
        for line in self._plan.evidence:
            lines.setdefault((line.memory_id, line.ref), line)
        stored = {tuple(row) for row in self._read(txn, "evidence", ("id", "ref"), sorted(lines))}
        for (memory_id, ref), line in lines.items():
            if (memory_id, ref) not in stored:
                values = {"id": memory_id, "ref": ref, "quote": line.quote,
                          "recorded_at": line.recorded_at}  # fmt: skip
                self._put(txn, "evidence", False, values)

    def _write_briefs(self, txn: Any) -> None:
        """The compiled briefs (each replaces its variant's) and the change-log lines."""
        for brief in self._plan.briefs:
            values = {
                "variant": brief.variant.value,
                "text": brief.text,
                "token_count": brief.token_count,
                "expiries": _json({k: v.isoformat() for k, v in brief.expiries.items()}),
                "compiled_at": COMMIT_TIMESTAMP,
            }
            txn.insert_or_update("briefs", *_mutation(self._scope, values))
        for entry in self._plan.change_log:
            line: dict[str, Any] = {
                "recorded_at": entry.recorded_at or COMMIT_TIMESTAMP,
                "id": entry.memory_id,
                "change": entry.change,
                "day": entry.day,
                "from_value": entry.from_value,
                "to_value": entry.to_value,
            }
            txn.insert_or_update("change_log", *_mutation(self._scope, line))

    def _write_links(self, txn: Any) -> None:
        wanted = sorted({(link.source_id, link.target_id) for link in self._plan.links})
        stored = {
            tuple(row)
            for row in self._read(txn, "memory_links", ("source_id", "target_id"), wanted)
        }
        for source_id, target_id in wanted:
            if (source_id, target_id) not in stored:  # an existing link keeps its created_at
                values = {"source_id": source_id, "target_id": target_id,
                          "created_at": COMMIT_TIMESTAMP}  # fmt: skip
                self._put(txn, "memory_links", False, values)

    def _write_steps(self, txn: Any) -> None:
        steps = {step.step_id: step for step in self._plan.steps}
        keys = [(i,) for i in sorted(steps)]
        stored = {row[0] for row in self._read(txn, "execution_log_steps", ("step_id",), keys)}
        for step_id, step in steps.items():
            values: dict[str, Any] = {
                "step_id": step_id,
                "tool_input": step.tool_input,
                "metadata": _json(step.metadata),
            }
            if step_id not in stored:
                values["created_at"] = COMMIT_TIMESTAMP
            self._put(txn, "execution_log_steps", step_id in stored, values)

    def _write_formation_key(self, txn: Any) -> None:
        record = self._plan.formation_key
        if record is None:
            return
        if self._read(txn, "formation_keys", ("formation_key",), [(record.formation_key,)]):
            raise errors.Aborted(
                f"another request with formationKey {record.formation_key!r} committed first; "
                "resend with the same formationKey to get its receipt",
                reason="FORMATION_KEY_CLAIMED",
                metadata={"formationKey": record.formation_key},
            )
        values = {
            "formation_key": record.formation_key,
            "fingerprint": record.fingerprint,
            "receipt_json": record.receipt_json,
            "committed_at": COMMIT_TIMESTAMP,
        }
        self._put(txn, "formation_keys", False, values)

    def _write_suppressions(self, txn: Any) -> None:
        """Delete the removed suppression rules (NotFound for one not stored), then insert
        the new ones (AlreadyExists for an id stored already)."""
        plan = self._plan
        named = sorted(set(plan.suppressions_removed) | {rule.id for rule in plan.suppressions})
        stored = {row[0] for row in self._read(txn, "suppressions", ("id",), [(i,) for i in named])}
        for suppression_id in plan.suppressions_removed:
            if suppression_id not in stored:
                raise errors.NotFound(
                    f"suppression {suppression_id!r} was not found in scope "
                    f"{self._scope.scope_id!r}",
                    metadata={"suppressionId": suppression_id},
                )
            txn.delete("suppressions", _keyset(self._scope, [(suppression_id,)]))
            stored.discard(suppression_id)
        for rule in plan.suppressions:
            if rule.id in stored:
                raise errors.AlreadyExists(
                    f"suppression {rule.id} exists already in scope {self._scope.scope_id!r}",
                    metadata={"suppressionId": rule.id},
                )
            stored.add(rule.id)
            values = {
                "id": rule.id, "memory_id": rule.memory_id, "about": rule.about,
                "summary": rule.summary, "text": rule.text,
                "embedding": None if rule.embedding is None else _vector(rule.embedding),
                "created_at": rule.created_at or COMMIT_TIMESTAMP,  # given: an import's
                "created_by": rule.created_by,
            }  # fmt: skip
            self._put(txn, "suppressions", False, values)

    def _read(
        self, txn: Any, table: str, columns: Sequence[str], keys: Sequence[Sequence[str]]
    ) -> list[list[Any]]:
        if not keys:
            return []
        return list(txn.read(table, columns, _keyset(self._scope, keys), **self._bound.kwargs))

    def _put(self, txn: Any, table: str, exists: bool, values: Mapping[str, Any]) -> None:
        """Buffer an update of an existing row or an insert of a new one."""
        mutate = txn.update if exists else txn.insert
        mutate(table, *_mutation(self._scope, values))


def _writes_nothing(plan: CommitPlan) -> bool:
    return not (
        plan.registration
        or plan.chunks
        or plan.nodes
        or plan.edges
        or plan.chunk_supersessions
        or plan.edge_supersessions
        or plan.evidence
        or plan.claim_updates
        or plan.briefs
        or plan.change_log
        or plan.links
        or plan.steps
        or plan.formation_key
        or plan.suppressions
        or plan.suppressions_removed
    )


# Destroying a scope


@dataclass(frozen=True)
class _DestroyStep:
    """What one destroy transaction erased, and whether the scope is gone."""

    erased: int
    done: bool


class _ScopeDestroyer:
    """Destroys one scope, one transaction per `step`.

    A step counts the scope's rows; when at most `batch_rows` remain (evidence
    aside) it range-deletes every table's rows of the scope, registration
    included, and is done; otherwise it deletes the first `batch_rows` rows of
    one table. `step` only reads and buffers mutations, so Spanner may rerun it.
    """

    def __init__(self, scope: ScopeRef, bound: CallBound, batch_rows: int) -> None:
        if batch_rows < 1:
            raise ValueError(f"destroy_rows_per_transaction must be at least 1; got {batch_rows}")
        self._scope = scope
        self._bound = bound
        self._batch_rows = batch_rows

    def step(self, txn: Any) -> _DestroyStep:
        counts = self._counts(txn)
        if sum(n for table, n in counts.items() if table != "evidence") <= self._batch_rows:
            whole_scope = KeySet(ranges=[_scope_range(self._scope)])  # type: ignore[no-untyped-call]
            for table in SCOPED_TABLES:
                txn.delete(table, whole_scope)
            return _DestroyStep(sum(counts.values()), done=True)
        table = next(t for t in _BATCHED_TABLES if counts[t] > 0)
        return _DestroyStep(self._delete_batch(txn, table), done=False)

    def _counts(self, txn: Any) -> dict[str, int]:
        query = _Query.scoped(self._scope)
        sql = " UNION ALL ".join(
            f"SELECT '{table}', COUNT(*) FROM {table} WHERE {query.conditions()}"
            for table in SCOPED_TABLES
        )
        counts = {table: 0 for table in SCOPED_TABLES}
        counts.update({row[0]: int(row[1]) for row in self._execute(txn, query, sql)})
        return counts

    def _delete_batch(self, txn: Any, table: str) -> int:
        """Delete the first `batch_rows` rows of `table` (with their evidence); the count."""
        key_columns = SCOPED_TABLES[table]
        query = _Query.scoped(self._scope)
        columns = _select(key_columns)
        limit = query.bind("batch_rows", self._batch_rows, param_types.INT64)
        sql = (
            f"SELECT {columns} FROM {table} WHERE {query.conditions()}"
            f" ORDER BY {columns} LIMIT {limit}"
        )
        keys = self._execute(txn, query, sql)
        erased = len(keys)
        if table == "memory_records":  # interleaved evidence goes with its memory
            evidence = _Query.scoped(self._scope)
            ids = evidence.bind("ids", [key[0] for key in keys], _STRING_ARRAY)
            evidence.where(f"id IN UNNEST({ids})")
            sql = f"SELECT COUNT(*) FROM evidence WHERE {evidence.conditions()}"
            erased += int(self._execute(txn, evidence, sql)[0][0])
        txn.delete(table, _keyset(self._scope, keys))
        return erased

    def _execute(self, txn: Any, query: _Query, sql: str) -> list[list[Any]]:
        rows = txn.execute_sql(
            sql, params=query.params, param_types=query.types, **self._bound.kwargs
        )
        return list(rows)


def _scope_range(scope: ScopeRef) -> Any:
    """Every key with the scope's (enterprise_id, scope_id) prefix."""
    prefix = [scope.enterprise_id, scope.scope_id]
    return KeyRange(start_closed=prefix, end_closed=prefix)  # type: ignore[no-untyped-call]


def _apply_supersessions(
    table: _VersionedTable, windows: dict[str, _Window], supersessions: Sequence[Supersession]
) -> set[str]:
    """Close windows in place, in order; returns the ids whose window this commit closed."""
    closed: set[str] = set()
    for supersession in supersessions:
        window = windows.get(supersession.target_id)
        if window is None:
            raise errors.NotFound(
                f"{table.noun} {supersession.target_id} does not exist in this scope",
                metadata={"id": supersession.target_id},
            )
        if rules.check_supersession(
            supersession.target_id,
            window.valid_at,
            window.invalid_at,
            window.superseded_by,
            supersession.invalid_at,
            supersession.superseded_by,
        ):
            revision = None if window.revision is None else window.revision + 1
            windows[supersession.target_id] = _Window(
                window.valid_at, supersession.invalid_at, supersession.superseded_by, revision
            )
            closed.add(supersession.target_id)
    return closed


# Rows in


def _chunk_row(record: MemoryRecord) -> _VersionedRow:
    values = _column_values(record, exclude={"id", "scope", "applies_to", "related"})
    values |= {"applies_to": list(record.applies_to), "related": list(record.related)}
    window = _Window(record.valid_at, record.invalid_at, record.superseded_by, record.revision)
    return _VersionedRow(record.id, window, values)


def _claim_changes(update: ClaimUpdate) -> dict[str, Any]:
    """The columns a claim update sets: its fields that are not None (the validity
    window's end aside, which only closes an open window)."""
    fields = update.model_dump(exclude={"memory_id", "expected_revision", "invalid_at"})
    return {
        name: list(value) if name == "related" else _to_column(value)
        for name, value in fields.items()
        if value is not None
    }


def _edge_row(edge: GraphEdge) -> _VersionedRow:
    values = _column_values(edge, exclude={"edge_id"})
    window = _Window(edge.valid_at, edge.invalid_at, edge.superseded_by)
    return _VersionedRow(edge.edge_id, window, values)


def _column_values(model: BaseModel, exclude: set[str]) -> dict[str, Any]:
    """A new row's columns: every field of the model, stamped with the commit time."""
    values = {name: _to_column(v) for name, v in model.model_dump(exclude=exclude).items()}
    return values | {"created_at": COMMIT_TIMESTAMP, "updated_at": COMMIT_TIMESTAMP}


def _to_column(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return _json(value)
    if isinstance(value, list):
        return _vector(value)
    return value


def _mutation(scope: ScopeRef, values: Mapping[str, Any]) -> tuple[list[str], list[list[Any]]]:
    columns = ["enterprise_id", "scope_id", *values]
    return columns, [[scope.enterprise_id, scope.scope_id, *values.values()]]


def _keyset(scope: ScopeRef, keys: Iterable[Sequence[str]]) -> Any:
    full_keys = [[scope.enterprise_id, scope.scope_id, *key] for key in keys]
    return KeySet(keys=full_keys)  # type: ignore[no-untyped-call]


def _json(values: Mapping[str, str]) -> str:
    return json.dumps(dict(values), sort_keys=True, ensure_ascii=False)


def _vector(values: Sequence[float]) -> list[float]:
    # FLOAT32 array elements must be Python floats: the client sends an int as a string.
    return [float(v) for v in values]


# Rows out


def _record(scope: ScopeRef, row: Sequence[Any]) -> MemoryRecord:
    return _from_row(MemoryRecord, RECORD_COLUMNS, row, scope=scope)


def _claim(scope: ScopeRef, row: Sequence[Any]) -> MemoryRecord:
    """A record read without its embedding (CLAIM_COLUMNS): searches and claim lists."""
    return _from_row(MemoryRecord, CLAIM_COLUMNS, row, scope=scope)


def _node(row: Sequence[Any]) -> GraphNode:
    return _from_row(GraphNode, NODE_COLUMNS, row)


def _edge(row: Sequence[Any]) -> GraphEdge:
    return _from_row(GraphEdge, EDGE_COLUMNS, row)


def _step(row: Sequence[Any]) -> ExecutionLogStep:
    return _from_row(ExecutionLogStep, STEP_COLUMNS, row)


def _scope_record(scope: ScopeRef, row: Sequence[Any]) -> ScopeRecord:
    return _from_row(ScopeRecord, SCOPE_COLUMNS, row, scope=scope)


def _from_row(model: type[_M], columns: Sequence[str], row: Sequence[Any], **extra: Any) -> _M:
    values = {column: _from_column(column, v) for column, v in zip(columns, row, strict=True)}
    return model.model_validate(values | extra)


def _claim_state(row: Sequence[Any]) -> ClaimState:
    """A row of CLAIM_STATE_COLUMNS and the source step (validated when written)."""
    (
        record_id, revision, status, type_, about, summary, text, strength, pin, authority,
        sensitivity, durability, reinforcement_count, valid_at, invalid_at, valid_until,
        retired_at, created_at, last_reinforced_at, source_step,
    ) = row  # fmt: skip
    return ClaimState(
        id=record_id,
        revision=int(revision),
        status=Status(status),
        type=MemoryType(type_),
        about=about,
        summary=summary,
        text=text,
        strength=Strength(strength),
        pin=bool(pin),
        authority=Authority(authority),
        sensitivity=Sensitivity(sensitivity),
        durability=Durability(durability),
        reinforcement_count=int(reinforcement_count),
        valid_at=_utc_or_none(valid_at),
        invalid_at=_utc_or_none(invalid_at),
        valid_until=_utc_or_none(valid_until),
        retired_at=_utc_or_none(retired_at),
        created_at=_utc_or_none(created_at),
        last_reinforced_at=_utc_or_none(last_reinforced_at),
        source_step=source_step or None,
    )


def _from_column(column: str, value: Any) -> Any:
    if isinstance(value, datetime):
        return utc(value)
    if isinstance(value, dict):  # a JSON column (the client's JsonObject)
        return _string_map(value)
    if isinstance(value, list):  # the embedding, or a list of ids (applies_to, related)
        return [float(v) for v in value] if column == "embedding" else [str(v) for v in value]
    return value


def _string_map(value: dict[Any, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()}


def _utc_or_none(value: datetime | None) -> datetime | None:
    return None if value is None else utc(value)


# SQL


_FLOAT32_ARRAY = param_types.Array(param_types.FLOAT32)  # type: ignore[no-untyped-call]
_STRING_ARRAY = param_types.Array(param_types.STRING)  # type: ignore[no-untyped-call]


@dataclass
class _Query:
    """WHERE conditions and their bound parameters; user text is only ever bound."""

    params: dict[str, Any] = field(default_factory=dict)
    types: dict[str, Any] = field(default_factory=dict)
    _conditions: list[str] = field(default_factory=list)

    @classmethod
    def scoped(cls, scope: ScopeRef) -> _Query:
        query = cls()
        query.bind("enterprise_id", scope.enterprise_id, param_types.STRING)
        query.bind("scope_id", scope.scope_id, param_types.STRING)
        query.where(_SCOPE_SQL)
        return query

    def bind(self, name: str, value: Any, type_: Any) -> str:
        self.params[name] = value
        self.types[name] = type_
        return "@" + name

    def bind_key(self, flt: MetadataFilter) -> str:
        return self.bind(f"filter_key_{len(self.params)}", flt.key, param_types.STRING)

    def where(self, *conditions: str) -> None:
        self._conditions.extend(conditions)

    def conditions(self) -> str:
        return " AND ".join(f"({c})" for c in self._conditions)


def _valid_and_filtered(
    query: _Query, as_of: datetime, filters: Sequence[MetadataFilter], condition: str
) -> None:
    """Narrow a search of memory_records to `condition`, the chunks valid at `as_of`
    (bound as @as_of, which _VALID_AT_SQL reads), not hidden, matching every filter."""
    query.bind("as_of", as_of, param_types.TIMESTAMP)
    query.where(condition, _VALID_AT_SQL, _SHOWN_SQL)
    for flt in filters:
        query.where(_filter_sql(query, f"JSON_VALUE(metadata[{query.bind_key(flt)}])", flt))


def _filter_sql(query: _Query, value_sql: str, flt: MetadataFilter) -> str:
    """`rules.matches_filter` in SQL: a NULL value is an absent key."""
    values = query.bind(f"filter_values_{len(query.params)}", list(flt.values), _STRING_ARRAY)
    if flt.operator is FilterOperator.NOT_EQUALS:
        return f"{value_sql} IS NULL OR {value_sql} NOT IN UNNEST({values})"
    return f"{value_sql} IN UNNEST({values})"


def _select(columns: Sequence[str]) -> str:
    return ", ".join(f"`{column}`" for column in columns)
