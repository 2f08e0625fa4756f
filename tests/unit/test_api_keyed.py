"""Keyed memory over HTTP (FakeStore): …/keyedMemories on /v1/agents and /v1/scopes, the
wire shapes, errors in Google's shape naming the field or bound, and the recall judge
(off by default; on, one call of the model port over the shortlist)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jennah.adapters.models.recall_judge import ModelRecallJudge
from jennah.adapters.models.scripted import ScriptedModel
from jennah.api.app import create_app
from jennah.domain.access import ROLE_PERMISSIONS, USER_ONLY_PERMISSIONS, Permission, Role
from tests.unit.fakes import Api, make_container

A = "/v1/agents/bot/keyedMemories"
S = "/v1/scopes/bot/keyedMemories"


@pytest.fixture
def api(tmp_path: Path) -> Api:
    return Api.create(tmp_path)


def ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.get_data(as_text=True)
    body: dict[str, Any] = response.get_json()
    return body


def error(response: Any, code: int, status: str) -> dict[str, Any]:
    assert response.status_code == code, response.get_data(as_text=True)
    body: dict[str, Any] = response.get_json()["error"]
    assert body["status"] == status
    return body


def info(body: dict[str, Any]) -> dict[str, Any]:
    (detail,) = [d for d in body["details"] if d["@type"].endswith("ErrorInfo")]
    assert detail["domain"] == "jennah"
    return dict(detail)


def remember(api: Api, key: str, content: str, version: int = 0, base: str = A) -> Any:
    return api.put(f"{base}/{key}", {"content": content, "expectedVersion": version})


def test_remember_answers_the_entry_and_get_reads_it_on_both_collections(api: Api) -> None:
    body = ok(remember(api, "harbor-status-reports", "Outcome, then blockers."))
    assert set(body) == {"key", "content", "version", "links", "createTime", "updateTime"}
    assert (body["key"], body["version"], body["links"]) == ("harbor-status-reports", "1", [])
    assert body["createTime"] == body["updateTime"] and body["updateTime"].endswith("Z")
    assert ok(api.get(f"{S}/harbor-status-reports")) == body
    assert ok(api.get(f"{A}/harbor-status-reports")) == body


def test_a_stale_version_is_aborted_with_the_reason_and_current_version(api: Api) -> None:
    ok(remember(api, "k", "first"))
    ok(remember(api, "k", "second", 1))
    body = error(remember(api, "k", "stale", 1), 409, "ABORTED")
    detail = info(body)
    assert detail["reason"] == "KEYED_MEMORY_VERSION_MISMATCH"
    assert detail["metadata"]["currentVersion"] == "2"
    assert ok(api.get(f"{A}/k"))["content"] == "second"


def test_creating_an_existing_key_is_already_exists(api: Api) -> None:
    ok(remember(api, "k", "first"))
    body = error(remember(api, "k", "again"), 409, "ALREADY_EXISTS")
    assert info(body)["metadata"]["currentVersion"] == "1"


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (f"{A}/Upper", {"content": "x", "expectedVersion": 0}, "key"),
        (f"{A}/{'k' * 101}", {"content": "x", "expectedVersion": 0}, "key"),
        (f"{A}/k", {"content": "", "expectedVersion": 0}, "content"),
        (f"{A}/k", {"content": "x" * 4001, "expectedVersion": 0}, "content"),
        (f"{A}/k", {"content": "x", "expectedVersion": -1}, "expectedVersion"),
        (f"{A}/k", {"content": "x", "expectedVersion": False}, "expectedVersion"),
        (f"{A}/k", {"content": "x", "expectedVersion": "1.5"}, "expectedVersion"),
        (f"{A}/k", {"content": "x"}, "expectedVersion"),
        (f"{A}/k", {"content": "x", "expectedVersion": 0, "extra": 1}, "extra"),
    ],
)
def test_bad_input_is_400_naming_the_field_and_writes_nothing(
    api: Api, path: str, body: dict[str, Any], field: str
) -> None:
    before = api.store.snapshot()
    answer = error(api.put(path, body), 400, "INVALID_ARGUMENT")
    assert field in answer["message"]
    assert api.store.snapshot() == before


def test_the_13th_link_is_failed_precondition_naming_the_bound(api: Api) -> None:
    ok(remember(api, "hub", "hub"))
    for i in range(13):
        ok(remember(api, f"n{i}", f"neighbour {i}"))
    for i in range(12):
        ok(api.post(f"{A}/hub:link", {"target": f"n{i}"}))
    body = error(api.post(f"{A}/hub:link", {"target": "n12"}), 400, "FAILED_PRECONDITION")
    assert "12" in body["message"]
    assert info(body)["reason"] == "KEYED_MEMORY_LINK_LIMIT"
    assert len(ok(api.get(f"{A}/hub"))["links"]) == 12
    assert ok(api.post(f"{A}/hub:unlink", {"target": "n0"}))["links"][0] == "n1"


def test_forget_answers_empty_and_then_not_found(api: Api) -> None:
    ok(remember(api, "a", "alpha"))
    ok(remember(api, "b", "beta"))
    ok(api.post(f"{A}/a:link", {"target": "b"}))
    assert ok(api.delete(f"{A}/a")) == {}
    assert ok(api.get(f"{A}/b"))["links"] == []
    error(api.delete(f"{A}/a"), 404, "NOT_FOUND")
    error(api.get(f"{A}/a"), 404, "NOT_FOUND")


def test_list_is_paged_newest_update_first(api: Api) -> None:
    for key in ("a", "b", "c"):
        ok(remember(api, key, key))
    first = ok(api.get(A, pageSize="2"))
    assert [e["key"] for e in first["keyedMemories"]] == ["c", "b"]
    rest = ok(api.get(A, pageSize="2", pageToken=first["nextPageToken"]))
    assert [e["key"] for e in rest["keyedMemories"]] == ["a"] and "nextPageToken" not in rest


def test_recall_answers_memories_via_match_and_link_within_the_budget(api: Api) -> None:
    ok(remember(api, "project-harbor", "Harbor Studio website relaunch"))
    ok(remember(api, "conventions", "British spelling everywhere"))
    ok(api.post(f"{A}/project-harbor:link", {"target": "conventions"}))
    body = ok(api.post(f"{A}:recall", {"request": "harbor relaunch", "tokenBudget": 200}))
    assert [(m["key"], m["via"], m["version"]) for m in body["memories"]] == [
        ("project-harbor", "MATCH", "1"),
        ("conventions", "LINK", "1"),
    ]
    assert 0 < body["tokenCount"] <= 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"request": "harbor", "tokenBudget": 0}, "tokenBudget"),
        ({"request": "harbor", "tokenBudget": 100_001}, "tokenBudget"),
        ({"request": "  ", "tokenBudget": 10}, "request"),
        ({"request": "harbor"}, "tokenBudget"),
    ],
)
def test_bad_recall_is_400_naming_the_field(api: Api, body: dict[str, Any], field: str) -> None:
    ok(remember(api, "harbor", "the scope exists"))
    answer = error(api.post(f"{A}:recall", body), 400, "INVALID_ARGUMENT")
    assert field in answer["message"]


def test_search_is_paged(api: Api) -> None:
    for i in range(3):
        ok(remember(api, f"note-{i}", f"harbor note {i}"))
    first = ok(api.post(f"{S}:search", {"query": "harbor", "pageSize": 2}))
    assert [r["key"] for r in first["results"]] == ["note-2", "note-1"]
    assert first["results"][0]["matchedWords"] == 1
    rest = ok(api.post(f"{S}:search", {"query": "harbor", "pageToken": first["nextPageToken"]}))
    assert [r["key"] for r in rest["results"]] == ["note-0"]


def test_the_judge_is_off_by_default(api: Api) -> None:
    assert api.container.recall_judge is None


def test_a_configured_judge_makes_one_model_call_over_the_shortlist(tmp_path: Path) -> None:
    model = ScriptedModel([{"useful": ["two"]}])
    container = make_container(tmp_path, model=model)
    container.settings.keyed_recall_judge = True
    api = Api(container, create_app(container))
    ok(remember(api, "one", "harbor one"))
    ok(remember(api, "two", "harbor two"))
    body = ok(api.post(f"{A}:recall", {"request": "harbor", "tokenBudget": 500}))
    assert [m["key"] for m in body["memories"]] == ["two"]
    (call,) = model.calls
    assert "harbor one" in call.prompt and "harbor two" in call.prompt


def test_a_failing_judge_leaves_the_lexical_order(tmp_path: Path) -> None:
    judge = ModelRecallJudge(ScriptedModel(["not json"]), 1.0)
    from jennah.domain.keyed import KeyedMemory
    from jennah.errors import Internal

    entry = KeyedMemory.model_validate(
        {"key": "a", "content": "x", "version": 1, "create_time": "2024-01-01T00:00:00Z",
         "update_time": "2024-01-01T00:00:00Z"}
    )  # fmt: skip
    with pytest.raises(Internal):
        judge.judge("x", [entry])


def test_keyed_permissions_are_in_every_role_and_usable_with_api_keys() -> None:
    keyed = {Permission.KEYED_READ, Permission.KEYED_WRITE, Permission.KEYED_DELETE}
    assert [p.value for p in sorted(keyed)] == [
        "agent.keyedMemory:delete",
        "agent.keyedMemory:read",
        "agent.keyedMemory:write",
    ]
    for role in Role:
        assert keyed <= ROLE_PERMISSIONS[role]
    assert not keyed & USER_ONLY_PERMISSIONS


def test_the_openapi_document_names_the_keyed_routes() -> None:
    from jennah.api import openapi

    paths = json.loads(openapi.document_text())["paths"]
    for base in ("/v1/agents/{agentInstanceId}", "/v1/scopes/{scopeId}"):
        assert set(paths[f"{base}/keyedMemories/{{key}}"]) >= {"put", "get", "delete"}
        for tail in ("", ":recall", ":search", "/{key}:link", "/{key}:unlink"):
            assert f"{base}/keyedMemories{tail}" in paths


def test_the_lifecycle_pass_and_the_claim_reads_leave_entries_alone(api: Api) -> None:
    entry = ok(remember(api, "harbor", "Harbor weekly report"))
    ok(api.post("/v1/scopes/bot/memory:commit", {"chunks": [{"text": "a claim"}]}))
    ok(api.post("/v1/scopes/bot/memory:dream"))
    assert ok(api.get(f"{A}/harbor")) == entry
    inspected = ok(api.get("/v1/scopes/bot/memory:inspect"))
    assert [c["text"] for c in inspected["chunks"]] == ["a claim"]
