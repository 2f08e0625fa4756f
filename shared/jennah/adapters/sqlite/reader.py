"""Reading the SQLite store: every query is confined to one (enterprise, scope)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from jennah.adapters.sqlite import bm25, codec
from jennah.adapters.sqlite.schema import in_scope_range
from jennah.adapters.sqlite.vector_index import IndexEntry, IndexRow
from jennah.domain import rules
from jennah.domain.card import CardKey, ClaimFilter
from jennah.domain.claim_state import ClaimState
from jennah.domain.models import (
    HIDDEN_STATUSES,
    BriefVariant,
    ChangeLogEntry,
    Direction,
    Evidence,
    ExecutionLogStep,
    FilterOperator,
    FormationKeyRecord,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    MetadataFilter,
    ScopeRecord,
    ScopeRef,
    Status,
    StoredBrief,
)
from jennah.domain.suppression import Suppression

if TYPE_CHECKING:
    from sqlite3 import Connection

_IN_BATCH = 500  # ids per `IN (...)` list, well under SQLite's variable limit
_IN_SCOPE = "enterprise_id = ? AND scope_id = ?"
# Valid at an instant (?, ?): not retired, started, not yet ended.
_VALID_AT = (
    "retired_at IS NULL AND (valid_at IS NULL OR valid_at <= ?) "
    "AND (invalid_at IS NULL OR invalid_at > ?)"
)
# Not hidden: out of every default read (domain HIDDEN_STATUSES), as SQL.
_SHOWN = "status NOT IN ({})".format(
    ", ".join(f"'{status.value}'" for status in sorted(HIDDEN_STATUSES))
)
_NODE_COLUMNS = {"NodeId": "node_id", "Label": "label", "NodeType": "node_type"}


def _scope(scope: ScopeRef) -> tuple[str, str]:
    return (scope.enterprise_id, scope.scope_id)


# `rowid` of an FTS5 index within the scope's range of row ids (schema.py; ? ?: the scope,
# twice): FTS5 reads only that range of each matching word's rows, not every scope's.
_IN_SCOPE_RANGE = in_scope_range("rowid", f"(SELECT ordinal FROM scope_ordinals WHERE {_IN_SCOPE})")


def _batches(values: Sequence[str]) -> Iterator[list[str]]:
    unique = sorted(set(values))
    for start in range(0, len(unique), _IN_BATCH):
        yield unique[start : start + _IN_BATCH]


def _marks(count: int) -> str:
    return ", ".join("?" * count)


def scope_generation(conn: Connection, scope: ScopeRef) -> tuple[int, int]:
    """(generation, record count) of the scope; (0, 0) for a scope never written."""
    row = conn.execute(
        f"SELECT generation, record_count FROM scope_generations WHERE {_IN_SCOPE}",
        _scope(scope),
    ).fetchone()
    return (0, 0) if row is None else (int(row[0]), int(row[1]))


def scopes_by_size(conn: Connection) -> list[tuple[ScopeRef, int]]:
    """Every scope holding records, with its record count; largest first."""
    rows = conn.execute(
        "SELECT enterprise_id, scope_id, record_count FROM scope_generations "
        "WHERE record_count > 0 ORDER BY record_count DESC, enterprise_id, scope_id"
    )
    return [(ScopeRef(enterprise_id=row[0], scope_id=row[1]), int(row[2])) for row in rows]


def get_chunks(conn: Connection, scope: ScopeRef, ids: Sequence[str]) -> list[MemoryRecord]:
    return _records_by_id(conn, scope, ids, codec.RECORD_COLUMNS)


def found_chunks(conn: Connection, scope: ScopeRef, ids: Sequence[str]) -> list[MemoryRecord]:
    """The named records as a search answers them: without their embedding."""
    return _records_by_id(conn, scope, ids, codec.RECORD_COLUMNS_WITHOUT_EMBEDDING)


def _records_by_id(
    conn: Connection, scope: ScopeRef, ids: Sequence[str], columns: str
) -> list[MemoryRecord]:
    """The named records (read as `columns`, a codec column list), in id order."""
    records: list[MemoryRecord] = []
    for batch in _batches(ids):
        rows = conn.execute(
            f"SELECT {columns} FROM memory_records "
            f"WHERE {_IN_SCOPE} AND id IN ({_marks(len(batch))})",
            (*_scope(scope), *batch),
        )
        records.extend(codec.record_from_row(row) for row in rows)
    return sorted(records, key=lambda record: record.id)


def list_chunks(
    conn: Connection, scope: ScopeRef, as_of: int | None, limit: int, offset: int
) -> list[MemoryRecord]:
    validity, params = (
        ("", ()) if as_of is None else (f" AND {_VALID_AT} AND {_SHOWN}", (as_of, as_of))
    )
    rows = conn.execute(
        f"SELECT {codec.RECORD_COLUMNS} FROM memory_records WHERE {_IN_SCOPE}{validity} "
        "ORDER BY id LIMIT ? OFFSET ?",
        (*_scope(scope), *params, limit, offset),
    )
    return [codec.record_from_row(row) for row in rows]


def index_rows(conn: Connection, scope: ScopeRef) -> list[IndexRow]:
    """Every record of the scope as the vector index keeps it (a hidden one counts as
    retired: the index never finds it)."""
    rows = conn.execute(
        f"SELECT id, embedding, valid_at, invalid_at, retired_at IS NOT NULL OR NOT {_SHOWN} "
        f"FROM memory_records WHERE {_IN_SCOPE}",
        _scope(scope),
    )
    return [(row[0], row[1], row[2], row[3], bool(row[4])) for row in rows]


def index_entries(conn: Connection, scope: ScopeRef, ids: Sequence[str]) -> list[IndexEntry]:
    """The named records as they now stand, with their metadata."""
    entries: list[IndexEntry] = []
    for batch in _batches(ids):
        rows = conn.execute(
            "SELECT id, embedding, valid_at, invalid_at, "
            f"retired_at IS NOT NULL OR NOT {_SHOWN}, metadata FROM memory_records "
            f"WHERE {_IN_SCOPE} AND id IN ({_marks(len(batch))})",
            (*_scope(scope), *batch),
        )
        entries.extend(
            IndexEntry(row[0], row[1], row[2], row[3], bool(row[4]), codec.from_json(row[5]))
            for row in rows
        )
    return entries


def metadata_values(conn: Connection, scope: ScopeRef, key: str) -> list[tuple[str, str]]:
    """(record id, value) of every record of the scope that has metadata `key`."""
    if rules.METADATA_KEY_PATTERN.match(key):  # no '"': safe as a quoted JSON path label
        rows = conn.execute(
            f"SELECT id, json_extract(metadata, ?) FROM memory_records WHERE {_IN_SCOPE}",
            (f'$."{key}"', *_scope(scope)),
        )
    else:
        rows = conn.execute(
            "SELECT r.id, j.value FROM memory_records AS r, json_each(r.metadata) AS j "
            "WHERE r.enterprise_id = ? AND r.scope_id = ? AND j.key = ?",
            (*_scope(scope), key),
        )
    return [(row[0], row[1]) for row in rows if row[1] is not None]


def search_by_scan(
    conn: Connection,
    scope: ScopeRef,
    vector: bytes,
    top_k: int,
    filters: Sequence[MetadataFilter],
    as_of: int,
) -> list[tuple[str, float]]:
    """Exact search in SQL with sqlite-vec, for scopes too large to keep in memory."""
    clauses, params = _metadata_clauses(filters)
    rows = conn.execute(
        "SELECT id, 1.0 - vec_distance_cosine(embedding, ?) AS score FROM memory_records "
        f"WHERE {_IN_SCOPE} AND embedding IS NOT NULL AND {_VALID_AT} AND {_SHOWN}{clauses} "
        "ORDER BY score DESC, id LIMIT ?",
        (vector, *_scope(scope), as_of, as_of, *params, top_k),
    )
    return [(row[0], float(row[1])) for row in rows]


# The FTS5 index a word search reads: words (Porter-stemmed), or letter trigrams.
WORD_INDEX = "memory_records_text"
TRIGRAM_INDEX = "memory_records_trigrams"


def search_text(
    conn: Connection,
    scope: ScopeRef,
    index: str,
    match: str,
    limit: int,
    filters: Sequence[MetadataFilter],
    as_of: int,
) -> list[tuple[MemoryRecord, float]]:
    """(record, relevance) of the scope's records valid at `as_of` matching every filter
    whose text matches the FTS5 expression `match` in `index`; best first (BM25), ties
    by id. The records come without their embedding, as every search answers them."""
    return _with_records(conn, _ranked(conn, scope, index, [match], limit, filters, as_of))


# A word search whose phrases are held by at most WORD_SEARCH_SMALL rows in all scores
# them all in one query. A larger one first scores the rows holding its rarest phrases
# (held by at most WORD_SEARCH_RARE rows, at least the rarest phrase); when their k-th
# score does not prove the answer, once more the rows holding any phrase that could
# still reach it, if those phrases are held by at most WORD_SEARCH_WIDER_SHARE of the
# rows all the phrases are held by.
WORD_SEARCH_SMALL = 3000
WORD_SEARCH_RARE = 3000
WORD_SEARCH_WIDER_SHARE = 0.5


def search_words(
    conn: Connection,
    scope: ScopeRef,
    phrases: Sequence[str],
    limit: int,
    filters: Sequence[MetadataFilter],
    as_of: int,
) -> list[tuple[MemoryRecord, float]]:
    """search_text over WORD_INDEX for any of `phrases` (distinct FTS5 strings), listed
    rarest first, without scoring every match where that provably gives the same answer
    (MaxScore). FTS5's bm25 is a sum over the phrases (bm25.py), so a row holding only
    common phrases scores below their bound; the rows holding a rare phrase are scored
    in full (as "rare AND common" and "rare NOT common": every phrase in the same order,
    so each score is the single query's to the bit), and their k-th score (in the scope,
    valid, shown, filtered) above the common phrases' bound makes them the answer.
    Otherwise one query scores every match."""
    holdings = _rows_holding(conn, phrases)
    order = sorted(range(len(phrases)), key=lambda i: (holdings[i], i))
    phrases = [phrases[i] for i in order]
    holdings = [holdings[i] for i in order]
    ranked = None
    if sum(holdings) > WORD_SEARCH_SMALL:
        ranked = _ranked_by_rare_phrases(conn, scope, phrases, holdings, limit, filters, as_of)
    if ranked is None:
        match = " OR ".join(phrases)
        ranked = _ranked(conn, scope, WORD_INDEX, [match], limit, filters, as_of)
    return _with_records(conn, ranked)


def _ranked_by_rare_phrases(
    conn: Connection,
    scope: ScopeRef,
    phrases: list[str],
    holdings: list[int],
    limit: int,
    filters: Sequence[MetadataFilter],
    as_of: int,
) -> list[tuple[int, float]] | None:
    """The single query's ranking of `phrases` (rarest first, each held by `holdings`
    rows) found from the rows holding a rare one, or None when not proven cheaply."""
    held = list(itertools.accumulate(holdings))
    rare = max(1, sum(1 for n in held if n <= WORD_SEARCH_RARE))
    if held[rare - 1] < limit:  # too few rows to give a k-th score: no proof
        return None
    table_rows = 0
    while rare < len(phrases):
        either, common = " OR ".join(phrases[:rare]), " OR ".join(phrases[rare:])
        matches = [f"({either}) AND ({common})", f"({either}) NOT ({common})"]
        ranked = _ranked(conn, scope, WORD_INDEX, matches, limit, filters, as_of)
        kth = ranked[limit - 1][1] if len(ranked) >= limit else -math.inf
        table_rows = table_rows or _word_index_rows(conn)
        # the first phrase from which on a row holding only those stays below the k-th
        wider = next(
            (i for i in range(rare, len(phrases)) if bm25.bound(table_rows, holdings[i:]) < kth),
            len(phrases),
        )
        if wider == rare:
            return ranked
        if held[wider - 1] > WORD_SEARCH_WIDER_SHARE * held[-1]:
            return None
        rare = wider
    return None


def _rows_holding(conn: Connection, phrases: Sequence[str]) -> list[int]:
    """How many rows of WORD_INDEX (all scopes) hold each phrase: bm25's n."""
    counts = ", ".join(
        f"(SELECT count(*) FROM {WORD_INDEX} WHERE {WORD_INDEX} MATCH ?)" for _ in phrases
    )
    row = conn.execute(f"SELECT {counts}", list(phrases)).fetchone()
    return [int(n) for n in row]


