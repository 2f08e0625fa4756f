"""Contract: memory:query's word search and hybrid merge, on every store.

The word search (LEXICAL) finds chunks by their words, then by words with a
typo; HYBRID merges the semantic list, the word list and the typo-tolerant
list: the top few by meaning lead, the keyword matches follow, the rest by meaning
fills in; the memories whose metadata the query names go first. Every part answers
only from chunks valid at the query's instant that match every filter, in the query's
scope.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from jennah.domain import retrieval
from jennah.domain.models import FilterOperator, MetadataFilter, ScopeRef, ScoredRecord, Status
from jennah.domain.retrieval import RetrievalMode
from jennah.ports.store import MemoryStore
from jennah.services.commands import ChunkInput, SupersessionInput
from tests.contract.conftest import (
    EMBEDDER,
    NOW,
    at,
    chunk_id,
    commit_items,
    new_scope,
    search,
    search_ids,
)

LEXICAL, HYBRID, SEMANTIC = RetrievalMode.LEXICAL, RetrievalMode.HYBRID, RetrievalMode.SEMANTIC
EQ = FilterOperator.EQUALS

CORPUS = [
    ChunkInput(text="tea with lemon", metadata={"topic": "food"}),
    ChunkInput(text="green tea in Lisbon", metadata={"topic": "travel"}),
    ChunkInput(text="tea tea tea", metadata={"topic": "food"}),
    ChunkInput(text="coffee without sugar", metadata={"topic": "food"}),
    ChunkInput(text="trains to Porto", metadata={"topic": "travel"}),
    ChunkInput(text="the tea ceremony history", metadata={"topic": "culture"}),
    ChunkInput(text="future greyhound plans", metadata={"topic": "pets"}, valid_at=at(2031)),
    ChunkInput(text="an old greyhound habit", metadata={"topic": "pets"}, valid_at=at(2020)),
]


def cid(text: str) -> str:
    (chunk,) = [c for c in CORPUS if c.text == text]
    return chunk_id(chunk.text, chunk.valid_at)


@pytest.fixture
def corpus(store: MemoryStore, scope: ScopeRef) -> ScopeRef:
    commit_items(store, scope, chunks=CORPUS)
    return scope


def lexical(store: MemoryStore, scope: ScopeRef, text: str, **kwargs: object) -> list[str]:
    return search_ids(store, scope, text, mode=LEXICAL, **kwargs)


def test_lexical_finds_the_chunks_holding_a_word(store: MemoryStore, corpus: ScopeRef) -> None:
    assert lexical(store, corpus, "Porto") == [cid("trains to Porto")]
    assert set(lexical(store, corpus, "coffee or trains?")) == {
        cid("coffee without sugar"),
        cid("trains to Porto"),
    }


def test_lexical_ranks_the_chunk_holding_more_and_rarer_words_first(
    store: MemoryStore, corpus: ScopeRef
) -> None:
    found = lexical(store, corpus, "what tea with lemon?")
    assert found[0] == cid("tea with lemon")
    assert set(found) == {
        cid("tea with lemon"),
        cid("green tea in Lisbon"),
        cid("tea tea tea"),
        cid("the tea ceremony history"),
    }


def test_lexical_ignores_question_words_and_pronouns(store: MemoryStore, corpus: ScopeRef) -> None:
    # "the", "what", "did", "you", "with" are stopwords: nothing is left to search for
    assert lexical(store, corpus, "What did you do with the?") == []
    assert retrieval.query_words("What did Caroline do with the tea?") == ["caroline", "tea"]


def test_lexical_answers_at_the_valid_time(store: MemoryStore, corpus: ScopeRef) -> None:
    assert lexical(store, corpus, "greyhound") == [cid("an old greyhound habit")]
    assert lexical(store, corpus, "greyhound", as_of=at(2019)) == []
    assert set(lexical(store, corpus, "greyhound", as_of=at(2032))) == {
        cid("future greyhound plans"),
        cid("an old greyhound habit"),
    }


def test_lexical_applies_every_filter(store: MemoryStore, corpus: ScopeRef) -> None:
    food = [MetadataFilter(key="topic", operator=EQ, values=["food"])]
    assert set(lexical(store, corpus, "tea", filters=food)) == {
        cid("tea with lemon"),
        cid("tea tea tea"),
    }
    not_food = [MetadataFilter(key="topic", operator=FilterOperator.NOT_EQUALS, values=["food"])]
    assert set(lexical(store, corpus, "tea", filters=not_food)) == {
        cid("green tea in Lisbon"),
        cid("the tea ceremony history"),
    }


def test_lexical_respects_top_k(store: MemoryStore, corpus: ScopeRef) -> None:
    assert len(lexical(store, corpus, "tea", top_k=2)) == 2


@pytest.mark.parametrize(
    ("typo", "text"),
    [
        ("ceremoni", "the tea ceremony history"),
        ("Lisbn", "green tea in Lisbon"),
        ("greyhuond", "an old greyhound habit"),
    ],
)
def test_a_word_with_one_typo_still_finds_its_memory(
    store: MemoryStore, corpus: ScopeRef, typo: str, text: str
) -> None:
    assert lexical(store, corpus, f"what about {typo}?")[0] == cid(text)
    # in the hybrid merge, keyword matches follow the top few by meaning
    assert cid(text) in search_ids(store, corpus, typo, mode=HYBRID, top_k=retrieval.MERGE_LEAD + 1)


def test_the_typo_tolerant_search_answers_at_the_valid_time_and_under_filters(
    store: MemoryStore, corpus: ScopeRef
) -> None:
    assert cid("future greyhound plans") not in lexical(store, corpus, "futura")
    assert lexical(store, corpus, "futura", as_of=at(2032))[0] == cid("future greyhound plans")
    culture = [MetadataFilter(key="topic", operator=EQ, values=["culture"])]
    assert lexical(store, corpus, "Lisbn", filters=culture) == []


def test_a_word_a_chunk_holds_as_written_is_no_typo(store: MemoryStore, scope: ScopeRef) -> None:
    """A word some chunk the search may return (valid at its time, shown, filters met)
    holds as written is held (`held_words`): the query service does not look for it by
    its letters. The store's typo-tolerant search looks for every word it is given."""
    commit_items(
        store,
        scope,
        chunks=[
            ChunkInput(text="trains to Porto", metadata={"topic": "travel"}),
            ChunkInput(text="sports day at school", metadata={"topic": "kids"}),
            ChunkInput(text="ferry to Faro", valid_at=at(2031)),
            ChunkInput(text="lighthouse at Aveiro", status=Status.DORMANT),
        ],
    )
    words = ["porto", "portto", "sports", "faro", "aveiro"]
    assert store.held_words(scope, words, [], NOW) == {"porto", "sports"}
    assert store.held_words(scope, words, [], at(2032)) == {"porto", "sports", "faro"}
    assert store.held_words(scope, words, NOT_TRAVEL, NOW) == {"sports"}
    assert store.held_words(new_scope(scope.enterprise_id), words, [], NOW) == set()
    # "porto" and "sports" share the trigrams "por" and "ort"
    found = store.search_words(scope, ["porto"], 10, [], NOW, fuzzy=True)
    assert chunk_id("sports day at school") in [hit.record.id for hit in found]
    # the word match (sports day: two words) leaves "porto" and "portto", and Porto is held
    recorded, text = TypoSearches(store), "sports school porto portto"
    for filters in ([], NOT_TRAVEL):
        search(recorded, scope, text, mode=HYBRID, top_k=1, filters=filters)
    assert recorded.words == [["portto"], ["porto", "portto"]]


