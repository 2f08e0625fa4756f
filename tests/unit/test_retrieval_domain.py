"""The pure rules of retrieval: query words, trigrams, and the two merges."""

from __future__ import annotations

from datetime import UTC, datetime

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


def test_named_period_reads_a_month_with_or_without_its_year_or_a_year() -> None:
    period = retrieval.named_period
    assert period("When did Melanie go camping in July?") == retrieval.Period(None, 7)
    assert period("What did she start on 3 June, 2023?") == retrieval.Period(2023, 6)
    assert period("What happened on June 3rd, 2023?") == retrieval.Period(2023, 6)
    assert period("Plans for September 2022") == retrieval.Period(2022, 9)
    assert period("what changed on 2024-02-29") == retrieval.Period(2024, 2)
    assert period("Where did he live in 2019?") == retrieval.Period(2019, None)


def test_named_period_ignores_verbs_lowercase_months_and_other_numbers() -> None:
    period = retrieval.named_period
    assert period("May I see what Caroline may like?") is None
    assert period("March on: where did they march?") is None
    assert period("How many of the 12000 steps?") is None
    assert period("Which book did she read?") is None
    assert period("May I ask what happened in May?") == retrieval.Period(None, 5)


def test_period_holds_instants_in_its_month_or_year_only() -> None:
    july = retrieval.Period(None, 7)
    assert july.holds(datetime(2023, 7, 31, 23, 59, tzinfo=UTC))
    assert july.holds(datetime(2021, 7, 1, tzinfo=UTC))
    assert not july.holds(datetime(2023, 8, 1, tzinfo=UTC))
    assert not july.holds(None)
    assert retrieval.Period(2022, None).holds(datetime(2022, 12, 31, tzinfo=UTC))
    assert not retrieval.Period(2022, 7).holds(datetime(2023, 7, 1, tzinfo=UTC))


def test_promote_within_moves_the_period_first_keeping_each_group_in_order() -> None:
    at = {
        "a": datetime(2023, 6, 1, tzinfo=UTC),
        "b": datetime(2023, 7, 9, tzinfo=UTC),
        "c": None,
        "d": datetime(2023, 7, 2, tzinfo=UTC),
    }
    july = retrieval.Period(2023, 7)
    assert retrieval.promote_within(["a", "b", "c", "d", "e"], at, july) == [
        "b",
        "d",
        "a",
        "c",
        "e",
    ]
    assert retrieval.promote_within(["a", "c"], at, july) == ["a", "c"]


def test_names_a_value_matches_a_metadata_value_the_query_words_hold() -> None:
    words = frozenset(query_words("What has Melanie painted in New York in 2023 session 3?"))
    names = retrieval.names_a_value
    assert names({"speaker": "Melanie"}, words)
    assert names({"speaker": "Caroline", "place": "New York"}, words)  # every word named
    assert not names({"place": "new york"}, words)  # a label, not a name
    labels = frozenset(query_words("what did the user say in that email"))
    assert not names({"role": "user", "source": "email"}, labels)
    assert names({"role": "User"}, labels)
    assert names({"band": "The York"}, words)  # stopwords left out
    assert not names({"speaker": "Caroline"}, words)
    assert not names({"place": "York City"}, words)  # "city" is not named
    assert not names({"year": "2023", "session": "3", "id": "D1:3"}, words)  # numbers alone
    assert not names({"note": "the"}, words)
    assert not names({}, words)
    long_value = "melanie painted new york melanie"  # more words than a name
    assert retrieval.MAX_NAME_WORDS == 4
    assert not names({"text": long_value}, words)


def test_promote_named_moves_the_named_memories_first_keeping_each_group_in_order() -> None:
    metadata = {
        "a": {"speaker": "Caroline"},
        "b": {"speaker": "Melanie"},
        "c": {},
        "d": {"speaker": "Melanie", "session": "2"},
        "e": {"speaker": "melanie"},  # a label, not a name
    }
    words = query_words("What did Melanie paint?")
    assert retrieval.promote_named(["a", "b", "c", "d", "e"], metadata, words) == [
        "b",
        "d",
        "a",
        "c",
        "e",
    ]
    assert retrieval.promote_named(["a", "c"], metadata, words) == ["a", "c"]
    assert retrieval.promote_named(["a", "b"], metadata, []) == ["a", "b"]