def _word_index_rows(conn: Connection) -> int:
    """bm25's N for WORD_INDEX: its row count, from FTS5's averages record."""
    row = conn.execute(f"SELECT block FROM {WORD_INDEX}_data WHERE id = 1").fetchone()
    return bm25.total_rows(None if row is None else row[0])


def _ranked(
    conn: Connection,
    scope: ScopeRef,
    index: str,
    matches: Sequence[str],
    limit: int,
    filters: Sequence[MetadataFilter],
    as_of: int,
) -> list[tuple[int, float]]:
    """(row id, relevance) of the scope's records valid at `as_of` matching every filter
    whose text matches one of the FTS5 expressions `matches` in `index` (no row matching
    two); best first, ties by id."""
    found, score, params = _eligible_matches(scope, index, matches, filters, as_of)
    rows = conn.execute(
        f"SELECT r.row_id, {score} AS score {found} ORDER BY score DESC, r.id LIMIT ?",
        (*params, limit),
    )
    return [(int(row[0]), float(row[1])) for row in rows]


def _eligible_matches(
    scope: ScopeRef,
    index: str,
    matches: Sequence[str],
    filters: Sequence[MetadataFilter],
    as_of: int,
) -> tuple[str, str, list[Any]]:
    """The FROM and WHERE of the rows of `index` matching one of the FTS5 expressions
    `matches` (no row matching two) joined to their records (`r`) of the scope valid at
    `as_of`, shown and matching every filter; with the SQL of a row's relevance and the
    parameters."""
    clauses, params = _metadata_clauses(filters)
    # CROSS JOIN keeps the index as the outer loop: the other order probes the MATCH
    # expression once per record of the scope, tens of times slower. Each match is
    # checked through memory_records_for_search (the filters' metadata aside), and
    # the records are read for the answer alone.
    in_range = _scope(scope) * 2
    if len(matches) == 1:  # the index itself
        found, row_id, score = index, f"{index}.rowid", f"-bm25({index})"
        match = f"{index} MATCH ? AND {index}.{_IN_SCOPE_RANGE} AND "
        match_params: tuple[Any, ...] = (*matches, *in_range)
    else:
        union = " UNION ALL ".join(
            f"SELECT rowid AS row_id, -bm25({index}) AS score FROM {index} "
            f"WHERE {index} MATCH ? AND {_IN_SCOPE_RANGE}"
            for _ in matches
        )
        found, row_id, score, match = f"({union}) AS s", "s.row_id", "s.score", ""
        match_params = tuple(p for m in matches for p in (m, *in_range))
    sql = (
        f"FROM {found} CROSS JOIN memory_records AS r INDEXED BY memory_records_for_search "
        f"ON r.row_id = {row_id} WHERE {match}r.enterprise_id = ? AND r.scope_id = ? "
        f"AND {_VALID_AT} AND r.{_SHOWN}{clauses}"
    )
    return sql, score, [*match_params, *_scope(scope), as_of, as_of, *params]


