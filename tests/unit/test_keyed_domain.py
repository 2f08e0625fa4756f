"""domain.keyed: words, terms, scoring words, the version rule and selection under budget."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from jennah.domain import keyed
from jennah.domain.keyed import KeyedMemory
from jennah.errors import Aborted, AlreadyExists

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def entry(key: str, tokens: int, minute: int = 0) -> KeyedMemory:
    at = T0 + timedelta(minutes=minute)
    return KeyedMemory(key=key, content=key, version=1, token_count=tokens, create_time=at,
                       update_time=at)  # fmt: skip


def test_words_split_keys_drop_stop_words_and_fold_case() -> None:
    assert keyed.words("The Harbor-status_reports of THE week") == [
        "harbor",
        "status",
        "reports",
        "week",
    ]
    assert keyed.terms("harbor-status", "Status: weekly") == ["harbor", "status", "weekly"]


def test_scoring_words_leave_common_words_out_unless_nothing_rarer_is_held() -> None:
    cap = keyed.COMMON_WORD_ENTRIES
    assert keyed.scoring_words({"a": cap + 1, "b": 3, "c": 0}) == ["b"]
    assert keyed.scoring_words({"a": cap + 1, "b": cap + 1, "c": 0}) == ["a"]
    assert keyed.scoring_words({"a": 0}) == []


@pytest.mark.parametrize(
    ("expected", "current", "error"), [(0, 1, AlreadyExists), (1, 2, Aborted), (3, 0, Aborted)]
)
def test_the_version_rule(expected: int, current: int, error: type[Exception]) -> None:
    with pytest.raises(error):
        keyed.check_write("k", expected, current)
    keyed.check_write("k", current, current)


def test_select_stops_at_the_first_match_that_does_not_fit() -> None:
    chosen = keyed.select([entry("a", 5), entry("b", 10), entry("c", 1)], {}, 12)
    assert [r.entry.key for r in chosen.memories] == ["a"]
    assert chosen.token_count == 5


def test_select_adds_neighbours_while_they_fit_and_never_a_match_twice() -> None:
    matches = [entry("a", 5), entry("b", 3)]
    neighbours = {"a": [entry("b", 3), entry("n1", 2), entry("n2", 9)], "b": [entry("n3", 1)]}
    chosen = keyed.select(matches, neighbours, 12)
    assert [(r.entry.key, r.via.value) for r in chosen.memories] == [
        ("a", "MATCH"),
        ("b", "MATCH"),
        ("n1", "LINK"),
    ]
    assert chosen.token_count == 10 <= 12
