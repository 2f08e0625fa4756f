"""POST …/memory:search on the wire: the answer's shape, the bounds, reach (FakeStore)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jennah.domain.brief import count_tokens
from jennah.domain.search import OPEN, PREAMBLE
from tests.unit.fakes import Api

SEARCH = "/v1/scopes/fam/memory:search"
SEED = {
    "chunks": [
        {"text": "Sam's dentist appointment is on Friday at nine",
         "summary": "Dentist appointment Friday 9:00", "type": "fact"},
        {"text": "Sam is allergic to penicillin", "type": "constraint",
         "sensitivity": "health"},
        {"text": "The dentist appointment last spring was cancelled",
         "validUntil": "2024-05-01T00:00:00Z"},
        {"text": "An old dentist we no longer see", "status": "dormant"},
        {"text": "Sam prefers tea"},
    ]
}  # fmt: skip


@pytest.fixture
def api(tmp_path: Path) -> Api:
    api = Api.create(tmp_path)
    assert api.post("/v1/scopes/fam/memory:commit", SEED).status_code == 200
    return api


def ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.get_data(as_text=True)
    body: dict[str, Any] = response.get_json()
    return body


def refusal(response: Any) -> dict[str, Any]:
    assert response.status_code == 400, response.get_data(as_text=True)
    error: dict[str, Any] = response.get_json()["error"]
    assert error["status"] == "INVALID_ARGUMENT"
    return error


def test_the_answer_holds_candidates_token_count_and_the_rendering(api: Api) -> None:
    body = ok(api.post(SEARCH, {"query": "when is the dentits appointment"}))
    assert set(body) == {"candidates", "tokenCount", "text"}
    assert all(
        set(c) == {"ref", "summary", "type", "age", "sensitivity"} for c in body["candidates"]
    )
    # the hashing embedder knows no meaning: the typo-tolerant word search finds it
    (first,) = [c for c in body["candidates"] if c["summary"].startswith("Dentist")]
    assert first["summary"] == "Dentist appointment Friday 9:00"
    assert first["ref"].startswith("memory://fam/chk_")
    assert (first["type"], first["age"], first["sensitivity"]) == ("fact", "today", "normal")
    assert body["text"].startswith(f"{OPEN}\n{PREAMBLE}\n")
    assert f'"Dentist appointment Friday 9:00" {first["ref"]}' in body["text"]
    assert body["tokenCount"] == count_tokens(body["text"]) <= 300


def test_only_active_unexpired_claims_and_sensitive_ones_with_their_label(api: Api) -> None:
    body = ok(api.post(SEARCH, {"query": "dentist allergic penicillin", "maxItems": 20}))
    summaries = {c["summary"]: c for c in body["candidates"]}
    assert "The dentist appointment last spring was cancelled" not in summaries  # validUntil
    assert "An old dentist we no longer see" not in summaries  # dormant
    assert summaries["Sam is allergic to penicillin"]["sensitivity"] == "health"
    assert "sensitive: health" in body["text"]


def test_max_items_caps_the_candidates(api: Api) -> None:
    body = ok(api.post(SEARCH, {"query": "Sam dentist tea penicillin", "maxItems": 1}))
    assert len(body["candidates"]) == 1


def test_nothing_found_is_an_empty_answer(api: Api) -> None:
    assert api.post("/v1/scopes", {"scopeId": "empty", "kind": "SUBJECT"}).status_code == 200
    body = ok(api.post("/v1/scopes/empty/memory:search", {"query": "dentist"}))
    assert body == {"candidates": [], "tokenCount": 0, "text": ""}


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"query": ""}, "query", "empty"),
        ({"query": "   "}, "query", "empty"),
        ({"query": "x" * 4001}, "query", "4000"),
        ({"query": "x", "maxItems": 0}, "maxItems", "between 1 and 20"),
        ({"query": "x", "maxItems": 21}, "maxItems", "between 1 and 20"),
        ({"query": "x", "tokenBudget": 99}, "tokenBudget", "between 100 and 2000"),
        ({"query": "x", "tokenBudget": 2001}, "tokenBudget", "between 100 and 2000"),
    ],
)
def test_out_of_bounds_is_400_naming_the_field_and_the_bound(
    api: Api, body: dict[str, Any], field: str, words: str
) -> None:
    error = refusal(api.post(SEARCH, body))
    assert error["details"][0]["metadata"]["field"] == field
    assert words in error["message"]


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({}, "query"),
        ({"query": "x", "topK": 3}, "topK"),
        ({"query": "x", "max_items": 3}, "max_items"),
        ({"query": "x", "maxItems": "many"}, "maxItems"),
        ({"query": 3}, "query"),
    ],
)
def test_a_malformed_body_is_400_naming_the_field(
    api: Api, body: dict[str, Any], named: str
) -> None:
    assert named in refusal(api.post(SEARCH, body))["message"]


def test_agents_and_scopes_share_one_identifier_space(api: Api) -> None:
    query = {"query": "dentist"}
    assert api.post("/v1/agents/bot/memory:commit", SEED).status_code == 200
    via_agents = ok(api.post("/v1/agents/bot/memory:search", query))
    via_scopes = ok(api.post("/v1/scopes/bot/memory:search", query))
    assert via_agents == via_scopes and via_agents["candidates"]


def test_a_missing_scope_is_not_found(api: Api) -> None:
    missing = api.post("/v1/scopes/other/memory:search", {"query": "dentist"})
    assert missing.status_code == 404
    # a subject scope is not an agent workspace: answered as missing there
    assert api.post("/v1/agents/fam/memory:search", {"query": "dentist"}).status_code == 404


def test_the_response_reports_server_timing(api: Api) -> None:
    response = api.post(SEARCH, {"query": "tea"})
    assert response.headers["Server-Timing"].startswith("embed;dur=")