def _with_records(
    conn: Connection, ranked: list[tuple[int, float]]
) -> list[tuple[MemoryRecord, float]]:
    if not ranked:
        return []
    records = {
        int(row[0]): codec.record_from_row(row[1:])
        for row in conn.execute(
            f"SELECT row_id, {codec.RECORD_COLUMNS_WITHOUT_EMBEDDING} FROM memory_records "
            f"WHERE row_id IN ({_marks(len(ranked))})",
            [row_id for row_id, _ in ranked],
        )
    }
    # a row erased meanwhile (its scope destroyed) is left out
    return [(records[row_id], score) for row_id, score in ranked if row_id in records]


def held_words(
    conn: Connection,
    scope: ScopeRef,
    words: Sequence[str],
    filters: Sequence[MetadataFilter],
    as_of: int,
) -> set[str]:
    """The `words` some record of the scope valid at `as_of`, shown and matching every
    filter holds as the word index reads it (Porter-stemmed): one unranked probe per word
    that stops at its first match."""
    held: set[str] = set()
    for word in words:
        if word.strip():
            found, _, params = _eligible_matches(scope, WORD_INDEX, [quoted(word)], filters, as_of)
            if conn.execute(f"SELECT 1 {found} LIMIT 1", params).fetchone():
                held.add(word)
    return held


