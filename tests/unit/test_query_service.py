"""memory:query's service layer: bounds, and the traversal it runs over the store."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.domain import retrieval, rules
from jennah.domain.models import (
    CommitPlan,
    Direction,
    FilterOperator,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    MetadataFilter,
    ScopeRef,
    ScoredRecord,
)
from jennah.domain.retrieval import RetrievalMode
from jennah.errors import InvalidArgument
from jennah.services.commands import GraphQuery, QueryCommand, SemanticQuery, Traversal
from jennah.services.query import MAX_DEPTH, MAX_TOP_K, QueryResult, query
from tests.unit.fakes import FakeStore

SCOPE = ScopeRef(enterprise_id="ent", scope_id="bot")
SEMANTIC = RetrievalMode.SEMANTIC
NOW = datetime(2026, 11, 29, tzinfo=UTC)
KEYS = {"NodeId": "node_id", "Label": "label", "NodeType": "node_type"}


class GraphStore:
    """Just enough of a store for the traversal: a chain a -> b -> c -> d, and e -> a."""

    def __init__(self) -> None:
        self.nodes = {n: GraphNode(node_id=n, label=n.upper()) for n in "abcde"}
        self.nodes["a"].node_type = "Person"
        pairs = [("a", "b"), ("b", "c"), ("c", "d"), ("e", "a")]
        self.edges = [
            GraphEdge(edge_id=f"{s}{t}", source=s, relation="next", target=t) for s, t in pairs
        ]
        self.searched: list[tuple[int, datetime]] = []

    def find_nodes(
        self, scope: ScopeRef, filters: Sequence[MetadataFilter], limit: int
    ) -> list[GraphNode]:
        def fields(n: GraphNode) -> dict[str, str]:
            raw = {k: getattr(n, attr) for k, attr in KEYS.items()}
            return {k: v for k, v in raw.items() if v is not None}

        hits = [
            n
            for n in self.nodes.values()
            if all(rules.matches_filter(fields(n), f) for f in filters)
        ]
        return hits[:limit]

    def get_nodes(self, scope: ScopeRef, node_ids: Sequence[str]) -> list[GraphNode]:
        return [self.nodes[n] for n in sorted(node_ids) if n in self.nodes]

    def edges_touching(
        self,
        scope: ScopeRef,
        node_ids: Sequence[str],
        relations: Sequence[str],
        direction: Direction,
        as_of: datetime | None,
    ) -> list[GraphEdge]:
        ids = set(node_ids)
        out = [
            e
            for e in self.edges
            if (direction is not Direction.INBOUND and e.source in ids)
            or (direction is not Direction.OUTBOUND and e.target in ids)
        ]
        return [e for e in out if not relations or e.relation in relations]

    def search_chunks(
        self,
        scope: ScopeRef,
        vector: Sequence[float],
        top_k: int,
        filters: Sequence[MetadataFilter],
        as_of: datetime,
    ) -> list[ScoredRecord]:
        self.searched.append((top_k, as_of))
        return []


def ask(command: QueryCommand, store: GraphStore | None = None) -> QueryResult:
    return query(command, store or GraphStore(), HashingEmbedder(), lambda: NOW)  # type: ignore[arg-type]


def start_at(
    node: str, depth: int, direction: Direction = Direction.OUTBOUND, limit: int = 100
) -> QueryCommand:
    return QueryCommand(
        scope=SCOPE,
        graph=GraphQuery(
            start_filters=[MetadataFilter(key="NodeId", values=[node])],
            traversal=Traversal(direction=direction, depth=depth),
            limit=limit,
        ),
    )


def reached(result: QueryResult) -> dict[str, int]:
    assert result.graph is not None
    return {r.node.node_id: r.depth for r in result.graph.nodes}


def test_outbound_traversal_reports_depths() -> None:
    assert reached(ask(start_at("a", 2))) == {"a": 0, "b": 1, "c": 2}


def test_inbound_and_any() -> None:
    assert reached(ask(start_at("a", 1, Direction.INBOUND))) == {"a": 0, "e": 1}
    assert reached(ask(start_at("a", 1, Direction.ANY))) == {"a": 0, "b": 1, "e": 1}


def test_depth_zero_returns_start_nodes_only() -> None:
    result = ask(start_at("a", 0))
    assert reached(result) == {"a": 0}
    assert result.graph is not None and result.graph.edges == []


def test_limit_caps_nodes_and_edges_join_returned_nodes_only() -> None:
    result = ask(start_at("a", 3, limit=2))
    assert reached(result) == {"a": 0, "b": 1}
    assert result.graph is not None
    assert [e.edge_id for e in result.graph.edges] == ["ab"]


def test_filter_on_class() -> None:
    command = QueryCommand(
        scope=SCOPE,
        graph=GraphQuery(start_filters=[MetadataFilter(key="NodeType", values=["Person"])]),
    )
    assert reached(ask(command)) == {"a": 0}


def test_semantic_defaults_to_now_and_honours_as_of() -> None:
    store = GraphStore()
    earlier = datetime(2020, 1, 1, tzinfo=UTC)
    ask(QueryCommand(scope=SCOPE, semantic=SemanticQuery(query_text="x", mode=SEMANTIC)), store)
    ask(
        QueryCommand(
            scope=SCOPE,
            semantic=SemanticQuery(query_text="x", as_of_valid=earlier, mode=SEMANTIC),
        ),
        store,
    )
    assert store.searched == [(10, NOW), (10, earlier)]


@pytest.mark.parametrize(
    ("command", "field"),
    [
        (QueryCommand(scope=SCOPE), None),
        (QueryCommand(scope=SCOPE, semantic=SemanticQuery(query_text=" ")), "semantic.queryText"),
        (
            QueryCommand(scope=SCOPE, semantic=SemanticQuery(query_text="x", top_k=0)),
            "semantic.topK",
        ),
        (
            QueryCommand(scope=SCOPE, semantic=SemanticQuery(query_text="x", top_k=MAX_TOP_K + 1)),
            "semantic.topK",
        ),
        (QueryCommand(scope=SCOPE, graph=GraphQuery(limit=0)), "graph.limit"),
        (start_at("a", MAX_DEPTH + 1), "graph.traversal.depth"),
        (
            QueryCommand(
                scope=SCOPE,
                graph=GraphQuery(start_filters=[MetadataFilter(key="Colour", values=["x"])]),
            ),
            "graph.start.filters[0].key",
        ),
        (
            QueryCommand(
                scope=SCOPE,
                semantic=SemanticQuery(
                    query_text="x", filters=[MetadataFilter(key="k", values=[])]
                ),
            ),
            "semantic.filters[0].value",
        ),
    ],
)
def test_bounds_name_the_field(command: QueryCommand, field: str | None) -> None:
    with pytest.raises(InvalidArgument) as err:
        ask(command)
    assert err.value.metadata.get("field") == field


class PartsStore:
    """Fixed parts: six chunks by meaning, two word matches (one strong, one weak)."""

    def __init__(self) -> None:
        self.records = {i: MemoryRecord(id=i, scope=SCOPE, text=i) for i in "abcdefwx"}

    def search_chunks(
        self,
        scope: ScopeRef,
        vector: Sequence[float],
        top_k: int,
        filters: Sequence[MetadataFilter],
        as_of: datetime,
    ) -> list[ScoredRecord]:
        return [ScoredRecord(record=self.records[i], score=0.5) for i in "abcdef"][:top_k]

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
        if fuzzy:
            return []
        return [
            ScoredRecord(record=self.records["w"], score=10.0),
            ScoredRecord(record=self.records["x"], score=4.0),  # under half the best
        ][:limit]

    def held_words(self, *args: Any) -> set[str]:
        return set()  # every word the word matches leave is a typo


def test_hybrid_leads_with_meaning_then_strong_word_matches_then_the_rest() -> None:
    command = QueryCommand(scope=SCOPE, semantic=SemanticQuery(query_text="w x", top_k=8))
    result = query(command, PartsStore(), HashingEmbedder(), lambda: NOW)  # type: ignore[arg-type]
    assert result.semantic is not None
    assert [hit.record.id for hit in result.semantic] == ["a", "b", "c", "w", "d", "e", "f"]
    assert [hit.score for hit in result.semantic][:2] == [1.0, 0.5]


class DatedStore(PartsStore):
    """PartsStore whose chunks d and x were valid in July 2023, the rest in May; it
    records how deep the meaning search was asked."""

    def __init__(self) -> None:
        super().__init__()
        for record_id, record in self.records.items():
            month = 7 if record_id in "dx" else 5
            record.valid_at = datetime(2023, month, 10, tzinfo=UTC)
        self.depths: list[int] = []

    def search_chunks(
        self,
        scope: ScopeRef,
        vector: Sequence[float],
        top_k: int,
        filters: Sequence[MetadataFilter],
        as_of: datetime,
    ) -> list[ScoredRecord]:
        self.depths.append(top_k)
        return super().search_chunks(scope, vector, top_k, filters, as_of)


def ranked(text: str, top_k: int, mode: RetrievalMode = RetrievalMode.HYBRID) -> list[str]:
    store = DatedStore()
    semantic = SemanticQuery(query_text=text, top_k=top_k, mode=mode)
    result = query(
        QueryCommand(scope=SCOPE, semantic=semantic), store, HashingEmbedder(), lambda: NOW
    )  # type: ignore[arg-type]
    assert result.semantic is not None
    return [hit.record.id for hit in result.semantic]


def test_hybrid_query_naming_a_month_puts_memories_valid_then_first() -> None:
    # by meaning a b c d e f, strong word match w: merged a b c w d e f; July holds d.
    assert ranked("w x in July", 3) == ["d", "a", "b"]
    assert ranked("w x in July 2023", 8) == ["d", "a", "b", "c", "w", "e", "f"]
    assert ranked("w x in July 2022", 3) == ["a", "b", "c"]
    assert ranked("w x", 3) == ["a", "b", "c"]


def test_a_named_period_widens_the_hybrid_meaning_search_only() -> None:
    store = DatedStore()
    for text, mode in [("w in July", RetrievalMode.HYBRID), ("w", RetrievalMode.HYBRID)]:
        semantic = SemanticQuery(query_text=text, top_k=3, mode=mode)
        query(QueryCommand(scope=SCOPE, semantic=semantic), store, HashingEmbedder(), lambda: NOW)  # type: ignore[arg-type]
    assert store.depths == [retrieval.PERIOD_POOL, 3]


def test_semantic_and_lexical_modes_ignore_a_named_period() -> None:
    assert ranked("w x in July", 3, RetrievalMode.SEMANTIC) == ["a", "b", "c"]
    assert ranked("w x in July", 3, RetrievalMode.LEXICAL) == ["w", "x"]


class SpeakerStore(DatedStore):
    """DatedStore whose chunks e and x were said by Melanie, the rest by Caroline."""

    def __init__(self) -> None:
        super().__init__()
        for record_id, record in self.records.items():
            record.metadata = {"speaker": "Melanie" if record_id in "ex" else "Caroline"}


def named(text: str, top_k: int, mode: RetrievalMode = RetrievalMode.HYBRID) -> list[str]:
    semantic = SemanticQuery(query_text=text, top_k=top_k, mode=mode)
    result = query(
        QueryCommand(scope=SCOPE, semantic=semantic), SpeakerStore(), HashingEmbedder(), lambda: NOW
    )  # type: ignore[arg-type]
    assert result.semantic is not None
    return [hit.record.id for hit in result.semantic]


def test_hybrid_query_naming_a_metadata_value_puts_its_memories_first() -> None:
    # merged a b c w d e f (x is a weak word match, not merged); Melanie said e. Only
    # the parts' candidates are reordered: at topK 3, e was not among them.
    assert named("w x Melanie", 5) == ["e", "a", "b", "c", "w"]
    assert named("w x Melanie", 3) == ["a", "b", "c"]
    assert named("w x Melanie", 8) == ["e", "a", "b", "c", "w", "d", "f"]
    assert named("w x Caroline", 3) == ["a", "b", "c"]
    assert named("w x", 3) == ["a", "b", "c"]


def test_a_named_period_goes_before_a_named_value() -> None:
    # July holds d (Caroline); Melanie said e: d first, then e, then the rest in order.
    assert named("w x Melanie in July", 4) == ["d", "e", "a", "b"]


def test_semantic_and_lexical_modes_ignore_a_named_value() -> None:
    assert named("w x Melanie", 3, RetrievalMode.SEMANTIC) == ["a", "b", "c"]
    assert named("w x Melanie", 3, RetrievalMode.LEXICAL) == ["w", "x"]


class OrderedEmbedder(HashingEmbedder):
    """Records when a query's embedding is started and when its vector is awaited."""

    def __init__(self, events: list[str]) -> None:
        super().__init__()
        self.events = events

    def embed_soon(self, text: str) -> Callable[[], list[float]]:
        self.events.append("embedding started")

        def vector() -> list[float]:
            self.events.append("vector awaited")
            return self.embed(text)

        return vector


