"""`jnh agents|scopes memory search` against the in-process API, over HTTP (WSGI)."""

from __future__ import annotations

import pytest

from jennah.cli.search import search_body
from tests.unit.test_cli_memory import Jnh, jnh, seeded

__all__ = ["jnh", "seeded"]  # the fixtures, shared with test_cli_memory


def test_search_prints_candidates_as_json_table_and_names(seeded: Jnh) -> None:
    body = seeded.json("agents", "memory", "search", "bot", "where does Alise work")
    assert set(body) == {"candidates", "tokenCount", "text"}
    summaries = [c["summary"] for c in body["candidates"]]
    assert "Alice works at Acme as an engineer" in summaries
    table = seeded.ok("scopes", "memory", "search", "bot", "Alice", "--max-items", "1")
    header, row, _, tokens = table.splitlines()
    assert header.split() == ["REF", "TYPE", "AGE", "SENSITIVITY", "SUMMARY"]
    assert row.startswith("memory://bot/chk_") and tokens.endswith(" tokens")
    names = seeded.ok("agents", "memory", "search", "bot", "Acme", "-o", "name").split()
    assert names and all(name.startswith("memory://bot/") for name in names)


def test_search_passes_the_caps_and_the_server_names_a_bound(seeded: Jnh) -> None:
    body = seeded.json("agents", "memory", "search", "bot", "Acme", "-n", "1",
                       "--token-budget", "2000")  # fmt: skip
    assert len(body["candidates"]) == 1
    refused = seeded("agents", "memory", "search", "bot", "Acme", "--max-items", "21")
    assert refused.exit_code != 0 and "maxItems" in refused.stderr


def test_nothing_found_says_so(jnh: Jnh) -> None:
    jnh.ok("scopes", "create", "empty", "--kind", "subject")
    assert jnh.ok("scopes", "memory", "search", "empty", "dentist") == "No candidates.\n"


@pytest.mark.parametrize(
    ("args", "body"),
    [
        (("x", None, None), {"query": "x"}),
        (("x", 3, 150), {"query": "x", "maxItems": 3, "tokenBudget": 150}),
    ],
)
def test_the_body_carries_only_what_was_given(
    args: tuple[str, int | None, int | None], body: dict[str, object]
) -> None:
    assert search_body(*args) == body