def quoted(term: str) -> str:
    """An FTS5 string: the term as a phrase, never as query syntax."""
    return '"' + term.replace('"', '""') + '"'


def _metadata_clauses(filters: Sequence[MetadataFilter]) -> tuple[str, list[Any]]:
    """SQL agreeing with rules.matches_filter: NOT_EQUALS = key absent or different."""
    sql = ""
    params: list[Any] = []
    for flt in filters:
        negate = "NOT " if flt.operator is FilterOperator.NOT_EQUALS else ""
        sql += (
            f" AND {negate}EXISTS (SELECT 1 FROM json_each(metadata) "
            f"WHERE key = ? AND value IN ({_marks(len(flt.values))}))"
        )
        params.extend([flt.key, *flt.values])
    return sql, params


def find_nodes(
    conn: Connection, scope: ScopeRef, filters: Sequence[MetadataFilter], limit: int
) -> list[GraphNode]:
    sql = ""
    params: list[Any] = []
    for flt in filters:
        column = _NODE_COLUMNS.get(flt.key)
        marks = _marks(len(flt.values))
        if flt.operator is FilterOperator.NOT_EQUALS:
            if column is not None:
                sql += f" AND ({column} IS NULL OR {column} NOT IN ({marks}))"
                params.extend(flt.values)
        elif column is None:
            return []  # a key nodes do not have is never equal to anything
        else:
            sql += f" AND {column} IN ({marks})"
            params.extend(flt.values)
    rows = conn.execute(
        f"SELECT * FROM graph_nodes WHERE {_IN_SCOPE}{sql} ORDER BY node_id LIMIT ?",
        (*_scope(scope), *params, limit),
    )
    return [codec.node_from_row(row) for row in rows]


