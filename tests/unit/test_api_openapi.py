"""The OpenAPI document: generated from the wire models, served, and committed up to date."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema_rs
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
    claim = {
        "type", "about", "summary", "whenToUse", "appliesTo", "strength", "pin", "authority",
        "confidence", "durability", "validUntil", "status", "sensitivity", "related",
        "needsEnrichment", "extensions",
    }  # fmt: skip
    assert set(chunk["properties"]) == {"text", "metadata", "validAt"} | claim
    assert chunk["properties"]["status"]["anyOf"][0]["enum"] == ["active", "dormant", "retracted"]
    confidence = chunk["properties"]["confidence"]
    assert (confidence["minimum"], confidence["maximum"]) == (0, 1)
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


# Requests the services refuse (400, naming the field), each past a bound the document
# states: the document refuses them too, so no request it calls valid gets a 400 for them.
REFUSED = [
    ("POST", "/v1/scopes/bot/memory:commit", {}, None),
    ("POST", "/v1/scopes/bot/memory:commit", {"chunks": [{"text": " "}]}, "chunks[0].text"),
    ("POST", "/v1/scopes/bot/memory:commit", {"nodes": [{"nodeId": "a b"}]}, "nodes[0].nodeId"),
    ("POST", "/v1/scopes/bot/memory:commit", {"supersessions": [{}]}, "supersessions[0]"),
    ("POST", "/v1/scopes/bot/memory:query", {"semantic": None}, None),
    ("POST", "/v1/scopes/bot/memory:query", {"semantic": {"queryText": "x", "topK": 0}},
     "semantic.topK"),
    ("POST", "/v1/scopes/bot/memory:query",
     {"semantic": {"queryText": "x", "filters": [{"key": "k", "value": "a", "values": ["b"]}]}},
     "semantic.filters[0].values"),
    ("POST", "/v1/scopes/bot/memory:query",
     {"graph": {"start": {"filters": [{"key": "Colour", "value": "red"}]}}},
     "graph.start.filters[0].key"),
    ("POST", "/v1/scopes/bot/memory:search", {"query": " "}, "query"),
    ("POST", "/v1/scopes/bot/memory:search", {"query": "x", "maxItems": 21}, "maxItems"),
    ("POST", "/v1/scopes/bot/memory:search", {"query": "x", "tokenBudget": 99}, "tokenBudget"),
    ("POST", "/v1/agents/bot/memory:form", {}, "turns"),
    ("POST", "/v1/agents/bot/memory:form",
     {"turns": [{"role": "TURN_ROLE_USER", "content": "hi"}], "formationKey": ""}, "formationKey"),
    ("POST", "/v1/apiKeys", {"role": "owner"}, "role"),
    ("POST", "/v1/roleBindings:grant", {"principal": "bob", "role": "member"}, "principal"),
    ("POST", "/v1/users", {"principal": "api_key:k1"}, "principal"),
    ("POST", "/v1/scopes", {"scopeId": "", "kind": "AGENT"}, "scopeId"),
    ("POST", "/v1/billing:setOverageMultiple", {"overageMultiple": 0.3}, "overageMultiple"),
    ("PUT", "/v1/memory/vocabulary", {"scopeId": "bot"}, "vocabulary"),
]  # fmt: skip


def _request_schema(document: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    (route,) = [r for r in ALL_ROUTES if r.method == method and r.pattern.match(path)]
    assert route.request_model is not None
    name = route.request_model.__name__
    return {"$ref": f"#/components/schemas/{name}", "components": document["components"]}


@pytest.mark.parametrize(("method", "path", "body", "field"), REFUSED)
def test_the_document_refuses_what_the_services_refuse(
    document: dict[str, Any],
    tmp_path: Path,
    method: str,
    path: str,
    body: dict[str, Any],
    field: str | None,
) -> None:
    schema = _request_schema(document, method, path)
    assert not jsonschema_rs.Draft202012Validator(schema).is_valid(body)
    api = Api.create(tmp_path)
    assert api.post("/v1/scopes", {"scopeId": "bot", "kind": "AGENT"}).status_code == 200
    answer = (api.put if method == "PUT" else api.post)(path, body)
    error = answer.get_json()["error"]
    assert (answer.status_code, error["details"][0]["metadata"].get("field")) == (400, field)


def test_path_and_query_parameters_state_their_bounds(document: dict[str, Any]) -> None:
    revoke = document["paths"]["/v1/apiKeys/{keyId}:revoke"]["post"]["parameters"]
    assert revoke[0]["schema"]["pattern"] == r"^[A-Za-z0-9\-]{1,64}$"
    listing = document["paths"]["/v1/scopes"]["get"]["parameters"]
    (page_size,) = [p for p in listing if p["name"] == "pageSize"]
    assert page_size["schema"]["minimum"] == 0
