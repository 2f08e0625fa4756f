"""The list routes page by page (AIP-158): scopes, agents, API keys, role bindings and
operations; pageSize, pageToken, nextPageToken; bad or foreign tokens are refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from jennah.domain.operations import FormationOperation, new_operation_id
from tests.unit.fakes import Api, add_enterprise

NOW = datetime(2030, 1, 1, tzinfo=UTC)


@pytest.fixture
def api(tmp_path: Path) -> Api:
    return Api.create(tmp_path)


def ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.get_data(as_text=True)
    body: dict[str, Any] = response.get_json()
    return body


def pages(api: Api, path: str, items: str, token: str | None = None, **params: str) -> list[Any]:
    """Every page of a list, following nextPageToken."""
    found: list[Any] = []
    page_token = ""
    while True:
        asked = {**params, **({"pageToken": page_token} if page_token else {})}
        body = ok(api.get(path, **asked) if token is None else api.get(path, token=token, **asked))
        found.append(body.get(items, []))
        page_token = body.get("nextPageToken", "")
        if not page_token:
            return found
        assert set(body) == {items, "nextPageToken"}


def user(api: Api, principal: str, role: str, **selectors: list[str]) -> str:
    token: str = ok(api.post("/v1/users", {"principal": principal}))["token"]
    ok(api.post("/v1/roleBindings:grant", {"principal": principal, "role": role, **selectors}))
    return token


def scopes(api: Api, *ids: str, kind: str = "SUBJECT") -> None:
    for scope_id in ids:
        ok(api.post("/v1/scopes", {"scopeId": scope_id, "kind": kind}))


def test_scopes_and_agents_page_through_what_the_caller_reaches(api: Api) -> None:
    scopes(api, *(f"s.{i}" for i in range(5)))
    scopes(api, *(f"a.{i}" for i in range(4)), "other.x", kind="AGENT")
    listed = pages(api, "/v1/scopes", "scopes", pageSize="3")
    assert [len(p) for p in listed] == [3, 3, 3, 1]
    assert [s["scopeId"] for p in listed for s in p] == sorted(
        [f"s.{i}" for i in range(5)] + [f"a.{i}" for i in range(4)] + ["other.x"]
    )
    agents = pages(api, "/v1/agents", "agents", pageSize="2")
    assert [[a["scopeId"] for a in p] for p in agents] == [["a.0", "a.1"], ["a.2", "a.3"],
                                                            ["other.x"]]  # fmt: skip
    subjects = pages(api, "/v1/scopes", "scopes", pageSize="4", kind="SUBJECT")
    assert [len(p) for p in subjects] == [4, 1]
    # a member reaching a.* and s.3 only: full pages of what it reaches, nothing else
    member = user(api, "user:m", "member", agentSelectors=["a.*"], subjectSelectors=["s.3"])
    reached = pages(api, "/v1/scopes", "scopes", token=member, pageSize="2")
    assert [[s["scopeId"] for s in p] for p in reached] == [["a.0", "a.1"], ["a.2", "a.3"],
                                                             ["s.3"]]  # fmt: skip
    # without pageSize, 50 to a page: one page, no token
    assert set(ok(api.get("/v1/scopes"))) == {"scopes"}


def test_api_keys_and_role_bindings_page_in_order(api: Api) -> None:
    keys = [ok(api.post("/v1/apiKeys", {"role": "member", "agentSelectors": [f"k{i}.*"]}))
            for i in range(5)]  # fmt: skip
    listed = pages(api, "/v1/apiKeys", "apiKeys", pageSize="2")
    assert [len(p) for p in listed] == [2, 2, 1]
    flat = [k for p in listed for k in p]
    assert [k["keyId"] for k in flat] == sorted(k["keyId"] for k in keys)
    assert all(k["roles"] == ["member"] and k["agentSelectors"] for k in flat)
    for name in ("user:b", "user:a", "user:c"):
        ok(api.post("/v1/roleBindings:grant", {"principal": name, "role": "member"}))
    ok(api.post("/v1/roleBindings:grant", {"principal": "user:a", "role": "administrator"}))
    bindings = [b for p in pages(api, "/v1/roleBindings", "roleBindings", pageSize="3")
                for b in p]  # fmt: skip
    pairs = [(b["principal"], b["role"]) for b in bindings]
    assert pairs == sorted(pairs) and len(pairs) == 5 + 5  # five keys, root, a twice, b, c
    of_a = pages(api, "/v1/roleBindings", "roleBindings", pageSize="1", principal="user:a")
    assert [[b["role"] for b in p] for p in of_a] == [["administrator"], ["member"]]


def operation(api: Api, enterprise: str, scope_id: str, minutes: int) -> str:
    created = NOW + timedelta(minutes=minutes)
    operation_id = new_operation_id()
    api.container.operations.create(FormationOperation(
        operation_id=operation_id, enterprise_id=enterprise, scope_id=scope_id,
        caller="user:root", request_json="{}", create_time=created, update_time=created,
        expire_time=created + timedelta(days=7)))  # fmt: skip
    return operation_id


def test_operations_are_listed_newest_first_in_the_workspaces_the_caller_reaches(
    api: Api,
) -> None:
    add_enterprise(api.identity, "acme", "user:acme-root", "ab" * 32)
    mine = [operation(api, "local", f"bot.{i % 2}", minutes=i) for i in range(5)]
    operation(api, "local", "secret.agent", minutes=10)
    operation(api, "acme", "bot.0", minutes=11)
    listed = pages(api, "/v1/operations", "operations", pageSize="2")
    names = [o["name"] for p in listed for o in p]
    assert len(names) == 6 and [len(p) for p in listed] == [2, 2, 2]
    assert names[1:] == [f"operations/{i}" for i in reversed(mine)]  # newest first
    assert listed[0][0]["metadata"]["agentInstanceId"] == "secret.agent"
    member = user(api, "user:m", "member", agentSelectors=["bot.*"])
    reached = pages(api, "/v1/operations", "operations", token=member, pageSize="4")
    assert [o["name"] for p in reached for o in p] == [f"operations/{i}" for i in reversed(mine)]
    assert "secret.agent" not in str(reached)
    nobody = ok(api.post("/v1/users", {"principal": "user:nobody"}))["token"]
    refused = api.get("/v1/operations", token=nobody)  # no agent.memory:form
    assert refused.status_code == 403


@pytest.mark.parametrize(
    "path",
    ["/v1/scopes", "/v1/agents", "/v1/apiKeys", "/v1/roleBindings", "/v1/operations"],
)
def test_a_bad_page_token_or_size_is_refused_naming_it(api: Api, path: str) -> None:
    for params, field in (({"pageToken": "not-a-token"}, "pageToken"),
                          ({"pageSize": "-1"}, "pageSize"),
                          ({"pageSize": "ten"}, "pageSize")):  # fmt: skip
        response = api.get(path, **params)
        assert response.status_code == 400, (path, params, response.get_data(as_text=True))
        error = response.get_json()["error"]
        assert error["status"] == "INVALID_ARGUMENT"
        assert error["details"][0]["metadata"]["field"] == field


def test_a_token_of_another_list_filter_or_caller_is_refused(api: Api) -> None:
    scopes(api, *(f"s.{i}" for i in range(3)))
    for _ in range(3):
        ok(api.post("/v1/apiKeys", {"role": "member"}))
    token = ok(api.get("/v1/scopes", pageSize="1"))["nextPageToken"]
    other = user(api, "user:admin", "administrator", agentSelectors=["*"], subjectSelectors=["*"])
    for path, params, caller in (
        ("/v1/apiKeys", {}, None),  # another list
        ("/v1/scopes", {"kind": "AGENT"}, None),  # other filters
        ("/v1/scopes", {}, other),  # another caller
    ):
        asked = {**params, "pageToken": token, "pageSize": "1"}
        response = api.get(path, **asked) if caller is None else api.get(path, token=caller,
                                                                           **asked)  # fmt: skip
        assert response.status_code == 400, (path, params)
        error = response.get_json()["error"]
        assert error["details"][0]["metadata"]["field"] == "pageToken"
    assert ok(api.get("/v1/scopes", pageSize="1", pageToken=token))["scopes"][0]["scopeId"] == "s.1"
