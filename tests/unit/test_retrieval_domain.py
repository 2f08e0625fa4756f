"""The pure rules of retrieval: query words, trigrams, and the two merges."""

from __future__ import annotations

from jennah.domain import retrieval
from jennah.domain.retrieval import (
    MAX_QUERY_WORDS,
    interleave,
    lexical_order,
    query_words,
    reciprocal_rank_fusion,
    trigrams,
)


def test_query_words_drop_stopwords_and_syntax_and_keep_order() -> None:
    assert query_words('When did Caroline go to the "LGBTQ" support group?') == [
        "caroline",
        "go",
        "lgbtq",
        "support",
        "group",
    ]
    assert query_words("What is it? -- OR NOT * ^") == []
    assert query_words("a_b café 2023 2023") == ["café", "2023"]
    assert len(query_words(" ".join(f"w{i}" for i in range(100)))) == MAX_QUERY_WORDS


def test_question_words_and_pronouns_are_stopwords() -> None:
    for word in ("what", "when", "where", "who", "which", "how", "why", "she", "they", "her"):
        assert word in retrieval.STOPWORDS


def test_trigrams_and_fuzzy_words() -> None:
    assert trigrams("lisbon") == ["lis", "isb", "sbo", "bon"]
    assert trigrams("aaaa") == ["aaa"]
    assert retrieval.fuzzy_words(["tea", "lisbon"]) == ["lisbon"]


def test_reciprocal_rank_fusion_sums_weighted_reciprocal_ranks() -> None:
    fused = reciprocal_rank_fusion([(["a", "b", "a"], 1.0), (["b", "c"], 0.5)], rrf_k=10)
    assert [i for i, _ in fused] == ["b", "a", "c"]
    scores = dict(fused)
    assert scores["b"] == 1 / 12 + 0.5 / 11
    assert scores["a"] == 1 / 11  # a repeat counts once, at its first rank
    assert reciprocal_rank_fusion([(["y", "x"], 1.0), (["x", "y"], 1.0)])[0][0] == "x"  # tie: id


def test_interleave_and_lexical_order_remove_duplicates() -> None:
    assert interleave(["s1", "s2", "s3", "w1"], ["w1", "s1", "w2"], lead=1) == [
        "s1",
        "w1",
        "w2",
        "s2",
        "s3",
    ]
    assert lexical_order(["a", "b"], ["b", "c"]) == ["a", "b", "c"]


def test_unmatched_words_forgive_inflection_but_not_typos() -> None:
    texts = ["Ana adopted two greyhounds", "tea in Lisbon"]
    assert retrieval.unmatched_words(["adopting", "greyhound", "lisbn", "tea"], texts) == ["lisbn"]
    assert retrieval.unmatched_words(["porto"], []) == ["porto"]


def test_strong_matches_keep_those_at_least_a_share_of_the_best_in_order() -> None:
    scored = [("a", 4.0), ("b", 1.0), ("c", 2.0), ("d", 2.5)]
    assert retrieval.strong_matches(scored, 0.5) == ["a", "c", "d"]
    assert retrieval.strong_matches(scored) == ["a", "c", "d"]  # the default share is 0.5
    assert retrieval.strong_matches([], 0.5) == []
    assert retrieval.strong_matches([("x", 0.0)], 0.5) == ["x"]
