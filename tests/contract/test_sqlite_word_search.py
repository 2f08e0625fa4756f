"""SQLite-only: the word search that scores only the rows holding a rare word
(reader.search_words, MaxScore over FTS5's bm25) answers exactly as the one query
scoring every match, over random corpora and questions."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jennah.adapters.sqlite import bm25, codec, reader
from jennah.adapters.sqlite.connection import open_connection
from jennah.adapters.sqlite.store import SqliteStore
from jennah.domain.models import FilterOperator, MetadataFilter, ScopeRef, Status
from jennah.services.commands import ChunkInput
from tests.contract.conftest import NOW, at, commit_items, new_scope

# A Zipf-like vocabulary: "w0" in most texts (its idf floored at 1e-6), the tail rare.
WORDS = [f"w{i}" for i in range(40)]
WEIGHTS = [1.0 / (i + 1) ** 1.1 for i in range(len(WORDS))]
_NOW = codec.required_micros(NOW)


def _text(rng: random.Random) -> str:
    words = rng.choices(WORDS, WEIGHTS, k=rng.randint(1, 9))
    if rng.random() < 0.7:
        words.append("w0")
    if rng.random() < 0.05:
        words += [rng.choice(WORDS[:6])] * rng.randint(3, 12)  # a word many times
    rng.shuffle(words)
    return " ".join(words)


def _corpus(store: SqliteStore, rng: random.Random, scopes: list[ScopeRef]) -> None:
    texts = [_text(rng) for _ in range(120)]
    for scope in scopes:
        chunks = []
        for i in range(rng.randint(150, 260)):
            # repeated texts (told apart by their validity) tie: ids decide
            text = rng.choice(texts) if rng.random() < 0.4 else _text(rng)
            chunks.append(
                ChunkInput(
                    text=text,
                    valid_at=at(2020 + rng.randint(0, 12), 1 + i % 12, 1 + i % 28),
                    metadata={"kind": rng.choice(["a", "b", "c"])},
                    status=Status.DORMANT if rng.random() < 0.05 else None,
                )
            )
        commit_items(store, scope, chunks=chunks)


def _phrases(words: list[str]) -> list[str]:
    return [f'"{word}"' for word in words]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    store = SqliteStore(tmp_path / "memory.db")
    yield store
    store.close()


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts of the split queries (rare AND/NOT common) and of the single queries."""
    counts = {"split": 0, "single": 0}
    ranked = reader._ranked

    def spy(conn: Any, scope: Any, index: Any, matches: Any, *rest: Any) -> Any:
        counts["split" if len(matches) > 1 else "single"] += 1
        return ranked(conn, scope, index, matches, *rest)

    monkeypatch.setattr(reader, "_ranked", spy)
    return counts


def test_scoring_the_rare_words_rows_gives_the_single_querys_answer(
    store: SqliteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, paths: dict[str, int]
) -> None:
    rng = random.Random(15)
    proven = fallen_back = 0
    for corpus in range(6):
        scopes = [new_scope(), new_scope()]
        _corpus(store, rng, scopes)
        conn = open_connection(tmp_path / "memory.db")
        for _ in range(40):
            # small thresholds: the corpora hold hundreds of rows, not 100k
            monkeypatch.setattr(reader, "WORD_SEARCH_SMALL", rng.choice([0, 50]))
            monkeypatch.setattr(reader, "WORD_SEARCH_RARE", rng.choice([5, 20, 60, 150]))
            monkeypatch.setattr(reader, "WORD_SEARCH_WIDER_SHARE", rng.choice([0.3, 0.6, 1.0]))
            words = rng.sample(WORDS[:12], rng.randint(1, 3)) + rng.sample(WORDS[12:], 2)
            words.append("absent")  # a word no row holds
            rng.shuffle(words)
            phrases = _phrases(words)
            limit = rng.choice([1, 5, 10, 40])
            filters = []
            if rng.random() < 0.3:
                operator = rng.choice([FilterOperator.EQUALS, FilterOperator.NOT_EQUALS])
                filters = [MetadataFilter(key="kind", operator=operator, values=["a"])]
            as_of = codec.required_micros(rng.choice([NOW, at(2026)]))
            scope = rng.choice(scopes)
            before = paths["split"]
            found = reader.search_words(conn, scope, phrases, limit, filters, as_of)
            if paths["split"] > before and paths["single"] == 0:
                proven += 1
            elif paths["split"] > before:
                fallen_back += 1
            paths["single"] = 0
            # today's query, the phrases as asked
            today = reader.search_text(
                conn, scope, reader.WORD_INDEX, " OR ".join(phrases), limit, filters, as_of
            )
            assert [r.id for r, _ in found] == [r.id for r, _ in today], (corpus, words)
            for (_, score), (_, expected) in zip(found, today, strict=True):
                assert math.isclose(score, expected, rel_tol=1e-9)
            # the single query of the phrases as the new path lists them: the same bits
            holdings = reader._rows_holding(conn, phrases)
            ordered = [
                p for _, _, p in sorted(zip(holdings, range(len(phrases)), phrases, strict=True))
            ]
            single = reader.search_text(
                conn, scope, reader.WORD_INDEX, " OR ".join(ordered), limit, filters, as_of
            )
            paths["single"] = 0
            assert [(r.id, s) for r, s in found] == [(r.id, s) for r, s in single]
        conn.close()
    # both ways were taken, often
    assert proven >= 20 and fallen_back >= 20, (proven, fallen_back)


