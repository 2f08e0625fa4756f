"""Scopes over HTTP: born on first write (or explicitly), listed by reach, destroyed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jennah.domain.models import ScopeRef
from tests.unit.fakes import Api

WRITE = {
    "chunks": [{"text": "Ana likes tea"}],
    "nodes": [{"nodeId": "ana"}, {"nodeId": "tea"}],
    "edges": [{"source": "ana", "relation": "LIKES", "target": "tea"}],
}


@pytest.fixture
def api(tmp_path: Path) -> Api:
    return Api.create(tmp_path)


def ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.get_data(as_text=True)
    body: dict[str, Any] = response.get_json()
    return body


def member(api: Api, principal: str, **selectors: list[str]) -> str:
    token: str = ok(api.post("/v1/users", {"principal": principal}))["token"]
    ok(api.post("/v1/roleBindings:grant", {"principal": principal, "role": "member", **selectors}))
    return token


def test_a_first_write_creates_the_scope_with_its_kind_and_creator(api: Api) -> None:
    ok(api.post("/v1/agents/bot.a/memory:commit", WRITE))
    ok(api.post("/v1/scopes/user.ana/memory:commit", WRITE))
    ok(api.post("/v1/scopes/user.ana/memory:commit", WRITE))  # a later write changes nothing
    scopes = ok(api.get("/v1/scopes"))["scopes"]
    assert [(s["name"], s["kind"], s["createdBy"]) for s in scopes] == [
        ("scopes/bot.a", "AGENT", "user:root"),
        ("scopes/user.ana", "SUBJECT", "user:root"),
    ]
    assert all(s["createTime"].endswith("Z") for s in scopes)
    only_subjects = ok(api.get("/v1/scopes", kind="SUBJECT"))["scopes"]
    assert [s["scopeId"] for s in only_subjects] == ["user.ana"]
    agents = ok(api.get("/v1/agents"))["agents"]
    assert [a["name"] for a in agents] == ["agents/bot.a"]
    assert api.get("/v1/scopes", kind="OTHER").status_code == 400


def test_explicit_creation(api: Api) -> None:
    created = ok(api.post("/v1/scopes", {"scopeId": "bot.b", "kind": "AGENT"}))
    assert (created["scopeId"], created["kind"], created["createdBy"]) == ("bot.b", "AGENT",
                                                                           "user:root")  # fmt: skip
    again = api.post("/v1/scopes", {"scopeId": "bot.b", "kind": "SUBJECT"})
    assert again.status_code == 409
    assert again.get_json()["error"]["message"] == "scope 'bot.b' already exists"
    assert ok(api.get("/v1/agents/bot.b/memory:inspect"))["chunks"] == []
    for body, field in (({"scopeId": "a b", "kind": "AGENT"}, "scopeId"),
                        ({"scopeId": "ok"}, "kind"), ({"kind": "AGENT"}, "scopeId")):  # fmt: skip
        refused = api.post("/v1/scopes", body)
        assert refused.status_code == 400
        assert refused.get_json()["error"]["details"][0]["metadata"]["field"] == field


@pytest.mark.parametrize("kind", ["AGENT", "SUBJECT"])
def test_creation_without_reach_is_not_found_whether_or_not_the_scope_exists(
    tmp_path: Path, kind: str
) -> None:
    answers = []
    for existing in (True, False):
        api = Api.create(tmp_path / str(existing))
        if existing:
            ok(api.post("/v1/scopes", {"scopeId": "crm", "kind": "AGENT"}))
        ana = member(api, "user:ana", agentSelectors=["bot.*"], subjectSelectors=["user.*"])
        before = api.store.snapshot()
        answer = api.post("/v1/scopes", {"scopeId": "crm", "kind": kind}, token=ana)
        assert answer.status_code == 404 and api.store.snapshot() == before
        answers.append(answer.get_json())
    assert answers[0] == answers[1]
    assert answers[0]["error"]["message"] == "scope 'crm' was not found"


def test_creation_with_reach(api: Api) -> None:
    ana = member(api, "user:ana", agentSelectors=["bot.*"])
    mine = ok(api.post("/v1/scopes", {"scopeId": "bot.z", "kind": "AGENT"}, token=ana))
    assert mine["createdBy"] == "user:ana"
    taken = api.post("/v1/scopes", {"scopeId": "bot.z", "kind": "AGENT"}, token=ana)
    assert taken.status_code == 409
    subject = api.post("/v1/scopes", {"scopeId": "bot.y", "kind": "SUBJECT"}, token=ana)
    assert subject.status_code == 404  # agent selectors do not reach subject scopes


def test_destroy_erases_the_scope_and_nothing_else(api: Api) -> None:
    ok(api.post("/v1/agents/bot.a/memory:commit", WRITE))
    ok(api.post("/v1/agents/bot.b/memory:commit", WRITE))
    ok(api.post("/v1/scopes", {"scopeId": "bot.a.child", "kind": "AGENT"}))
    before = api.store.snapshot()
    erased = ok(api.delete("/v1/scopes/bot.a"))
    # its registration, one chunk, two nodes, one edge and the two briefs its lifecycle
    # pass compiled after the commit
    assert erased == {"scopeId": "bot.a", "rowsErased": "7"}
    after = api.store.snapshot()
    assert after == {table: {k: v for k, v in rows.items() if not _of(k, "bot.a")}
                     for table, rows in before.items()}  # fmt: skip
    assert api.get("/v1/scopes/bot.a/memory:inspect").status_code == 404
    assert api.delete("/v1/scopes/bot.a").status_code == 404
    assert [s["scopeId"] for s in ok(api.get("/v1/scopes"))["scopes"]] == ["bot.a.child", "bot.b"]
    ok(api.post("/v1/agents/bot.a/memory:commit", {"chunks": [{"text": "reborn"}]}))


def _of(key: Any, scope_id: str) -> bool:
    scope = key if isinstance(key, ScopeRef) else key[0]
    return bool(scope.scope_id == scope_id)


def test_destroy_needs_its_permission_and_reach(api: Api) -> None:
    ok(api.post("/v1/agents/bot.a/memory:commit", WRITE))
    before = api.store.snapshot()
    everywhere = member(api, "user:m", agentSelectors=["*"], subjectSelectors=["*"])
    refused = api.delete("/v1/scopes/bot.a", token=everywhere)
    assert refused.status_code == 403  # a member reaches it but may not destroy
    assert refused.get_json()["error"]["details"][0]["metadata"] == {
        "permission": "agent.scopes:destroy"
    }
    ok(api.post("/v1/users", {"principal": "user:admin"}))
    admin_token = ok(api.post("/v1/users", {"principal": "user:admin2"}))["token"]
    ok(api.post("/v1/roleBindings:grant", {"principal": "user:admin2", "role": "administrator",
                                           "agentSelectors": ["crm.*"]}))  # fmt: skip
    unreached = api.delete("/v1/scopes/bot.a", token=admin_token)
    missing = api.delete("/v1/scopes/ghost", token=admin_token)
    assert unreached.status_code == missing.status_code == 404
    assert api.store.snapshot() == before