NOT_TRAVEL = [MetadataFilter(key="topic", operator=FilterOperator.NOT_EQUALS, values=["travel"])]


class TypoSearches:
    """A store that records the words each typo-tolerant search is given."""

    def __init__(self, store: MemoryStore) -> None:
        self.store, self.words = store, list[list[str]]()

    def search_words(self, *args: Any, **kwargs: Any) -> list[ScoredRecord]:
        if kwargs.get("fuzzy"):
            self.words.append(list(args[1]))
        return self.store.search_words(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def test_a_superseded_chunk_leaves_the_word_search_at_its_invalid_at(
    store: MemoryStore, scope: ScopeRef
) -> None:
    old = ChunkInput(text="Ana works at Acme", valid_at=at(2024))
    new = ChunkInput(text="Ana works at Initech", valid_at=at(2025))
    commit_items(store, scope, chunks=[old])
    commit_items(
        store,
        scope,
        supersessions=[
            SupersessionInput(chunk_id=chunk_id(old.text, old.valid_at), replacement_chunk=new)
        ],
    )
    new_id, old_id = chunk_id(new.text, new.valid_at), chunk_id(old.text, old.valid_at)
    for mode in (LEXICAL, HYBRID):
        assert search_ids(store, scope, "Acme", mode=mode) == [new_id] * (mode is HYBRID)
        assert search_ids(store, scope, "Acme", mode=mode, as_of=at(2024, 6)) == [old_id]
    assert search_ids(store, scope, "Acmee", mode=LEXICAL, as_of=at(2024, 6)) == [old_id]


def test_hybrid_interleaves_its_parts(store: MemoryStore, corpus: ScopeRef) -> None:
    """The top MERGE_LEAD by meaning, then the strong word matches, then the best
    typo-tolerant match of each word the word matches do not hold, then the rest by
    meaning."""
    text, as_of, top_k = "greyhound in Lisbn", at(2032), 6
    words = retrieval.query_words(text)
    exact = store.search_words(corpus, words, top_k, [], as_of)
    typos = retrieval.unmatched_words(words, [hit.record.text for hit in exact])
    assert typos == ["lisbn"]  # "greyhound" is held by the word matches
    assert store.held_words(corpus, typos, [], as_of) == set()  # and "lisbn" by no chunk
    typo = store.search_words(corpus, typos, len(typos), [], as_of, fuzzy=True)  # one a word
    semantic = store.search_chunks(corpus, EMBEDDER.embed(text), top_k, [], as_of)
    strong = retrieval.strong_matches([(hit.record.id, hit.score) for hit in exact])
    keyword = retrieval.lexical_order(strong, [hit.record.id for hit in typo])
    merged = retrieval.interleave([hit.record.id for hit in semantic], keyword)
    metadata = {hit.record.id: hit.record.metadata for hit in [*semantic, *exact, *typo]}
    expected = retrieval.promote_named(merged, metadata, words)[:top_k]
    actual = search(store, corpus, text, mode=HYBRID, top_k=top_k, as_of=as_of)
    assert [record_id for record_id, _ in actual] == expected
    assert [score for _, score in actual] == [1 / rank for rank in range(1, top_k + 1)]
    assert cid("green tea in Lisbon") in expected


def test_hybrid_puts_a_word_match_right_after_the_lead_by_meaning(
    store: MemoryStore, scope: ScopeRef
) -> None:
    # The bag-of-words embedder sees "greyhounds" and "greyhound" as unrelated words;
    # SQLite's stemmer and Spanner's n-grams both tie them.
    chunks = [ChunkInput(text=f"note {i} about nothing") for i in range(6)]
    chunks.append(ChunkInput(text="Ana adopted two greyhounds"))
    commit_items(store, scope, chunks=chunks)
    target = chunk_id("Ana adopted two greyhounds", None)
    semantic = search_ids(store, scope, "greyhound nothing", mode=SEMANTIC)
    assert semantic.index(target) == 6  # last: the notes share "nothing"
    hybrid = search_ids(store, scope, "greyhound nothing", mode=HYBRID)
    assert hybrid.index(target) == retrieval.MERGE_LEAD  # right after the lead by meaning


def test_hybrid_puts_the_memories_whose_metadata_the_query_names_first(
    store: MemoryStore, scope: ScopeRef
) -> None:
    said = [
        *[(f"a walk by the river {i}", "Caroline", None) for i in range(3)],
        ("a walk in the park", "Melanie", None),
        ("a walk by the river at night", "Melanie", at(2031)),  # not valid yet
    ]
    chunks = [ChunkInput(text=t, metadata={"speaker": s}, valid_at=v) for t, s, v in said]
    commit_items(store, scope, chunks=chunks)
    park, night = chunk_id("a walk in the park"), chunk_id("a walk by the river at night", at(2031))
    text = "Where did Melanie walk by the river?"
    semantic = search_ids(store, scope, text, mode=SEMANTIC)
    assert semantic.index(park) == 3  # last by meaning
    hybrid = search_ids(store, scope, text, mode=HYBRID)
    assert hybrid[0] == park and sorted(hybrid) == sorted(semantic)
    assert search_ids(store, scope, text, mode=HYBRID, as_of=at(2032))[:2] == [night, park]
    caroline = [MetadataFilter(key="speaker", operator=EQ, values=["Caroline"])]
    filtered = search_ids(store, scope, text, mode=HYBRID, filters=caroline)
    assert len(filtered) == 3 and park not in filtered
    assert search_ids(store, scope, text, mode=LEXICAL)[0] != park  # HYBRID's rule only


def test_hybrid_applies_filters_and_valid_time_to_every_part(
    store: MemoryStore, corpus: ScopeRef
) -> None:
    pets = [MetadataFilter(key="topic", operator=EQ, values=["pets"])]
    found = search_ids(store, corpus, "greyhuond tea Lisbon", mode=HYBRID, filters=pets)
    assert found == [cid("an old greyhound habit")]
    found = search_ids(store, corpus, "greyhound", mode=HYBRID, filters=pets, as_of=at(2019))
    assert found == []


def test_every_mode_is_confined_to_its_scope(store: MemoryStore, corpus: ScopeRef) -> None:
    other = new_scope(corpus.enterprise_id)
    commit_items(store, other, chunks=[ChunkInput(text="trains to Porto")])
    for mode in RetrievalMode:
        assert search_ids(store, other, "trains Porto Prto", mode=mode) == [
            chunk_id("trains to Porto", None)
        ]
    assert search_ids(store, new_scope(), "trains Porto", mode=HYBRID) == []


def test_lexical_scores_are_relevances_and_hybrid_scores_are_reciprocal_ranks(
    store: MemoryStore, corpus: ScopeRef
) -> None:
    lexical_hits = search(store, corpus, "Porto", mode=LEXICAL)
    assert lexical_hits[0][1] > 0
    hybrid_hits = search(store, corpus, "Porto", mode=HYBRID, top_k=3)
    assert [s for _, s in hybrid_hits] == [1.0, 0.5, 1 / 3]


def test_semantic_mode_is_unchanged(store: MemoryStore, corpus: ScopeRef) -> None:
    hits = search(store, corpus, "tea", mode=SEMANTIC, top_k=3)
    assert NOW and all(0 < s <= 1.0001 for _, s in hits)
    assert isinstance(hits[0][1], float) and datetime  # cosine scores, as before


@pytest.mark.parametrize("fuzzy", [False, True])
def test_a_word_search_answers_whole_records_without_their_embedding(
    store: MemoryStore, corpus: ScopeRef, fuzzy: bool
) -> None:
    words = ["lemonn", "lisbn"] if fuzzy else ["lemon", "lisbon"]  # typos, as the service asks
    hits = store.search_words(corpus, words, 5, [], NOW, fuzzy=fuzzy)
    stored = {r.id: r for r in store.get_chunks(corpus, [h.record.id for h in hits])}
    assert {cid("tea with lemon"), cid("green tea in Lisbon")} <= {h.record.id for h in hits}
    assert all(r.embedding is not None for r in stored.values())
    for hit in hits:
        assert hit.record.embedding is None
        assert hit.record == stored[hit.record.id].model_copy(update={"embedding": None})
