"""Contract: semantic search is an exact cosine ranking over valid, matching chunks."""

from __future__ import annotations

from datetime import datetime

import pytest

from jennah.domain.models import FilterOperator, MetadataFilter, ScopeRef
from jennah.ports.store import MemoryStore
from jennah.services.commands import ChunkInput
from tests.contract.conftest import (
    EMBEDDER,
    NOW,
    assert_same_ranking,
    at,
    chunk_id,
    commit_items,
    expected_search,
    search,
    search_ids,
)

EQ, NE, IN = FilterOperator.EQUALS, FilterOperator.NOT_EQUALS, FilterOperator.IN

CORPUS = [
    ChunkInput(text="tea with lemon", metadata={"topic": "food", "lang": "en"}),
    ChunkInput(text="green tea in Lisbon", metadata={"topic": "travel", "lang": "en"}),
    ChunkInput(text="cha verde com limao", metadata={"topic": "food", "lang": "pt"}),
    ChunkInput(text="tea tea tea", metadata={"lang": "en"}),
    ChunkInput(text="coffee without tea", metadata={"topic": "food"}),
    ChunkInput(text="trains to Porto", metadata={"topic": "travel", "lang": "pt"}),
    ChunkInput(text="tea ceremony history", metadata={"topic": "culture", "lang": "en"}),
    ChunkInput(text="future tea plans", metadata={"topic": "food"}, valid_at=at(2031)),
    ChunkInput(text="old tea habit", metadata={"topic": "food"}, valid_at=at(2020)),
]


@pytest.fixture
def corpus(store: MemoryStore, scope: ScopeRef) -> ScopeRef:
    commit_items(store, scope, chunks=CORPUS)
    return scope


def _check(
    store: MemoryStore,
    scope: ScopeRef,
    text: str,
    *,
    top_k: int = 100,
    filters: list[MetadataFilter] | None = None,
    as_of: datetime | None = None,
) -> list[str]:
    records = store.list_chunks(scope, None, 1000, 0)
    actual = search(store, scope, text, top_k=top_k, filters=filters or [], as_of=as_of)
    expected = expected_search(records, text, top_k, filters or [], as_of or NOW)
    assert_same_ranking(actual, expected)
    return [record_id for record_id, _ in actual]


def _ids(*texts: str) -> set[str]:
    by_text = {c.text: chunk_id(c.text, c.valid_at) for c in CORPUS}
    return {by_text[t] for t in texts}


def test_results_are_the_exact_cosine_ranking(store: MemoryStore, corpus: ScopeRef) -> None:
    ranked = _check(store, corpus, "tea")
    assert ranked[0] == chunk_id("tea tea tea")
    assert chunk_id("future tea plans", at(2031)) not in ranked  # not yet valid at NOW


def test_scores_are_cosine_similarity(store: MemoryStore, corpus: ScopeRef) -> None:
    hits = dict(search(store, corpus, "tea tea tea"))
    assert hits[chunk_id("tea tea tea")] == pytest.approx(1.0, abs=1e-6)
    assert hits[chunk_id("trains to Porto")] == pytest.approx(0.0, abs=1e-6)


def test_top_k_is_respected(store: MemoryStore, corpus: ScopeRef) -> None:
    assert len(_check(store, corpus, "tea lemon", top_k=3)) == 3
    assert len(_check(store, corpus, "tea lemon", top_k=1)) == 1
    assert len(_check(store, corpus, "tea lemon", top_k=100)) == 8  # every chunk valid at NOW


def test_ties_are_broken_by_id(store: MemoryStore, scope: ScopeRef) -> None:
    same = [ChunkInput(text="same words here", valid_at=at(2000 + i)) for i in range(6)]
    commit_items(store, scope, chunks=[*same, ChunkInput(text="other words")])
    hits = search(store, scope, "same words here", top_k=4)
    expected_ids = sorted(chunk_id(c.text, c.valid_at) for c in same)[:4]
    assert [record_id for record_id, _ in hits] == expected_ids
    assert [score for _, score in hits] == pytest.approx([1.0] * 4, abs=1e-6)


def test_equals_filter(store: MemoryStore, corpus: ScopeRef) -> None:
    ranked = _check(store, corpus, "tea", filters=[MetadataFilter(key="topic", values=["food"])])
    assert set(ranked) == _ids(
        "tea with lemon", "cha verde com limao", "coffee without tea", "old tea habit"
    )


