"""A Google ID token whose user belongs to several enterprises names the one it acts in
with the X-Jennah-Enterprise header (`jnh` sends it from JENNAH_ENTERPRISE)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from jennah.api.app import create_app
from jennah.cli.client import ApiClient
from jennah.domain.access import User
from tests.unit.fakes import FakeIdentityStore, FakeVerifier, add_enterprise, make_container

ANA = "user:ana@example.com"
ID_TOKEN = {"Authorization": "Bearer google-id-token"}  # FakeVerifier's token of Ana


def _client(tmp_path: Path) -> Any:
    identity = FakeIdentityStore()
    for enterprise in ("local", "acme"):
        add_enterprise(identity, enterprise, "user:root", "ab" * 32)
        identity.put_user(User(enterprise_id=enterprise, principal=ANA))
    container = make_container(tmp_path, identity=identity, verifier=FakeVerifier())
    return create_app(container).test_client()


def test_without_the_header_a_user_of_several_enterprises_is_refused(tmp_path: Path) -> None:
    answer = _client(tmp_path).get("/v1/caller", headers=ID_TOKEN)
    assert answer.status_code == 401
    error = answer.get_json()["error"]
    assert error["details"][0]["reason"] == "ENTERPRISE_AMBIGUOUS"
    assert "X-Jennah-Enterprise" in error["message"]


def test_the_header_names_the_enterprise_the_user_acts_in(tmp_path: Path) -> None:
    client = _client(tmp_path)
    for enterprise in ("acme", "local"):
        answer = client.get("/v1/caller", headers=ID_TOKEN | {"X-Jennah-Enterprise": enterprise})
        assert answer.status_code == 200, answer.get_json()
        assert (answer.get_json()["enterprise"], answer.get_json()["principal"]) == (
            enterprise,
            ANA,
        )


def test_an_enterprise_the_user_is_not_in_is_refused(tmp_path: Path) -> None:
    answer = _client(tmp_path).get(
        "/v1/caller", headers=ID_TOKEN | {"X-Jennah-Enterprise": "globex"}
    )
    assert answer.status_code == 401
    assert "globex" in answer.get_json()["error"]["message"]


def test_jnh_sends_the_enterprise_it_is_configured_with() -> None:
    seen: list[httpx.Headers] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers)
        return httpx.Response(200, json={})

    transport = httpx.MockTransport(handler)
    ApiClient("http://jennah.test", token="t", enterprise="acme", transport=transport).get("/x")
    ApiClient("http://jennah.test", token="t", transport=transport).get("/x")
    assert seen[0]["X-Jennah-Enterprise"] == "acme"
    assert "X-Jennah-Enterprise" not in seen[1]