def get_nodes(conn: Connection, scope: ScopeRef, node_ids: Sequence[str]) -> list[GraphNode]:
    nodes: list[GraphNode] = []
    for batch in _batches(node_ids):
        rows = conn.execute(
            f"SELECT * FROM graph_nodes WHERE {_IN_SCOPE} AND node_id IN ({_marks(len(batch))})",
            (*_scope(scope), *batch),
        )
        nodes.extend(codec.node_from_row(row) for row in rows)
    return sorted(nodes, key=lambda node: node.node_id)


def edges_touching(
    conn: Connection,
    scope: ScopeRef,
    node_ids: Sequence[str],
    relations: Sequence[str],
    direction: Direction,
    as_of: int | None,
) -> list[GraphEdge]:
    ends = {
        Direction.OUTBOUND: ("source",),
        Direction.INBOUND: ("target",),
        Direction.ANY: ("source", "target"),
    }[direction]
    found: dict[str, GraphEdge] = {}
    for end in ends:
        for batch in _batches(node_ids):
            for edge in _edges_at(conn, scope, end, batch, relations, as_of):
                found.setdefault(edge.edge_id, edge)
    return [found[edge_id] for edge_id in sorted(found)]


def _edges_at(
    conn: Connection,
    scope: ScopeRef,
    end: str,
    node_ids: list[str],
    relations: Sequence[str],
    as_of: int | None,
) -> list[GraphEdge]:
    sql = f"SELECT * FROM graph_edges WHERE {_IN_SCOPE} AND {end} IN ({_marks(len(node_ids))})"
    params: list[Any] = [*_scope(scope), *node_ids]
    if relations:
        sql += f" AND relation IN ({_marks(len(set(relations)))})"
        params.extend(sorted(set(relations)))
    if as_of is not None:
        sql += f" AND {_VALID_AT}"
        params.extend([as_of, as_of])
    return [codec.edge_from_row(row) for row in conn.execute(sql, params)]


