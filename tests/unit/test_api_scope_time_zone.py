"""A scope's time zone on the wire: POST /v1/scopes takes it, PATCH /v1/scopes/{scopeId}
changes it (AIP-134 updateMask), every scope view carries it (FakeStore)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jennah.domain.models import ScopeRef
from tests.unit.fakes import ENTERPRISE, TOKEN, Api

AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def api(tmp_path: Path) -> Api:
    return Api.create(tmp_path)


def ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.get_data(as_text=True)
    body: dict[str, Any] = response.get_json()
    return body


def patch(api: Api, scope: str, body: Any, **params: str) -> Any:
    return api.app.test_client().patch(
        f"/v1/scopes/{scope}", json=body, query_string=params, headers=AUTH
    )


def stored_zone(api: Api, scope: str) -> str | None:
    record = api.store.get_scope(ScopeRef(enterprise_id=ENTERPRISE, scope_id=scope))
    return None if record is None else record.time_zone


def refused(response: Any, field: str) -> str:
    assert response.status_code == 400, response.get_data(as_text=True)
    error = response.get_json()["error"]
    assert error["status"] == "INVALID_ARGUMENT"
    assert error["details"][0]["metadata"]["field"] == field
    message: str = error["message"]
    return message


# POST /v1/scopes


def test_create_takes_a_time_zone(api: Api) -> None:
    body = {"scopeId": "ana", "kind": "SUBJECT", "timeZone": "America/Los_Angeles"}
    created = ok(api.post("/v1/scopes", body))
    assert created["timeZone"] == "America/Los_Angeles"
    assert stored_zone(api, "ana") == "America/Los_Angeles"


def test_create_defaults_to_utc(api: Api) -> None:
    assert ok(api.post("/v1/scopes", {"scopeId": "ana", "kind": "AGENT"}))["timeZone"] == "UTC"
    assert stored_zone(api, "ana") == "UTC"
    # proto3: an empty string is the field's default
    body = {"scopeId": "bea", "kind": "AGENT", "timeZone": ""}
    assert ok(api.post("/v1/scopes", body))["timeZone"] == "UTC"


@pytest.mark.parametrize(
    "zone", ["Mars/Olympus_Mons", "+01:00", "../../etc/passwd", "EST5", " UTC"]
)
def test_create_refuses_a_name_that_is_not_an_iana_zone_and_writes_nothing(
    api: Api, zone: str
) -> None:
    response = api.post("/v1/scopes", {"scopeId": "ana", "kind": "SUBJECT", "timeZone": zone})
    assert "is not an IANA time zone name" in refused(response, "timeZone")
    assert stored_zone(api, "ana") is None


def test_a_scope_created_by_its_first_write_is_in_utc(api: Api) -> None:
    ok(api.post("/v1/scopes/ana/memory:commit", {"chunks": [{"text": "x"}]}))
    assert ok(api.get("/v1/scopes"))["scopes"][0]["timeZone"] == "UTC"


# PATCH /v1/scopes/{scopeId}


def test_patch_with_the_mask_sets_the_time_zone(api: Api) -> None:
    ok(api.post("/v1/scopes", {"scopeId": "ana", "kind": "SUBJECT"}))
    answer = ok(patch(api, "ana", {"timeZone": "Asia/Tokyo"}, updateMask="timeZone"))
    assert answer == answer | {"name": "scopes/ana", "scopeId": "ana", "kind": "SUBJECT",
                               "timeZone": "Asia/Tokyo"}  # fmt: skip
    assert stored_zone(api, "ana") == "Asia/Tokyo"
    assert ok(api.get("/v1/scopes"))["scopes"][0]["timeZone"] == "Asia/Tokyo"


@pytest.mark.parametrize("mask", [None, "*", "time_zone", "timeZone,timeZone"])
def test_the_mask_is_optional_and_takes_its_other_spellings(api: Api, mask: str | None) -> None:
    ok(api.post("/v1/scopes", {"scopeId": "ana", "kind": "SUBJECT"}))
    params = {} if mask is None else {"updateMask": mask}
    assert ok(patch(api, "ana", {"timeZone": "Europe/Lisbon"}, **params))["timeZone"] == (
        "Europe/Lisbon"
    )
    assert stored_zone(api, "ana") == "Europe/Lisbon"


def test_a_masked_field_absent_from_the_body_is_reset_to_utc(api: Api) -> None:
    ok(api.post("/v1/scopes", {"scopeId": "ana", "kind": "SUBJECT", "timeZone": "Asia/Tokyo"}))
    assert ok(patch(api, "ana", {}, updateMask="timeZone"))["timeZone"] == "UTC"
    assert stored_zone(api, "ana") == "UTC"


def test_no_mask_and_nothing_given_changes_nothing(api: Api) -> None:
    ok(api.post("/v1/scopes", {"scopeId": "ana", "kind": "SUBJECT", "timeZone": "Asia/Tokyo"}))
    assert ok(patch(api, "ana", {}))["timeZone"] == "Asia/Tokyo"
    assert stored_zone(api, "ana") == "Asia/Tokyo"


@pytest.mark.parametrize("mask", ["kind", "scopeId", "timeZone,kind", "", " timeZone", "TimeZone"])
def test_a_mask_naming_no_updatable_field_is_a_400_and_changes_nothing(api: Api, mask: str) -> None:
    ok(api.post("/v1/scopes", {"scopeId": "ana", "kind": "SUBJECT", "timeZone": "Asia/Tokyo"}))
    message = refused(patch(api, "ana", {"timeZone": "UTC"}, updateMask=mask), "updateMask")
    assert "updatable: timeZone" in message
    assert stored_zone(api, "ana") == "Asia/Tokyo"


def test_patch_refuses_an_unknown_zone_and_changes_nothing(api: Api) -> None:
    ok(api.post("/v1/scopes", {"scopeId": "ana", "kind": "SUBJECT", "timeZone": "Asia/Tokyo"}))
    refused(patch(api, "ana", {"timeZone": "Moon/Tranquility"}), "timeZone")
    refused(patch(api, "ana", {"timeZone": 5}), "timeZone")
    refused(patch(api, "ana", {"kind": "AGENT"}), "kind")  # not a field of the body
    assert stored_zone(api, "ana") == "Asia/Tokyo"


def test_an_agent_workspace_is_patched_as_a_scope_and_lists_with_its_zone(api: Api) -> None:
    ok(api.post("/v1/agents/bot/memory:commit", {"chunks": [{"text": "x"}]}))
    answer = ok(patch(api, "bot", {"timeZone": "Europe/Berlin"}, updateMask="timeZone"))
    assert (answer["kind"], answer["timeZone"]) == ("AGENT", "Europe/Berlin")
    (agent,) = ok(api.get("/v1/agents"))["agents"]
    assert (agent["name"], agent["timeZone"]) == ("agents/bot", "Europe/Berlin")


def test_patching_a_scope_that_does_not_exist_is_not_found(api: Api) -> None:
    response = patch(api, "ghost", {"timeZone": "UTC"})
    assert response.status_code == 404
    assert response.get_json()["error"]["message"] == "scope 'ghost' was not found"
    assert stored_zone(api, "ghost") is None


def test_there_is_no_patch_on_the_agents_collection(api: Api) -> None:
    ok(api.post("/v1/agents/bot/memory:commit", {"chunks": [{"text": "x"}]}))
    response = api.app.test_client().patch("/v1/agents/bot", json={}, headers=AUTH)
    assert response.status_code == 404


def test_a_patch_without_a_body_reads_as_an_empty_one(api: Api) -> None:
    ok(api.post("/v1/scopes", {"scopeId": "ana", "kind": "SUBJECT", "timeZone": "Asia/Tokyo"}))
    client = api.app.test_client()
    assert ok(client.patch("/v1/scopes/ana", headers=AUTH))["timeZone"] == "Asia/Tokyo"
    reset = client.patch("/v1/scopes/ana", query_string={"updateMask": "*"}, headers=AUTH)
    assert ok(reset)["timeZone"] == "UTC"


def test_the_document_says_the_patch_body_is_optional() -> None:
    from jennah.api import openapi

    operation = openapi.build_document()["paths"]["/v1/scopes/{scopeId}"]["patch"]
    assert operation["requestBody"]["required"] is False
    assert [p["name"] for p in operation["parameters"]] == ["scopeId", "updateMask"]
    assert operation["x-jennah-permission"] == "agent.memory:commit"