class OrderedStore(PartsStore):
    def __init__(self, events: list[str]) -> None:
        super().__init__()
        self.events = events

    def search_chunks(self, *args: Any, **kwargs: Any) -> list[ScoredRecord]:
        self.events.append("by meaning")
        return super().search_chunks(*args, **kwargs)

    def search_words(self, *args: Any, **kwargs: Any) -> list[ScoredRecord]:
        self.events.append("by typo" if kwargs.get("fuzzy") else "by words")
        return super().search_words(*args, **kwargs)


def test_a_hybrid_query_searches_by_words_while_its_embedding_is_computed() -> None:
    events: list[str] = []
    command = QueryCommand(scope=SCOPE, semantic=SemanticQuery(query_text="w zzzzz", top_k=8))
    result = query(command, OrderedStore(events), OrderedEmbedder(events), lambda: NOW)  # type: ignore[arg-type]
    assert events == ["embedding started", "by words", "by typo", "vector awaited", "by meaning"]
    assert result.semantic is not None
    assert [hit.record.id for hit in result.semantic] == ["a", "b", "c", "w", "d", "e", "f"]


def test_a_lexical_query_starts_no_embedding() -> None:
    events: list[str] = []
    semantic = SemanticQuery(query_text="w", top_k=3, mode=RetrievalMode.LEXICAL)
    query(
        QueryCommand(scope=SCOPE, semantic=semantic),
        OrderedStore(events),
        OrderedEmbedder(events),
        lambda: NOW,
    )  # type: ignore[arg-type]
    assert events == ["by words"]


