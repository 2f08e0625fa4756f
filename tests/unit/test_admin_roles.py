"""Role bindings, users and the caller's own view over HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jennah.domain.access import Role, RoleBinding, User
from tests.unit.fakes import Api, add_enterprise


@pytest.fixture
def api(tmp_path: Path) -> Api:
    return Api.create(tmp_path)


def ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.get_data(as_text=True)
    body: dict[str, Any] = response.get_json()
    return body


def new_user(api: Api, principal: str) -> str:
    token: str = ok(api.post("/v1/users", {"principal": principal}))["token"]
    return token


def grant(api: Api, principal: str, role: str, token: str | None = None, **sel: Any) -> Any:
    body = {"principal": principal, "role": role, **sel}
    return api.post("/v1/roleBindings:grant", body) if token is None else api.post(
        "/v1/roleBindings:grant", body, token=token)  # fmt: skip


def test_a_granted_user_reaches_only_its_scopes(api: Api) -> None:
    for scope in ("bot.a", "crm"):
        ok(api.post(f"/v1/agents/{scope}/memory:commit", {"chunks": [{"text": scope}]}))
    ok(api.post("/v1/scopes/user.ana/memory:commit", {"chunks": [{"text": "ana"}]}))
    ok(api.post("/v1/scopes/user.bob/memory:commit", {"chunks": [{"text": "bob"}]}))
    ana = new_user(api, "user:ana")
    assert api.get("/v1/scopes", token=ana).status_code == 403  # no role yet
    binding = ok(grant(api, "user:ana", "member", agentSelectors=["bot.*"],
                       subjectSelectors=["user.ana"]))  # fmt: skip
    assert binding == {"principal": "user:ana", "role": "member", "agentSelectors": ["bot.*"],
                       "subjectSelectors": ["user.ana"]}  # fmt: skip
    listed = ok(api.get("/v1/scopes", token=ana))["scopes"]
    assert [(s["scopeId"], s["kind"]) for s in listed] == [("bot.a", "AGENT"),
                                                           ("user.ana", "SUBJECT")]  # fmt: skip
    assert [a["scopeId"] for a in ok(api.get("/v1/agents", token=ana))["agents"]] == ["bot.a"]
    query = {"semantic": {"queryText": "x"}}
    assert api.post("/v1/agents/bot.a/memory:query", query, token=ana).status_code == 200
    assert api.post("/v1/scopes/user.ana/memory:query", query, token=ana).status_code == 200
    for path in ("/v1/agents/crm/memory:query", "/v1/scopes/user.bob/memory:query"):
        assert api.post(path, query, token=ana).status_code == 404


def test_grant_replaces_the_binding_and_revoke_removes_it(api: Api) -> None:
    ok(grant(api, "user:ana", "member", agentSelectors=["a"]))
    ok(grant(api, "user:ana", "member", agentSelectors=["b"]))
    listed = ok(api.get("/v1/roleBindings", principal="user:ana"))["roleBindings"]
    assert [b["agentSelectors"] for b in listed] == [["b"]]
    assert (
        ok(api.post("/v1/roleBindings:revoke", {"principal": "user:ana", "role": "member"})) == {}
    )
    assert ok(api.get("/v1/roleBindings", principal="user:ana")) == {"roleBindings": []}
    again = api.post("/v1/roleBindings:revoke", {"principal": "user:ana", "role": "member"})
    assert again.status_code == 404
    assert again.get_json()["error"]["message"] == "user:ana has no member binding"


def test_granting_to_an_unknown_user_creates_it_without_a_credential(api: Api) -> None:
    ok(grant(api, "user:ops@example.com", "administrator", agentSelectors=["*"]))
    user = api.identity.get_user("local", "user:ops@example.com")
    assert user is not None and user.enterprise_id == "local" and user.token_hash is None


def test_a_principal_of_another_enterprise_is_neither_seen_nor_touched(api: Api) -> None:
    """The probe: another enterprise learned that user:ann existed (400
    PRINCIPAL_IN_OTHER_ENTERPRISE vs 200) and could squat a name so its real owner
    could not be granted. A principal is now a user of each enterprise separately."""
    acme = add_enterprise(api.identity, "acme", "user:ann", "ef" * 32)
    acme_before = api.identity.snapshot("acme")
    taken = ok(grant(api, "user:ann", "member", agentSelectors=["a.*"]))
    fresh = ok(grant(api, "user:nobody-anywhere", "member", agentSelectors=["a.*"]))
    assert taken == {**fresh, "principal": "user:ann"}  # the same answer either way
    assert api.identity.snapshot("acme") == acme_before  # acme's user:ann is untouched
    assert ok(api.get("/v1/caller", token=acme))["enterprise"] == "acme"
    local_ann = api.identity.get_user("local", "user:ann")
    assert local_ann is not None and local_ann.token_hash is None
    # and acme may grant its own user:ann whatever local did with the name
    ok(api.post("/v1/roleBindings:grant", {"principal": "user:ann", "role": "member"},
                token=acme))  # fmt: skip


def test_users_of_the_same_name_in_two_enterprises_each_act_in_their_own(api: Api) -> None:
    acme = add_enterprise(api.identity, "acme", "user:acme-root", "ef" * 32)
    mine = ok(api.post("/v1/users", {"principal": "user:ana"}))["token"]
    theirs = ok(api.post("/v1/users", {"principal": "user:ana"}, token=acme))["token"]
    assert mine != theirs
    assert ok(api.get("/v1/caller", token=mine))["enterprise"] == "local"
    assert ok(api.get("/v1/caller", token=theirs))["enterprise"] == "acme"
    again = api.post("/v1/users", {"principal": "user:ana"}, token=acme)
    assert again.status_code == 409  # within one enterprise a name is still unique


def test_a_key_of_another_enterprise_cannot_be_granted_a_role(api: Api) -> None:
    acme = add_enterprise(api.identity, "acme", "user:ann", "ef" * 32)
    key = ok(api.post("/v1/apiKeys", {"role": "member"}, token=acme))["keyId"]
    before = api.identity.snapshot()
    refused = grant(api, f"api_key:{key}", "administrator")
    assert refused.status_code == 404
    assert api.identity.snapshot() == before
    mine = ok(api.post("/v1/apiKeys", {"role": "member"}))["keyId"]
    ok(grant(api, f"api_key:{mine}", "administrator", agentSelectors=["*"]))


def test_only_a_root_grants_or_revokes_root(api: Api) -> None:
    admin = new_user(api, "user:admin")
    ok(grant(api, "user:admin", "administrator", agentSelectors=["*"]))
    before = api.identity.snapshot()
    for response in (
        grant(api, "user:eve", "root", token=admin),
        grant(api, "user:admin", "root", token=admin),
        api.post("/v1/roleBindings:revoke", {"principal": "user:root", "role": "root"},
                 token=admin),
    ):  # fmt: skip
        assert response.status_code == 403
        assert response.get_json()["error"]["details"][0]["reason"] == "ROOT_ONLY"
    assert api.identity.snapshot() == before
    ok(grant(api, "user:member2", "member", token=admin))  # anything but root is fine
    ok(grant(api, "user:admin", "root"))
    assert (
        ok(api.post("/v1/roleBindings:revoke", {"principal": "user:admin", "role": "root"})) == {}
    )


def test_the_last_root_stays(api: Api) -> None:
    refused = api.post("/v1/roleBindings:revoke", {"principal": "user:root", "role": "root"})
    assert refused.status_code == 400
    assert refused.get_json()["error"]["details"][0]["reason"] == "LAST_ROOT"
    ok(grant(api, "user:second", "root"))
    ok(api.post("/v1/roleBindings:revoke", {"principal": "user:root", "role": "root"}))
    roots = [b.principal for b in api.identity.list_bindings("local") if b.role is Role.ROOT]
    assert roots == ["user:second"]


def test_root_api_keys_do_not_count_as_roots_revoked_or_not(api: Api) -> None:
    """The probe: a root API key, revoked, kept the last root user's binding revocable,
    and then nobody could manage the enterprise. Only users that can manage count."""
    revoked = ok(api.post("/v1/apiKeys", {"role": "root"}))["keyId"]
    ok(api.post(f"/v1/apiKeys/{revoked}:revoke"))
    ok(api.post("/v1/apiKeys", {"role": "root"}))  # a live root key counts no more
    ghost = RoleBinding(enterprise_id="local", principal="user:ghost", role=Role.ROOT)
    api.identity.put_binding(ghost)  # a root binding without its user
    before = api.identity.snapshot()
    refused = api.post("/v1/roleBindings:revoke", {"principal": "user:root", "role": "root"})
    assert refused.status_code == 400, refused.get_data(as_text=True)
    assert refused.get_json()["error"]["details"][0]["reason"] == "LAST_ROOT"
    assert api.identity.snapshot() == before
    # the keys' and the ghost's root bindings may go: they never managed anything
    ok(api.post("/v1/roleBindings:revoke", {"principal": f"api_key:{revoked}", "role": "root"}))
    ok(api.post("/v1/roleBindings:revoke", {"principal": "user:ghost", "role": "root"}))
    assert ok(api.get("/v1/caller"))["roles"] == ["root"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/roleBindings:grant", {"principal": "ana", "role": "member"}, "principal"),
        ("/v1/roleBindings:grant", {"principal": "group:x", "role": "member"}, "principal"),
        ("/v1/roleBindings:grant", {"principal": "user:a b", "role": "member"}, "principal"),
        ("/v1/roleBindings:grant", {"principal": "api_key:a_b", "role": "member"}, "principal"),
        ("/v1/roleBindings:grant", {"principal": "user:ana", "role": "Member"}, "role"),
        ("/v1/roleBindings:grant", {"principal": "user:ana", "role": "member",
                                    "agentSelectors": ["*", "x?"]}, "agentSelectors[1]"),
        ("/v1/roleBindings:grant", {"principal": "user:ana", "role": "member",
                                    "subjectSelectors": [""]}, "subjectSelectors[0]"),
        ("/v1/roleBindings:grant", {"principal": "user:ana"}, "role"),
        ("/v1/roleBindings:revoke", {"principal": "ana", "role": "member"}, "principal"),
        ("/v1/roleBindings:revoke", {"principal": "user:ana", "role": "boss"}, "role"),
        ("/v1/users", {"principal": "api_key:abc"}, "principal"),
        ("/v1/users", {}, "principal"),
    ],
)  # fmt: skip
def test_a_bad_request_names_its_field_and_writes_nothing(
    api: Api, path: str, body: dict[str, Any], field: str
) -> None:
    before = api.identity.snapshot()
    response = api.post(path, body)
    assert response.status_code == 400, response.get_data(as_text=True)
    assert response.get_json()["error"]["details"][0]["metadata"]["field"] == field
    assert api.identity.snapshot() == before


def test_listing_bindings_validates_the_principal(api: Api) -> None:
    response = api.get("/v1/roleBindings", principal="nobody")
    assert response.status_code == 400
    assert [b["principal"] for b in ok(api.get("/v1/roleBindings"))["roleBindings"]] == [
        "user:root"
    ]


def test_users_create_gives_a_working_credential_once(api: Api) -> None:
    created = ok(api.post("/v1/users", {"principal": "user:ana"}))
    assert set(created) == {"principal", "createTime", "token"}
    caller = ok(api.get("/v1/caller", token=created["token"]))
    assert caller == {"enterprise": "local", "principal": "user:ana", "kind": "USER",
                      "roles": [], "permissions": [], "agentSelectors": [],
                      "subjectSelectors": []}  # fmt: skip
    again = api.post("/v1/users", {"principal": "user:ana"})
    assert again.status_code == 409 and again.get_json()["error"]["status"] == "ALREADY_EXISTS"
    stored = api.identity.get_user("local", "user:ana")
    assert isinstance(stored, User) and created["token"] not in stored.model_dump_json()


def test_whoami_shows_roles_permissions_and_reach(api: Api) -> None:
    caller = ok(api.get("/v1/caller"))
    assert (caller["principal"], caller["kind"], caller["roles"]) == ("user:root", "USER", ["root"])
    assert "iam.keys:manage" in caller["permissions"]
    assert caller["agentSelectors"] == ["*"] and caller["subjectSelectors"] == ["*"]
    member = new_user(api, "user:m")
    ok(grant(api, "user:m", "member", subjectSelectors=["user.m"]))
    view = ok(api.get("/v1/caller", token=member))
    assert "billing.usage:read" not in view["permissions"]
    assert (view["agentSelectors"], view["subjectSelectors"]) == ([], ["user.m"])


def test_nobody_grants_reach_wider_than_its_own(api: Api) -> None:
    """The probe: an administrator reaching other.* only granted itself and a key
    ["*"] and read secret.agent. Each wider selector is refused, naming it."""
    ok(api.post("/v1/agents/secret.agent/memory:commit", {"chunks": [{"text": "secret"}]}))
    admin = new_user(api, "user:admin")
    ok(grant(api, "user:admin", "administrator", agentSelectors=["other.*"],
             subjectSelectors=["other.*"]))  # fmt: skip
    before = api.identity.snapshot()
    for response, field, selector in (
        (grant(api, "user:admin", "administrator", token=admin, agentSelectors=["*"],
               subjectSelectors=["*"]), "agentSelectors[0]", "*"),
        (grant(api, "user:admin", "member", token=admin, agentSelectors=["other.a"],
               subjectSelectors=["other.*", "secret.*"]), "subjectSelectors[1]", "secret.*"),
        (grant(api, "user:eve", "member", token=admin, agentSelectors=["other"]),
         "agentSelectors[0]", "other"),
        (api.post("/v1/apiKeys", {"role": "member", "agentSelectors": ["*"],
                                  "subjectSelectors": ["*"]}, token=admin),
         "agentSelectors[0]", "*"),
    ):  # fmt: skip
        assert response.status_code == 403, response.get_data(as_text=True)
        error = response.get_json()["error"]
        assert error["status"] == "PERMISSION_DENIED"
        assert error["details"][0]["reason"] == "SELECTOR_NOT_COVERED"
        assert error["details"][0]["metadata"] == {"selector": selector, "field": field}
        assert repr(selector) in error["message"]
    assert api.identity.snapshot() == before
    query = {"semantic": {"queryText": "secret"}}
    assert api.post("/v1/agents/secret.agent/memory:query", query, token=admin).status_code == 404
    # within its own reach it grants freely; a root grants anything
    ok(grant(api, "user:eve", "member", token=admin, agentSelectors=["other.a", "other.b.*"],
             subjectSelectors=["other.*"]))  # fmt: skip
    key = api.post("/v1/apiKeys", {"role": "member", "agentSelectors": ["other.x.*"]},
                   token=admin)  # fmt: skip
    assert key.status_code == 200, key.get_data(as_text=True)
    ok(grant(api, "user:eve", "member", agentSelectors=["*"], subjectSelectors=["*"]))