def test_not_equals_filter_matches_absent_keys(store: MemoryStore, corpus: ScopeRef) -> None:
    flt = MetadataFilter(key="topic", operator=NE, values=["food"])
    ranked = _check(store, corpus, "tea", filters=[flt])
    assert set(ranked) == _ids(
        "green tea in Lisbon", "tea tea tea", "trains to Porto", "tea ceremony history"
    )


def test_not_equals_on_a_key_nobody_has_matches_everything(
    store: MemoryStore, corpus: ScopeRef
) -> None:
    flt = MetadataFilter(key="missing", operator=NE, values=["x"])
    assert len(_check(store, corpus, "tea", filters=[flt])) == 8


def test_equals_on_a_key_nobody_has_matches_nothing(store: MemoryStore, corpus: ScopeRef) -> None:
    assert _check(store, corpus, "tea", filters=[MetadataFilter(key="missing", values=["x"])]) == []


def test_in_filter(store: MemoryStore, corpus: ScopeRef) -> None:
    flt = MetadataFilter(key="topic", operator=IN, values=["travel", "culture", "nope"])
    ranked = _check(store, corpus, "tea", filters=[flt])
    assert set(ranked) == _ids("green tea in Lisbon", "trains to Porto", "tea ceremony history")


def test_filters_are_anded(store: MemoryStore, corpus: ScopeRef) -> None:
    filters = [
        MetadataFilter(key="topic", operator=IN, values=["food", "travel"]),
        MetadataFilter(key="lang", operator=NE, values=["pt"]),
        MetadataFilter(key="lang", values=["en"]),
    ]
    ranked = _check(store, corpus, "tea", filters=filters)
    assert set(ranked) == _ids("tea with lemon", "green tea in Lisbon")


def test_filters_with_as_of(store: MemoryStore, corpus: ScopeRef) -> None:
    flt = MetadataFilter(key="topic", values=["food"])
    ranked = _check(store, corpus, "tea", filters=[flt], as_of=at(2032))
    assert chunk_id("future tea plans", at(2031)) in ranked
    early = _check(store, corpus, "tea", filters=[flt], as_of=at(2019))
    assert set(early) == _ids("tea with lemon", "cha verde com limao", "coffee without tea")


def test_filters_follow_rewritten_metadata(store: MemoryStore, corpus: ScopeRef) -> None:
    flt = MetadataFilter(key="topic", values=["food"])
    before = _check(store, corpus, "tea", filters=[flt])
    assert chunk_id("tea with lemon") in before
    commit_items(store, corpus, chunks=[ChunkInput(text="tea with lemon", metadata={"x": "y"})])
    after = _check(store, corpus, "tea", filters=[flt])
    assert chunk_id("tea with lemon") not in after
    assert chunk_id("tea with lemon") in _check(
        store, corpus, "tea", filters=[MetadataFilter(key="x", values=["y"])]
    )


def test_new_chunks_are_searchable_at_once(store: MemoryStore, corpus: ScopeRef) -> None:
    _check(store, corpus, "tea")
    commit_items(store, corpus, chunks=[ChunkInput(text="tea tea tea tea lemon")])
    newest = chunk_id("tea tea tea tea lemon")
    assert _check(store, corpus, "tea tea tea tea lemon", top_k=1) == [newest]


def test_empty_scope_returns_nothing(store: MemoryStore, scope: ScopeRef) -> None:
    assert search_ids(store, scope, "anything") == []


def test_store_search_takes_a_vector(store: MemoryStore, corpus: ScopeRef) -> None:
    hits = store.search_chunks(corpus, EMBEDDER.embed("lemon"), 2, [], NOW)
    assert [h.record.text for h in hits][:1] == ["tea with lemon"]
    assert hits[0].record.metadata == {"topic": "food", "lang": "en"}
    assert hits[0].score > hits[1].score


def test_a_search_answers_whole_records_without_their_embedding(
    store: MemoryStore, corpus: ScopeRef
) -> None:
    hits = store.search_chunks(corpus, EMBEDDER.embed("lemon"), 3, [], NOW)
    stored = {r.id: r for r in store.get_chunks(corpus, [h.record.id for h in hits])}
    assert len(hits) == 3 and all(r.embedding is not None for r in stored.values())
    for hit in hits:
        assert hit.record.embedding is None
        assert hit.record == stored[hit.record.id].model_copy(update={"embedding": None})