def get_edges(conn: Connection, scope: ScopeRef, edge_ids: Sequence[str]) -> list[GraphEdge]:
    edges: list[GraphEdge] = []
    for batch in _batches(edge_ids):
        rows = conn.execute(
            f"SELECT * FROM graph_edges WHERE {_IN_SCOPE} AND edge_id IN ({_marks(len(batch))})",
            (*_scope(scope), *batch),
        )
        edges.extend(codec.edge_from_row(row) for row in rows)
    return sorted(edges, key=lambda edge: edge.edge_id)


def get_step(conn: Connection, scope: ScopeRef, step_id: str) -> ExecutionLogStep | None:
    row = conn.execute(
        f"SELECT * FROM execution_log_steps WHERE {_IN_SCOPE} AND step_id = ?",
        (*_scope(scope), step_id),
    ).fetchone()
    return None if row is None else codec.step_from_row(row)


_SCOPE_COLUMNS = "enterprise_id, scope_id, kind, created_at, created_by, time_zone"


def get_scope(conn: Connection, scope: ScopeRef) -> ScopeRecord | None:
    row = conn.execute(
        f"SELECT {_SCOPE_COLUMNS} FROM scopes WHERE {_IN_SCOPE}", _scope(scope)
    ).fetchone()
    return None if row is None else codec.scope_record_from_row(row)


def list_scopes(
    conn: Connection, enterprise_id: str, after: str | None, limit: int | None
) -> list[ScopeRecord]:
    rows = conn.execute(
        f"SELECT {_SCOPE_COLUMNS} FROM scopes WHERE enterprise_id = ? AND scope_id > ? "
        "ORDER BY scope_id LIMIT ?",
        (enterprise_id, after or "", -1 if limit is None else limit),
    )
    return [codec.scope_record_from_row(row) for row in rows]


def walk_scopes(conn: Connection, after: ScopeRef | None, limit: int) -> list[ScopeRecord]:
    """Every enterprise's scopes by (enterprise id, scope id), after `after` (the key)."""
    start = ("", "") if after is None else _scope(after)
    rows = conn.execute(
        f"SELECT {_SCOPE_COLUMNS} FROM scopes WHERE (enterprise_id, scope_id) > (?, ?) "
        "ORDER BY enterprise_id, scope_id LIMIT ?",
        (*start, limit),
    )
    return [codec.scope_record_from_row(row) for row in rows]


def list_claims(
    conn: Connection,
    scope: ScopeRef,
    statuses: Sequence[Status] | None,
    after: str | None,
    limit: int,
) -> list[MemoryRecord]:
    """The scope's claims of those statuses (all when None) by id, without embeddings:
    the (enterprise_id, scope_id, id) key's index, the table read row by row."""
    sql = f"SELECT {codec.RECORD_COLUMNS_WITHOUT_EMBEDDING} FROM memory_records WHERE {_IN_SCOPE}"
    params: list[Any] = [*_scope(scope)]
    if after is not None:
        sql += " AND id > ?"
        params.append(after)
    if statuses is not None:
        wanted = sorted({status.value for status in statuses})
        sql += f" AND status IN ({_marks(len(wanted))})"
        params.extend(wanted)
    rows = conn.execute(f"{sql} ORDER BY id LIMIT ?", (*params, limit))
    return [codec.record_from_row(row) for row in rows]