def test_the_bound_is_above_a_row_holding_a_word_many_times(
    store: SqliteStore, tmp_path: Path
) -> None:
    # tf-part < k1 + 1 = 2.2: a text of one word many times nears it; k1 alone would not do
    scope = new_scope()
    texts = ["w1 " * 60, "w2 w3", "w2", "w3 w4", "w0 w5", "w0 w6", "w0 w7"]
    commit_items(store, scope, chunks=[ChunkInput(text=t) for t in texts])
    conn = open_connection(tmp_path / "memory.db")
    rows = reader._word_index_rows(conn)
    assert rows == conn.execute("SELECT count(*) FROM memory_records_text_docsize").fetchone()[0]
    for word in ["w1", "w0"]:
        (held,) = reader._rows_holding(conn, [f'"{word}"'])
        ((_, score),) = reader.search_text(conn, scope, reader.WORD_INDEX, f'"{word}"', 1, [], _NOW)
        assert score < bm25.bound(rows, [held])
        assert score > bm25.K1 * bm25.idf(rows, held)  # the tf-part passed k1
    # w0 in 3 of 7 rows: idf > 0; held by most rows it would be floored at 1e-6
    assert bm25.idf(7, 3) > bm25.IDF_FLOOR and bm25.idf(7, 4) == bm25.IDF_FLOOR
    conn.close()


def test_too_few_rare_rows_for_a_kth_score_skip_straight_to_the_single_query(
    store: SqliteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, paths: dict[str, int]
) -> None:
    scope = new_scope()
    commit_items(store, scope, chunks=[ChunkInput(text=f"w0 w1 n{i}") for i in range(30)])
    monkeypatch.setattr(reader, "WORD_SEARCH_SMALL", 0)
    monkeypatch.setattr(reader, "WORD_SEARCH_RARE", 5)
    conn = open_connection(tmp_path / "memory.db")
    found = reader.search_words(conn, scope, _phrases(["n3", "w1"]), 10, [], _NOW)
    assert paths == {"split": 0, "single": 1} and len(found) == 10
    found = reader.search_words(conn, scope, _phrases(["n3", "n4", "w1"]), 2, [], _NOW)
    assert paths == {"split": 1, "single": 1}  # two rare rows beat w1's bound: proven
    assert sorted(r.text for r, _ in found) == ["w0 w1 n3", "w0 w1 n4"]
    conn.close()


def test_the_counts_and_the_scores_are_read_in_one_snapshot(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a write between the phrases' row counts and the scoring would leave the bound
    # made of other counts than FTS5's idf
    scope = new_scope()
    commit_items(store, scope, chunks=[ChunkInput(text=f"w0 n{i}") for i in range(3)])
    holding = reader._rows_holding
    snapshots: list[bool] = []

    def spy(conn: Any, phrases: Any) -> Any:
        snapshots.append(conn.in_transaction)
        return holding(conn, phrases)

    monkeypatch.setattr(reader, "_rows_holding", spy)
    assert len(store.search_words(scope, ["w0", "n1"], 10, [], NOW)) == 3
    assert snapshots == [True]