class TypoStore(FakeStore):
    """FakeStore holding a school trip, trains to Porto (travel, valid from June 2026) and
    a sports day; it records the words each typo-tolerant search is given."""

    def __init__(self) -> None:
        super().__init__()
        self.typo_searches: list[list[str]] = []
        june = datetime(2026, 6, 1, tzinfo=UTC)
        chunks = [
            MemoryRecord(id="a", scope=SCOPE, text="school trip to the sea"),
            MemoryRecord(id="b", scope=SCOPE, text="trains to Porto", valid_at=june,
                         metadata={"topic": "travel"}),
            MemoryRecord(id="c", scope=SCOPE, text="sports day"),
        ]  # fmt: skip
        self.apply(CommitPlan(scope=SCOPE, chunks=chunks))

    def search_words(self, *args: Any, **kwargs: Any) -> list[ScoredRecord]:
        if kwargs.get("fuzzy"):
            self.typo_searches.append(list(args[1]))
        return super().search_words(*args, **kwargs)


def typo_search(text: str, **semantic: Any) -> tuple[list[list[str]], list[str]]:
    """The words each typo-tolerant search of the query was given, and the answer's ids."""
    store = TypoStore()
    command = QueryCommand(scope=SCOPE, semantic=SemanticQuery(query_text=text, **semantic))
    result = query(command, store, HashingEmbedder(), lambda: NOW)
    return store.typo_searches, [hit.record.id for hit in result.semantic or []]