def list_claims_page(
    conn: Connection,
    scope: ScopeRef,
    claim_filter: ClaimFilter,
    after: CardKey | None,
    limit: int,
) -> list[MemoryRecord]:
    """The memory card's claims, newest first (created_at DESC, id), after the card key
    `after`: `memory_records_by_created_at` read in its order, the filter checked on
    each row it reaches; filtered by a node, that node's rows of `claim_applies_to` (in
    the same order) instead, each joined to its claim."""
    params: list[Any] = [*_scope(scope)]
    if claim_filter.applies_to is None:
        sql = (
            f"SELECT {codec.RECORD_COLUMNS_WITHOUT_EMBEDDING} FROM memory_records AS m "
            "INDEXED BY memory_records_by_created_at "
            "WHERE m.enterprise_id = ? AND m.scope_id = ?"
        )
        order = "m"
    else:
        sql = (
            f"SELECT {_CARD_JOIN_COLUMNS} FROM claim_applies_to AS a "
            "JOIN memory_records AS m "
            "ON m.enterprise_id = a.enterprise_id AND m.scope_id = a.scope_id AND m.id = a.id "
            "WHERE a.enterprise_id = ? AND a.scope_id = ? AND a.node_id = ?"
        )
        params.append(claim_filter.applies_to)
        order = "a"
    if after is not None:
        created_us = codec.to_micros(after[0])
        sql += f" AND ({order}.created_at < ? OR ({order}.created_at = ? AND {order}.id > ?))"
        params.extend((created_us, created_us, after[1]))
    wanted = sorted(status.value for status in claim_filter.statuses)
    sql += f" AND m.status IN ({_marks(len(wanted))})"
    params.extend(wanted)
    for column, value in (("type", claim_filter.type), ("sensitivity", claim_filter.sensitivity)):
        if value is not None:
            sql += f" AND m.{column} = ?"
            params.append(value.value)
    sql += f" ORDER BY {order}.created_at DESC, {order}.id LIMIT ?"
    return [codec.record_from_row(row) for row in conn.execute(sql, (*params, limit))]


# The record's columns (RECORD_COLUMNS_WITHOUT_EMBEDDING) of `m` in a join.
_CARD_JOIN_COLUMNS = ", ".join(
    name if name == "NULL" else f"m.{name}"
    for name in (part.strip() for part in codec.RECORD_COLUMNS_WITHOUT_EMBEDDING.split(","))
)


def list_claim_states(
    conn: Connection, scope: ScopeRef, statuses: Sequence[Status] | None
) -> list[ClaimState]:
    """The scope's claims of those statuses (all when None) as ClaimStates, by id: one
    query of the columns they hold."""
    sql = f"SELECT {codec.CLAIM_STATE_COLUMNS} FROM memory_records WHERE {_IN_SCOPE}"
    params: list[Any] = [*_scope(scope)]
    if statuses is not None:
        wanted = sorted({status.value for status in statuses})
        sql += f" AND status IN ({_marks(len(wanted))})"
        params.extend(wanted)
    return [codec.claim_state_from_row(row) for row in conn.execute(f"{sql} ORDER BY id", params)]


def get_claim_states(conn: Connection, scope: ScopeRef, ids: Sequence[str]) -> list[ClaimState]:
    """The named claims that exist as ClaimStates, in id order."""
    states: list[ClaimState] = []
    for batch in _batches(ids):
        rows = conn.execute(
            f"SELECT {codec.CLAIM_STATE_COLUMNS} FROM memory_records "
            f"WHERE {_IN_SCOPE} AND id IN ({_marks(len(batch))})",
            (*_scope(scope), *batch),
        )
        states.extend(codec.claim_state_from_row(row) for row in rows)
    return sorted(states, key=lambda state: state.id)


