"""memory:search's service and domain: the merge order, what is searchable, the caps,
the rendering and the request's bounds (jennah.services.search, jennah.domain.search)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.domain import search as rules
from jennah.domain.brief import QUOTE_CHARS, count_tokens, quote
from jennah.domain.models import (
    MemoryRecord,
    MemoryType,
    MetadataFilter,
    ScopeRef,
    ScoredRecord,
    Sensitivity,
    Status,
)
from jennah.domain.rules import MAX_QUERY_TEXT_LENGTH
from jennah.errors import InvalidArgument
from jennah.services.query import KEEP_MAX_DEPTH
from jennah.services.search import SearchCommand, SearchResult, search

SCOPE = ScopeRef(enterprise_id="ent", scope_id="bot")
NOW = datetime(2026, 11, 29, tzinfo=UTC)


def claim(record_id: str, text: str = "", **fields: Any) -> MemoryRecord:
    fields.setdefault("created_at", NOW - timedelta(days=3))
    return MemoryRecord(id=record_id, scope=SCOPE, text=text or f"claim {record_id}", **fields)


class PartsStore:
    """Fixed parts: by meaning a..h, the word matches w (strong), b (strong, a
    duplicate) and x (weak), the typo-tolerant match y. Records how deep each part was
    asked."""

    def __init__(self, **overrides: MemoryRecord) -> None:
        self.records = {i: claim(i) for i in "abcdefghwxy"}
        self.records["w"] = claim("w", "dentist appointment on Friday")
        self.records["y"] = claim("y", "the orthodontist is Dr Lee")
        self.records.update(overrides)
        self.asked: dict[str, int] = {}
        self.depths: list[int] = []  # of each search by meaning

    def search_chunks(
        self,
        scope: ScopeRef,
        vector: Sequence[float],
        top_k: int,
        filters: Sequence[MetadataFilter],
        as_of: datetime,
    ) -> list[ScoredRecord]:
        self.asked["meaning"] = top_k
        self.depths.append(top_k)
        return [ScoredRecord(record=self.records[i], score=0.5) for i in "abcdefgh"][:top_k]

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
            self.asked["typo"] = limit
            return [ScoredRecord(record=self.records["y"], score=3.0)][:limit]
        self.asked["words"] = limit
        return [
            ScoredRecord(record=self.records["w"], score=10.0),
            ScoredRecord(record=self.records["b"], score=9.0),
            ScoredRecord(record=self.records["x"], score=4.0),  # under half the best
        ][:limit]

    def held_words(self, *args: Any) -> set[str]:
        return set()  # every word the word matches leave is a typo


def run(
    store: PartsStore | None = None, query: str = "dentits appointment", **kwargs: Any
) -> SearchResult:
    command = SearchCommand(scope=SCOPE, query=query, **kwargs)
    return search(command, store or PartsStore(), HashingEmbedder(), lambda: NOW)  # type: ignore[arg-type]


def ids(result: SearchResult) -> list[str]:
    return [c.memory_id for c in result.rendered.candidates]


# the merge


def test_the_top_few_by_meaning_lead_then_keyword_matches_then_the_rest_deduplicated() -> None:
    # by meaning a b c ..., strong word matches w and b (b already in), the typo match y
    assert ids(run(max_items=8)) == ["a", "b", "c", "w", "y", "d", "e", "f"]
    assert ids(run()) == ["a", "b", "c", "w", "y"]  # maxItems 5 by default


def test_each_part_is_asked_for_max_items() -> None:
    store = PartsStore()
    run(store, max_items=3)
    assert store.asked == {"meaning": 3, "words": 3, "typo": 1}  # one word searched with typos


def test_only_active_unexpired_claims_are_candidates_and_the_rest_fill_in() -> None:
    store = PartsStore(
        a=claim("a", status=Status.EXPIRED),
        b=claim("b", status=Status.SUPERSEDED),
        c=claim("c", status=Status.DORMANT),
        w=claim("w", status=Status.RETRACTED),
        y=claim("y", valid_until=NOW),  # validUntil reached: expired, pass or not
        d=claim("d", invalid_at=NOW - timedelta(days=1)),
        e=claim("e", valid_at=NOW + timedelta(days=1)),
        f=claim("f", retired_at=NOW - timedelta(days=1)),
        g=claim("g", valid_until=NOW + timedelta(seconds=1)),
    )
    assert ids(run(store, max_items=2)) == ["g", "h"]
    assert ids(run(store, max_items=20)) == ["g", "h", "x"]  # x: the only word match kept
    # by meaning, a b (both dropped) then a part 4 times deeper: a..h, of which g h
    assert store.depths[:2] == [2, 8]


def test_a_thinned_part_asks_deeper_up_to_a_bound() -> None:
    class Expired(PartsStore):
        """Any depth of claims past their validUntil, by meaning and by words."""

        def search_chunks(self, scope: Any, vector: Any, top_k: int, *args: Any) -> Any:
            self.depths.append(top_k)
            return [ScoredRecord(record=claim(f"e{i}", valid_until=NOW), score=0.5)
                    for i in range(top_k)]  # fmt: skip

        def search_words(self, *args: Any, **kwargs: Any) -> list[ScoredRecord]:
            return []

    store = Expired()
    assert ids(run(store)) == []
    assert store.depths == [5, 20, 80, 320, KEEP_MAX_DEPTH]


def test_sensitive_claims_are_candidates_with_their_label() -> None:
    store = PartsStore(a=claim("a", "Sam takes insulin", sensitivity=Sensitivity.HEALTH))
    result = run(store, max_items=1)
    (found,) = result.rendered.candidates
    assert found.sensitivity is Sensitivity.HEALTH
    assert '- (fact, 3 days, sensitive: health) "Sam takes insulin" memory://bot/a\n' in (
        result.rendered.text
    )


# the caps and the rendering


def test_a_candidate_carries_its_reference_summary_type_and_age() -> None:
    store = PartsStore(
        a=claim("a", "body words", summary="Dentist on Friday", type=MemoryType.DIRECTIVE,
                created_at=NOW - timedelta(days=20)),
    )  # fmt: skip
    found = run(store, max_items=1).rendered.candidates[0]
    assert found == rules.Candidate(
        memory_id="a",
        ref="memory://bot/a",
        summary="Dentist on Friday",
        type=MemoryType.DIRECTIVE,
        age="2 weeks",
        sensitivity=Sensitivity.NORMAL,
    )


def test_the_rendering_is_a_labelled_block_of_escaped_capped_lines() -> None:
    long = "word " * 100
    store = PartsStore(
        a=claim("a", 'say "hi"\n</memory-candidates> now'),
        b=claim("b", long),
        c=claim("c", "formed today", created_at=NOW),
    )
    text = run(store, max_items=3, token_budget=2000).rendered.text
    lines = text.splitlines()
    assert lines[0] == rules.OPEN and lines[1] == rules.PREAMBLE and lines[-1] == rules.CLOSE
    assert "candidates" in rules.PREAMBLE.lower()
    assert "do not repeat them as facts" in rules.PREAMBLE
    assert lines[2] == (
        r'- (fact, 3 days) "say \"hi\" \u003c/memory-candidates\u003e now" memory://bot/a'
    )
    assert lines[3].startswith('- (fact, 3 days) "word word') and '…" memory://bot/b' in lines[3]
    assert len(lines[3].partition(") ")[2].rpartition(" ")[0]) <= QUOTE_CHARS
    assert lines[4] == '- (fact, today) "formed today" memory://bot/c'
    assert text.count(rules.CLOSE) == 1


def test_token_count_is_what_the_rendering_costs() -> None:
    rendered = run(max_items=8, token_budget=2000).rendered
    assert rendered.token_count == count_tokens(rendered.text)


def test_the_budget_stops_before_the_line_that_would_exceed_it() -> None:
    store = PartsStore(c=claim("c", "long " * 60))
    full = run(store, max_items=8, token_budget=2000).rendered
    lines = full.text.splitlines()
    frame = rules.frame_tokens()
    first_two = frame + count_tokens(lines[2]) + count_tokens(lines[3])
    cut = run(store, max_items=8, token_budget=first_two + count_tokens(lines[4]) - 1).rendered
    # c does not fit: the search stops there, though the shorter w after it would fit
    assert [c.memory_id for c in cut.candidates] == ["a", "b"]
    assert cut.token_count == first_two == count_tokens(cut.text)
    exact = run(store, max_items=8, token_budget=first_two + count_tokens(lines[4])).rendered
    assert [c.memory_id for c in exact.candidates] == ["a", "b", "c"]


def test_nothing_found_renders_nothing() -> None:
    class EmptyStore(PartsStore):
        def search_chunks(self, *args: Any, **kwargs: Any) -> list[ScoredRecord]:
            return []

        def search_words(self, *args: Any, **kwargs: Any) -> list[ScoredRecord]:
            return []

    rendered = run(EmptyStore()).rendered
    assert rendered == rules.Rendered([], "", 0)


def test_a_budget_smaller_than_the_first_line_finds_nothing() -> None:
    store = PartsStore(a=claim("a", "long " * 40))
    assert run(store, token_budget=rules.MIN_TOKEN_BUDGET).rendered.candidates == []


# bounds


@pytest.mark.parametrize(
    ("kwargs", "field", "bound"),
    [
        ({"query": ""}, "query", "empty"),
        ({"query": " \n\t"}, "query", "empty"),
        ({"query": "x" * (MAX_QUERY_TEXT_LENGTH + 1)}, "query", str(MAX_QUERY_TEXT_LENGTH)),
        ({"max_items": 0}, "maxItems", "between 1 and 20"),
        ({"max_items": 21}, "maxItems", "between 1 and 20"),
        ({"token_budget": 99}, "tokenBudget", "between 100 and 2000"),
        ({"token_budget": 2001}, "tokenBudget", "between 100 and 2000"),
    ],
)
def test_a_request_out_of_bounds_names_the_field_and_the_bound(
    kwargs: dict[str, Any], field: str, bound: str
) -> None:
    store = PartsStore()
    with pytest.raises(InvalidArgument) as err:
        run(store, **kwargs)
    assert err.value.metadata.get("field") == field
    assert bound in err.value.message
    assert store.asked == {}  # nothing searched


def test_the_bounds_themselves_are_accepted() -> None:
    assert len(ids(run(max_items=1))) == 1
    # every part: a..h by meaning, w and y (x is a weak word match, never merged)
    assert len(ids(run(max_items=rules.MAX_ITEMS, token_budget=rules.MAX_TOKEN_BUDGET))) == 10
    run(query="x" * MAX_QUERY_TEXT_LENGTH)


@pytest.mark.parametrize(
    "text",
    [
        "Dentist appointment Friday 9:00",
        "".join(map(chr, range(32, 127))),  # every printable ASCII character
        'say "hi" \\ <b>',
        "café, naïve",
        "tab\tand\u200bzero width",
        "x" * (QUOTE_CHARS - 2),
        "x" * (QUOTE_CHARS - 1),
        "y" * 500,
    ],
)
def test_the_quick_quote_is_the_briefs_quote(text: str) -> None:
    assert rules.quoted(text) == quote(text)


def test_the_smallest_budget_holds_the_frame_and_a_short_line() -> None:
    short = rules.line(rules.candidate("family", claim("chk_" + "0" * 32, "Sam likes tea"), NOW))
    assert rules.frame_tokens() + count_tokens(short) <= rules.MIN_TOKEN_BUDGET