NOT_TRAVEL = MetadataFilter(key="topic", operator=FilterOperator.NOT_EQUALS, values=["travel"])


def test_a_word_a_chunk_holds_as_written_is_no_typo() -> None:
    # the one word match (the school trip) leaves "porto" and "lisbn"; b holds "porto"
    assert typo_search("school trip porto lisbn", top_k=1)[0] == [["lisbn"]]
    # held only by a chunk the search may return: filters met, valid at the query's time
    searched, _ = typo_search("school trip porto lisbn", top_k=1, filters=[NOT_TRAVEL])
    assert searched == [["porto", "lisbn"]]
    may = datetime(2026, 5, 1, tzinfo=UTC)
    assert typo_search("school trip porto lisbn", top_k=1, as_of_valid=may)[0] == [
        ["porto", "lisbn"]
    ]


def test_a_lexical_query_searches_a_word_no_chunk_it_may_return_holds_by_its_letters() -> None:
    lexical = RetrievalMode.LEXICAL
    assert typo_search("porto", mode=lexical) == ([], ["b"])  # a word match: no typo search
    # no travel: "porto" is no word of the chunks left, and "sports" shares "por" and "ort"
    assert typo_search("porto", mode=lexical, filters=[NOT_TRAVEL]) == ([["porto"]], ["c"])