def list_evidence(conn: Connection, scope: ScopeRef, memory_ids: Sequence[str]) -> list[Evidence]:
    lines: list[Evidence] = []
    for batch in _batches(memory_ids):
        rows = conn.execute(
            "SELECT id, ref, quote, recorded_at FROM evidence "
            f"WHERE {_IN_SCOPE} AND id IN ({_marks(len(batch))})",
            (*_scope(scope), *batch),
        )
        lines.extend(
            Evidence(
                memory_id=row[0],
                ref=row[1],
                quote=row[2],
                recorded_at=codec.required_datetime(row[3]),
            )
            for row in rows
        )
    return sorted(lines, key=lambda line: (line.memory_id, line.recorded_at, line.ref))


def get_brief(conn: Connection, scope: ScopeRef, variant: BriefVariant) -> StoredBrief | None:
    row = conn.execute(
        "SELECT text, token_count, expiries, compiled_at FROM briefs "
        f"WHERE {_IN_SCOPE} AND variant = ?",
        (*_scope(scope), variant.value),
    ).fetchone()
    if row is None:
        return None
    return StoredBrief(
        variant=variant,
        text=row[0],
        token_count=row[1],
        expiries=codec.times_from_json(row[2]),
        compiled_at=codec.from_micros(row[3]),
    )


def list_change_log(
    conn: Connection, scope: ScopeRef, limit: int, offset: int
) -> list[ChangeLogEntry]:
    """Newest first: the key's order (recorded_at descending, id, change)."""
    rows = conn.execute(
        "SELECT id, day, change, from_value, to_value, recorded_at FROM change_log "
        f"WHERE {_IN_SCOPE} ORDER BY recorded_at DESC, id, change LIMIT ? OFFSET ?",
        (*_scope(scope), limit, offset),
    )
    return [
        ChangeLogEntry(
            memory_id=row[0],
            day=row[1],
            change=row[2],
            from_value=row[3],
            to_value=row[4],
            recorded_at=codec.from_micros(row[5]),
        )
        for row in rows
    ]


def list_suppressions(
    conn: Connection, scope: ScopeRef, after: str | None, limit: int
) -> list[Suppression]:
    """The scope's suppression rules by id, after `after`, at most `limit`."""
    rows = conn.execute(
        "SELECT id, memory_id, about, summary, text, embedding, created_at, created_by "
        f"FROM suppressions WHERE {_IN_SCOPE} AND id > ? ORDER BY id LIMIT ?",
        (*_scope(scope), after or "", limit),
    )
    return [
        Suppression(
            id=row[0],
            memory_id=row[1],
            about=row[2],
            summary=row[3],
            text=row[4],
            embedding=codec.embedding_list(row[5]),
            created_at=codec.from_micros(row[6]),
            created_by=row[7],
        )
        for row in rows
    ]


def find_chunks_by_content(
    conn: Connection, scope: ScopeRef, content_hashes: Sequence[str], as_of: int | None
) -> list[MemoryRecord]:
    """Chunks with one of the content hashes (the content-hash index), valid at `as_of`."""
    validity, params = ("", ()) if as_of is None else (f" AND {_VALID_AT}", (as_of, as_of))
    records: list[MemoryRecord] = []
    for batch in _batches(content_hashes):
        rows = conn.execute(
            f"SELECT {codec.RECORD_COLUMNS} FROM memory_records WHERE {_IN_SCOPE} "
            f"AND content_hash IN ({_marks(len(batch))}){validity}",
            (*_scope(scope), *batch, *params),
        )
        records.extend(codec.record_from_row(row) for row in rows)
    return sorted(records, key=lambda record: record.id)


def get_formation_key(
    conn: Connection, scope: ScopeRef, formation_key: str
) -> FormationKeyRecord | None:
    row = conn.execute(
        "SELECT formation_key, fingerprint, receipt_json, committed_at FROM formation_keys "
        f"WHERE {_IN_SCOPE} AND formation_key = ?",
        (*_scope(scope), formation_key),
    ).fetchone()
    if row is None:
        return None
    return FormationKeyRecord(
        formation_key=row[0],
        fingerprint=row[1],
        receipt_json=row[2],
        committed_at=codec.from_micros(row[3]),
    )
