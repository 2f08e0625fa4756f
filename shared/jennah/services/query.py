"""memory:query: semantic search and graph traversal, now or as of a valid time.

The semantic section searches in one of three modes (`RetrievalMode`): by meaning
(the store's vector search), by words (the store's word search, then its
typo-tolerant one for the words it did not find), or both (the default), merged
as the seed design says: the top few by meaning lead, the keyword matches follow
(word matches at least half as relevant as the best one), the rest of the semantic
list fills in (`retrieval.interleave`). A hybrid query that names a value of a
memory's metadata (a speaker, a project) moves the merged memories carrying it
first (`retrieval.promote_named`); one that names a month or a year draws on
PERIOD_POOL results by meaning and moves the merged memories valid in that period
first (`retrieval.promote_within`). Every part gets the same
filters and valid time, so every mode answers from the same eligible memories.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime

from pydantic import BaseModel, Field

from jennah.domain.models import (
    Direction,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    MetadataFilter,
    ScopeRef,
    ScoredRecord,
)
from jennah.domain.retrieval import (
    PERIOD_POOL,
    RetrievalMode,
    fuzzy_words,
    interleave,
    lexical_order,
    merged_score,
    named_period,
    promote_named,
    promote_within,
    query_words,
    strong_matches,
    unmatched_words,
)
from jennah.domain.rules import (
    MAX_DEPTH,
    MAX_FILTER_VALUES,
    MAX_FILTERS,
    MAX_GRAPH_LIMIT,
    MAX_QUERY_TEXT_LENGTH,
    MAX_TOP_K,
    NODE_FILTER_KEYS,
)
from jennah.errors import InvalidArgument
from jennah.ports.embedder import Embedder
from jennah.ports.store import MemoryStore
from jennah.services.commands import GraphQuery, QueryCommand, SemanticQuery


class ReachedNode(BaseModel):
    node: GraphNode
    depth: int


class GraphResult(BaseModel):
    nodes: list[ReachedNode] = Field(default_factory=list)
    edges: list[GraphEdge] = Field(default_factory=list)


class QueryResult(BaseModel):
    semantic: list[ScoredRecord] | None = None
    graph: GraphResult | None = None
    embedding_ms: float = 0.0
    search_ms: float = 0.0


def query(
    command: QueryCommand,
    store: MemoryStore,
    embedder: Embedder,
    now: Callable[[], datetime],
) -> QueryResult:
    """Answer the semantic and/or graph sections of one query."""
    if command.semantic is None and command.graph is None:
        raise InvalidArgument(
            "the query is empty: give a semantic section, a graph section, or both"
        )
    instant = now()
    result = QueryResult()
    if command.semantic is not None:
        _semantic(command.scope, command.semantic, store, embedder, instant, result)
    if command.graph is not None:
        result.graph = _graph(command.scope, command.graph, store, instant)
    return result


def _semantic(
    scope: ScopeRef,
    semantic: SemanticQuery,
    store: MemoryStore,
    embedder: Embedder,
    instant: datetime,
    result: QueryResult,
) -> None:
    if not semantic.query_text.strip():
        raise InvalidArgument("semantic.queryText must not be empty", field="semantic.queryText")
    if len(semantic.query_text) > MAX_QUERY_TEXT_LENGTH:
        raise InvalidArgument(
            f"semantic.queryText is {len(semantic.query_text)} characters; at most "
            f"{MAX_QUERY_TEXT_LENGTH} are allowed",
            field="semantic.queryText",
        )
    if not 1 <= semantic.top_k <= MAX_TOP_K:
        raise InvalidArgument(
            f"semantic.topK must be between 1 and {MAX_TOP_K}; got {semantic.top_k}",
            field="semantic.topK",
        )
    _check_filters(semantic.filters, "semantic.filters", keys=None)
    search = _Search(scope, store, semantic, semantic.as_of_valid or instant)
    started = time.perf_counter()
    if semantic.mode is RetrievalMode.LEXICAL:
        result.semantic = search.lexical()
        result.search_ms = (time.perf_counter() - started) * 1000
        return
    vector = QueryVector(embedder, semantic.query_text)
    if semantic.mode is RetrievalMode.SEMANTIC:
        result.semantic = search.by_meaning(vector(), semantic.top_k)
    else:
        result.semantic = search.hybrid(vector)
    result.embedding_ms = vector.embedding_ms
    result.search_ms = (time.perf_counter() - started) * 1000 - vector.embedding_ms


class QueryVector:
    """The query text's embedding, started at once (`Embedder.embed_soon`) and awaited
    when first needed, so a hybrid search runs its word parts meanwhile. `embedding_ms`
    is the time the embedding took from the caller: starting it, then waiting for it."""

    def __init__(self, embedder: Embedder, text: str) -> None:
        started = time.perf_counter()
        self._answer = embedder.embed_soon(text)
        self._vector: list[float] | None = None
        self.embedding_ms = (time.perf_counter() - started) * 1000

    def __call__(self) -> list[float]:
        if self._vector is None:
            started = time.perf_counter()
            self._vector = self._answer()
            self.embedding_ms += (time.perf_counter() - started) * 1000
        return self._vector


# With a `keep` rule (memory:search's), a part whose results the rule thins asks the
# store again this many times deeper, up to KEEP_MAX_DEPTH results.
KEEP_DEPTH_GROWTH = 4
KEEP_MAX_DEPTH = 400


def hybrid_search(
    scope: ScopeRef,
    store: MemoryStore,
    text: str,
    vector: Callable[[], list[float]],
    limit: int,
    as_of: datetime,
    keep: Callable[[MemoryRecord], bool],
) -> list[ScoredRecord]:
    """memory:query's HYBRID semantic section of `text` (its embedding `vector()`, asked
    for once the word parts are done), `limit` results, no filter, of the records `keep`
    keeps: each part (by meaning, by words, by words with a typo) is taken from the kept
    records only, then merged. The search memory:search runs."""
    semantic = SemanticQuery(query_text=text, top_k=limit)
    return _Search(scope, store, semantic, as_of, keep).hybrid(vector)


def typo_words(
    store: MemoryStore,
    scope: ScopeRef,
    unmatched: Sequence[str],
    filters: Sequence[MetadataFilter],
    as_of: datetime,
) -> list[str]:
    """The words worth a typo-tolerant search: of the `unmatched` ones (those a search's
    word matches do not hold), those no chunk the search may return (valid at `as_of`,
    shown, filters met) holds as written. A held word is no typo: its letters would only
    find other words."""
    if not unmatched:
        return []
    held = store.held_words(scope, unmatched, filters, as_of)
    return [word for word in unmatched if word not in held]


class _Search:
    """The parts of one semantic section, each under the section's filters and valid time
    (and of the records `keep` keeps, when given)."""

    def __init__(
        self,
        scope: ScopeRef,
        store: MemoryStore,
        semantic: SemanticQuery,
        as_of: datetime,
        keep: Callable[[MemoryRecord], bool] | None = None,
    ) -> None:
        self.scope, self.store, self.as_of, self.keep = scope, store, as_of, keep
        self.top_k, self.filters = semantic.top_k, semantic.filters
        self.words = query_words(semantic.query_text)
        self.period = named_period(semantic.query_text)

    def _kept(self, fetch: Callable[[int], list[ScoredRecord]], limit: int) -> list[ScoredRecord]:
        """The first `limit` results of `fetch(depth)` that `keep` keeps: deeper while it
        thinned a full answer (up to KEEP_MAX_DEPTH)."""
        depth = limit
        while True:
            found = fetch(depth)
            if self.keep is None:
                return found
            kept = [hit for hit in found if self.keep(hit.record)]
            if len(kept) >= limit or len(found) < depth or depth >= KEEP_MAX_DEPTH:
                return kept[:limit]
            depth = min(depth * KEEP_DEPTH_GROWTH, KEEP_MAX_DEPTH)

    def by_meaning(self, vector: list[float], limit: int) -> list[ScoredRecord]:
        return self._kept(
            lambda depth: self.store.search_chunks(
                self.scope, vector, depth, self.filters, self.as_of
            ),
            limit,
        )

    def by_words(self, limit: int) -> list[ScoredRecord]:
        if not self.words:
            return []
        return self._kept(
            lambda depth: self.store.search_words(
                self.scope, self.words, depth, self.filters, self.as_of
            ),
            limit,
        )

    def unmatched(self, exact: list[ScoredRecord]) -> list[str]:
        """The words that may be typos: those (long enough) the word matches do not hold,
        so a query of known words pays nothing for the typo-tolerant search."""
        return fuzzy_words(unmatched_words(self.words, (h.record.text for h in exact)))

    def typo_words(self, unmatched: list[str]) -> list[str]:
        return typo_words(self.store, self.scope, unmatched, self.filters, self.as_of)

    def by_typo(self, words: list[str], limit: int) -> list[ScoredRecord]:
        if not words:
            return []
        return self._kept(
            lambda depth: self.store.search_words(
                self.scope, words, depth, self.filters, self.as_of, fuzzy=True
            ),
            limit,
        )

    def lexical(self) -> list[ScoredRecord]:
        """The word matches, then the typo-tolerant matches; each with its store score."""
        exact = self.by_words(self.top_k)
        fuzzy: list[ScoredRecord] = []
        if len(exact) < self.top_k:
            fuzzy = self.by_typo(self.typo_words(self.unmatched(exact)), self.top_k)
        found = {hit.record.id: hit for hit in [*fuzzy, *exact]}
        order = lexical_order([h.record.id for h in exact], [h.record.id for h in fuzzy])
        return [found[record_id] for record_id in order[: self.top_k]]

    def hybrid(self, vector: Callable[[], list[float]]) -> list[ScoredRecord]:
        """The top few by meaning, the strong word matches and the best typo-tolerant
        matches (one per word the word matches leave unmatched, held words counted), the
        rest by meaning; those whose metadata the query names go first; each part needs
        no more than topK, except the meaning part of a query naming a period
        (PERIOD_POOL), whose memories valid in that period then go first. The score is
        the merged rank's (1 / rank). The word parts run first: they do not need
        `vector()`, which the embedder may still be computing meanwhile."""
        depth = self.top_k if self.period is None else max(self.top_k, PERIOD_POOL)
        exact = self.by_words(self.top_k)
        unmatched = self.unmatched(exact)
        typo = self.by_typo(self.typo_words(unmatched), len(unmatched))
        semantic = self.by_meaning(vector(), depth)
        found = {hit.record.id: hit.record for hit in [*semantic, *exact, *typo]}
        strong = strong_matches([(h.record.id, h.score) for h in exact])
        keyword = lexical_order(strong, [h.record.id for h in typo])
        merged = interleave([h.record.id for h in semantic], keyword)
        metadata = {record_id: record.metadata for record_id, record in found.items()}
        merged = promote_named(merged, metadata, self.words)
        if self.period is not None:
            valid_at = {record_id: record.valid_at for record_id, record in found.items()}
            merged = promote_within(merged, valid_at, self.period)
        merged = merged[: self.top_k]
        return [
            ScoredRecord(record=found[record_id], score=merged_score(rank))
            for rank, record_id in enumerate(merged, start=1)
        ]


def _check_filters(filters: list[MetadataFilter], field: str, keys: tuple[str, ...] | None) -> None:
    if len(filters) > MAX_FILTERS:
        raise InvalidArgument(
            f"{field} has {len(filters)} filters; at most {MAX_FILTERS} are allowed", field=field
        )
    for i, flt in enumerate(filters):
        if keys is not None and flt.key not in keys:
            raise InvalidArgument(
                f"{field}[{i}].key {flt.key!r} is not a node filter key; use one of "
                + ", ".join(keys),
                field=f"{field}[{i}].key",
            )
        if not flt.values:
            raise InvalidArgument(
                f"{field}[{i}] needs a value (or values for OPERATOR_IN)",
                field=f"{field}[{i}].value",
            )
        if len(flt.values) > MAX_FILTER_VALUES:
            raise InvalidArgument(
                f"{field}[{i}].values has {len(flt.values)} values; at most "
                f"{MAX_FILTER_VALUES} are allowed",
                field=f"{field}[{i}].values",
            )


def _graph(
    scope: ScopeRef, graph: GraphQuery, store: MemoryStore, instant: datetime
) -> GraphResult:
    if not 1 <= graph.limit <= MAX_GRAPH_LIMIT:
        raise InvalidArgument(
            f"graph.limit must be between 1 and {MAX_GRAPH_LIMIT}; got {graph.limit}",
            field="graph.limit",
        )
    _check_filters(graph.start_filters, "graph.start.filters", keys=NODE_FILTER_KEYS)
    traversal = graph.traversal
    depth = traversal.depth if traversal is not None else 0
    if not 0 <= depth <= MAX_DEPTH:
        raise InvalidArgument(
            f"graph.traversal.depth must be between 0 and {MAX_DEPTH}; got {depth}",
            field="graph.traversal.depth",
        )
    as_of = graph.as_of_valid or instant
    start = store.find_nodes(scope, graph.start_filters, graph.limit)
    out = GraphResult(nodes=[ReachedNode(node=n, depth=0) for n in start])
    seen = {n.node_id for n in start}
    edges: dict[str, GraphEdge] = {}
    frontier = [n.node_id for n in start]
    for level in range(1, depth + 1):
        if not frontier or len(seen) >= graph.limit:
            break
        assert traversal is not None
        found = store.edges_touching(
            scope, frontier, traversal.relations, traversal.direction, as_of
        )
        next_ids: list[str] = []
        for edge in found:
            edges.setdefault(edge.edge_id, edge)
            for node_id in _far_ends(edge, frontier, traversal.direction):
                if node_id not in seen and len(seen) + len(next_ids) < graph.limit:
                    seen.add(node_id)
                    next_ids.append(node_id)
        reached = store.get_nodes(scope, next_ids)
        out.nodes.extend(ReachedNode(node=n, depth=level) for n in reached)
        frontier = [n.node_id for n in reached]
    kept = {r.node.node_id for r in out.nodes}
    out.edges = [e for e in edges.values() if e.source in kept and e.target in kept]
    return out


def _far_ends(edge: GraphEdge, frontier: list[str], direction: Direction) -> list[str]:
    ends: list[str] = []
    members = set(frontier)
    if direction in (Direction.OUTBOUND, Direction.ANY) and edge.source in members:
        ends.append(edge.target)
    if direction in (Direction.INBOUND, Direction.ANY) and edge.target in members:
        ends.append(edge.source)
    return ends
