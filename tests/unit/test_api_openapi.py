"""The OpenAPI document: generated from the wire models, served, and committed up to date."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jennah.api import openapi
from jennah.api.routes import ALL_ROUTES
from tests.unit.fakes import Api


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return openapi.build_document()


def test_the_committed_document_is_up_to_date() -> None:
    committed = openapi.COMMITTED.read_text(encoding="utf-8")
    assert committed == openapi.document_text(), (
        "shared/jennah/api/openapi.json is stale: run python -m jennah.api.openapi --write"
    )


def test_check_mode_reports_a_stale_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "openapi.json"
    stale.write_text("{}\n", encoding="utf-8")
    monkeypatch.setattr(openapi, "COMMITTED", stale)
    assert openapi.main(["--check"]) == 1
    assert openapi.main(["--write"]) == 0
    assert openapi.main(["--check"]) == 0


def test_every_route_is_documented(document: dict[str, Any]) -> None:
    assert document["openapi"].startswith("3.1")
    for route in ALL_ROUTES:
        operation = document["paths"][route.template][route.method.lower()]
        assert operation["operationId"] == route.operation_id
        assert operation["responses"]["default"]["$ref"] == "#/components/responses/Error"
    assert "/v1/scopes/{scopeId}/memory:form" not in document["paths"]


def test_request_schemas_forbid_unknown_fields_and_use_camel_case(
    document: dict[str, Any],
) -> None:
    schemas = document["components"]["schemas"]
    chunk = schemas["CommitChunk"]
    assert chunk["additionalProperties"] is False
    assert set(chunk["properties"]) == {"text", "metadata", "validAt"}
    assert chunk["properties"]["validAt"]["anyOf"][0]["format"] == "date-time"
    operators = schemas["Filter"]["properties"]["operator"]["enum"]
    assert operators == ["OPERATOR_EQUALS", "OPERATOR_NOT_EQUALS", "OPERATOR_IN"]


def test_int64_counts_are_strings_and_the_error_schema_is_googles(
    document: dict[str, Any],
) -> None:
    schemas = document["components"]["schemas"]
    written = schemas["CommitResponse"]["properties"]["chunksWritten"]
    assert (written["type"], written["format"]) == ("string", "int64")
    assert set(schemas["Status"]["properties"]) == {"code", "status", "message", "details"}
    assert "@type" in schemas["ErrorInfo"]["properties"]


def test_inspect_documents_its_query_parameters(document: dict[str, Any]) -> None:
    operation = document["paths"]["/v1/scopes/{scopeId}/memory:inspect"]["get"]
    names = [p["name"] for p in operation["parameters"]]
    assert names == ["scopeId", "graph", "asOfValid", "allHistory", "pageSize", "pageToken"]


def test_the_server_serves_the_document_without_credentials(tmp_path: Path) -> None:
    api = Api.create(tmp_path)
    response = api.app.test_client().get("/openapi.json")
    assert response.status_code == 200
    assert response.get_json() == json.loads(openapi.document_text())


def test_every_operation_documents_its_permission(document: dict[str, Any]) -> None:
    for route in ALL_ROUTES:
        operation = document["paths"][route.template][route.method.lower()]
        assert operation.get("x-jennah-permission") == (
            None if route.permission is None else str(route.permission)
        )
        assert "403" in operation["responses"] and "401" in operation["responses"]
    keys = document["paths"]["/v1/apiKeys"]["post"]
    assert "management-class" in keys["description"]
    revoke = document["paths"]["/v1/apiKeys/{keyId}:revoke"]["post"]
    assert [p["name"] for p in revoke["parameters"]] == ["keyId"]
    assert "keyString" in document["components"]["schemas"]["ApiKeyResource"]["properties"]
