"""API keys over HTTP: created with their role binding, shown once, stored as a hash,
listed, revoked, expired; every bad request names its field and writes nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from jennah.domain.access import Role
from tests.unit.fakes import Api, add_enterprise


@pytest.fixture
def api(tmp_path: Path) -> Api:
    return Api.create(tmp_path)


def create(api: Api, body: dict[str, Any], token: str | None = None) -> dict[str, Any]:
    response = api.post("/v1/apiKeys", body) if token is None else api.post(
        "/v1/apiKeys", body, token=token)  # fmt: skip
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.headers["Cache-Control"] == "no-store"
    key: dict[str, Any] = response.get_json()
    return key


def user_with(api: Api, principal: str, role: str, **selectors: list[str]) -> str:
    token: str = api.post("/v1/users", {"principal": principal}).get_json()["token"]
    grant = api.post("/v1/roleBindings:grant", {"principal": principal, "role": role, **selectors})
    assert grant.status_code == 200, grant.get_data(as_text=True)
    return token


def test_a_new_key_carries_its_binding_and_shows_its_string_once(api: Api) -> None:
    key = create(api, {"displayName": "support bot", "role": "member",
                       "agentSelectors": ["bot.*"], "subjectSelectors": ["user.ana"]})  # fmt: skip
    assert key["name"] == f"apiKeys/{key['keyId']}"
    assert (key["displayName"], key["roles"], key["state"]) == ("support bot", ["member"], "ACTIVE")
    assert (key["agentSelectors"], key["subjectSelectors"]) == (["bot.*"], ["user.ana"])
    assert key["createdBy"] == "user:root" and "expireTime" not in key
    assert key["keyString"].startswith(f"jk_{key['keyId']}_")
    (binding,) = api.identity.list_bindings("local", f"api_key:{key['keyId']}")
    assert (binding.role, binding.agent_selectors) == (Role.MEMBER, ["bot.*"])
    listed = api.get("/v1/apiKeys").get_json()["apiKeys"]
    assert [k["keyId"] for k in listed] == [key["keyId"]]
    assert "keyString" not in listed[0]
    secret = key["keyString"].rsplit("_", 1)[1]
    assert secret not in repr(api.identity.snapshot())  # only its hash is stored


def test_the_key_acts_as_itself_within_its_reach(api: Api) -> None:
    key = create(api, {"role": "member", "agentSelectors": ["bot.*"]})
    token = key["keyString"]
    assert api.get("/v1/caller", token=token).get_json()["principal"] == f"api_key:{key['keyId']}"
    wrote = api.post("/v1/agents/bot.a/memory:commit", {"chunks": [{"text": "x"}]}, token=token)
    assert wrote.status_code == 200
    assert api.store.list_scopes("local")[0].created_by == f"api_key:{key['keyId']}"
    outside = api.post("/v1/agents/crm/memory:commit", {"chunks": [{"text": "x"}]}, token=token)
    assert outside.status_code == 404
    subject = api.post("/v1/scopes/bot.b/memory:commit", {"chunks": [{"text": "x"}]}, token=token)
    assert subject.status_code == 404  # agent reach does not give subject reach


def test_ttl_and_expire_time_set_the_expiry(api: Api) -> None:
    before = datetime.now(UTC)
    key = create(api, {"role": "member", "ttl": "3600s"})
    expiry = datetime.fromisoformat(key["expireTime"].replace("Z", "+00:00"))
    assert timedelta(minutes=59) < expiry - before < timedelta(minutes=61)
    later = (before + timedelta(days=2)).replace(microsecond=0)
    key = create(api, {"role": "member", "expireTime": later.isoformat()})
    assert key["expireTime"] == later.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_an_expired_key_is_listed_as_expired_and_refused(api: Api) -> None:
    key = create(api, {"role": "member", "ttl": "60s"})
    later = datetime.now(UTC) + timedelta(minutes=2)
    api.container.now = lambda: later
    api.container._access = None  # rebuilt with the new clock
    (listed,) = api.get("/v1/apiKeys").get_json()["apiKeys"]
    assert listed["state"] == "EXPIRED"
    assert api.get("/v1/caller", token=key["keyString"]).status_code == 401


def test_a_revoked_key_is_refused_and_revoking_again_changes_nothing(api: Api) -> None:
    key = create(api, {"role": "member", "agentSelectors": ["*"]})
    revoked = api.post(f"/v1/apiKeys/{key['keyId']}:revoke").get_json()
    assert revoked["state"] == "REVOKED" and "revokeTime" in revoked and "keyString" not in revoked
    refused = api.get("/v1/caller", token=key["keyString"])
    assert refused.status_code == 401
    assert refused.get_json()["error"]["message"] == f"API key {key['keyId']} has been revoked"
    again = api.post(f"/v1/apiKeys/{key['keyId']}:revoke").get_json()
    assert again["revokeTime"] == revoked["revokeTime"]


def test_revoking_an_unknown_or_foreign_key_is_not_found(api: Api) -> None:
    acme = add_enterprise(api.identity, "acme", "user:acme-root", "ef" * 32)
    foreign = create(api, {"role": "member"}, token=acme)
    for key_id in ("0000000000000000", foreign["keyId"]):
        response = api.post(f"/v1/apiKeys/{key_id}:revoke")
        assert response.status_code == 404
        assert response.get_json()["error"]["message"] == f"API key {key_id!r} was not found"
    assert api.identity.get_api_key(foreign["keyId"]).revoked_at is None  # type: ignore[union-attr]
    assert [k["keyId"] for k in api.get("/v1/apiKeys").get_json()["apiKeys"]] == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "role"),
        ({"role": "owner"}, "role"),
        ({"role": "member", "agentSelectors": ["ok", "bad selector"]}, "agentSelectors[1]"),
        ({"role": "member", "subjectSelectors": ["a/b"]}, "subjectSelectors[0]"),
        ({"role": "member", "ttl": "1h"}, "ttl"),
        ({"role": "member", "ttl": "0s"}, "ttl"),
        ({"role": "member", "ttl": "60s", "expireTime": "2999-01-01T00:00:00Z"}, "ttl"),
        ({"role": "member", "expireTime": "2001-01-01T00:00:00Z"}, "expireTime"),
        ({"role": "member", "expireTime": "tomorrow"}, "expireTime"),
        ({"role": "member", "displayName": "x" * 129}, "displayName"),
        ({"role": "member", "owner": "me"}, "owner"),
    ],
)
def test_a_bad_request_names_its_field_and_writes_nothing(
    api: Api, body: dict[str, Any], field: str
) -> None:
    before = api.identity.snapshot()
    response = api.post("/v1/apiKeys", body)
    assert response.status_code == 400, response.get_data(as_text=True)
    error = response.get_json()["error"]
    assert error["details"][0]["metadata"]["field"] == field
    assert api.identity.snapshot() == before


def test_only_a_root_creates_a_root_key(api: Api) -> None:
    admin = user_with(api, "user:admin", "administrator", agentSelectors=["*"])
    before = api.identity.snapshot()
    refused = api.post("/v1/apiKeys", {"role": "root"}, token=admin)
    assert refused.status_code == 403
    assert refused.get_json()["error"]["details"][0]["reason"] == "ROOT_ONLY"
    assert api.identity.snapshot() == before
    assert create(api, {"role": "member"}, token=admin)["createdBy"] == "user:admin"
    assert create(api, {"role": "root"})["roles"] == ["root"]


def test_a_root_key_still_cannot_manage(api: Api) -> None:
    key = create(api, {"role": "root"})["keyString"]
    caller = api.get("/v1/caller", token=key).get_json()
    assert caller["roles"] == ["root"] and caller["agentSelectors"] == ["*"]
    assert "iam.keys:manage" not in caller["permissions"]
    assert "agent.scopes:destroy" in caller["permissions"]
    for path in ("/v1/apiKeys", "/v1/roleBindings:grant", "/v1/users"):
        refused = api.post(path, {"role": "member", "principal": "user:x"}, token=key)
        assert refused.status_code == 403
        assert refused.get_json()["error"]["details"][0]["reason"] == (
            "MANAGEMENT_PERMISSION_WITH_API_KEY"
        )
