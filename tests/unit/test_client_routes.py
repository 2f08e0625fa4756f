"""The SDK's route table (jennah.client.routes) against the committed OpenAPI document
(shared/jennah/api/openapi.json): the same operations, methods, paths, query parameters,
media types and wire models, schema for schema, so the client cannot drift from the API.
And the client imports no services: it is an HTTP client."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from jennah.api.openapi import _REF, _Generator
from jennah.client.routes import RPCS, Rpc

DOCUMENT = Path(__file__).resolve().parents[2] / "shared/jennah/api/openapi.json"
JSON = "application/json"


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DOCUMENT.read_text(encoding="utf-8"))
    return loaded


def operations(document: dict[str, Any]) -> dict[str, tuple[str, str, dict[str, Any]]]:
    return {
        operation["operationId"]: (method.upper(), path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if isinstance(operation, dict) and "operationId" in operation
    }


def test_the_client_has_every_operation_and_no_other(document: dict[str, Any]) -> None:
    assert sorted(RPCS) == sorted(operations(document))


@pytest.mark.parametrize("operation_id", sorted(RPCS))
def test_each_route_matches_the_document(document: dict[str, Any], operation_id: str) -> None:
    rpc = RPCS[operation_id]
    method, path, operation = operations(document)[operation_id]
    assert (rpc.method, rpc.template) == (method, path)
    body = operation.get("requestBody", {}).get("content", {})
    assert _media(body, rpc.request, rpc.body_media_type) == (
        _ref_name(body[JSON]["schema"]) if JSON in body else next(iter(body), None)
    )
    answer = operation["responses"]["200"].get("content", {})
    assert _media(answer, rpc.response, rpc.reply_media_type) == (
        _ref_name(answer[JSON]["schema"]) if JSON in answer else next(iter(answer), None)
    )
    query = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
    assert query == _query_names(rpc)


def test_the_client_models_are_the_documents_schemas(document: dict[str, Any]) -> None:
    pairs: list[tuple[type[BaseModel], JsonSchemaMode]] = []
    for rpc in RPCS.values():
        if rpc.request is not None:
            pairs.append((rpc.request, "validation"))
        if rpc.response is not None:
            pairs.append((rpc.response, "serialization"))
    _, top = models_json_schema(
        list(dict.fromkeys(pairs)), ref_template=_REF, schema_generator=_Generator
    )
    committed = document["components"]["schemas"]
    for name, schema in top["$defs"].items():
        assert committed.get(name) == schema, f"{name} differs from api/openapi.json"


def test_every_get_put_patch_and_delete_is_retried_and_writes_are_not() -> None:
    conditional = {f"{c}.keyedMemories.remember" for c in ("agents", "scopes")}
    for rpc in RPCS.values():
        if rpc.method != "POST" and rpc.operation_id not in conditional:
            assert rpc.idempotent, rpc.operation_id
    never = {"memory.commit", "memory.import", "memories.edit", "memories.forget",
             "keyedMemories.remember"}  # fmt: skip
    for collection in ("agents", "scopes"):
        for name in never:
            assert not RPCS[f"{collection}.{name}"].retried({}), name
        group = RPCS[f"{collection}.memories.forgetGroup"]
        assert group.retried({"validateOnly": True}) and not group.retried({"expectedCount": 1})
        for name in ("link", "unlink", "recall", "search", "get", "list", "forget"):
            assert RPCS[f"{collection}.keyedMemories.{name}"].retried({}), name
    form = RPCS["agents.memory.form"]
    assert form.retried({"formationKey": "k"}) and not form.retried({"turns": []})
    for op in ("scopes.create", "apiKeys.create", "users.create", "roleBindings.grant"):
        assert not RPCS[op].retried({}), op


def test_importing_the_client_loads_no_service_adapter_or_route() -> None:
    code = (
        "import sys, jennah.client, jennah.cli.client\n"
        "loaded = [m for m in sys.modules if m.startswith(('jennah.services', "
        "'jennah.adapters', 'jennah.bootstrap', 'jennah.api.routes', 'jennah.api.handlers'))]\n"
        "print(loaded)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def _media(content: dict[str, Any], model: type[BaseModel] | None, raw: str | None) -> str | None:
    if raw is not None:
        return raw
    return None if model is None else model.__name__


def _ref_name(schema: dict[str, Any]) -> str:
    return str(schema["$ref"]).rsplit("/", 1)[1]


def _query_names(rpc: Rpc) -> set[str]:
    if rpc.params is None:
        return set()
    return {field.alias or name for name, field in rpc.params.model_fields.items()}


def test_jnh_sends_nothing_but_through_the_sdk_transport() -> None:
    """No second HTTP layer: jennah.cli names httpx only for the transport it hands over."""
    cli = Path(__file__).resolve().parents[2] / "shared/jennah/cli"
    calls = re.compile(r"httpx\.(Client|AsyncClient|request|get|post|put|patch|delete|stream)\b")
    found = [
        f"{path.name}: {line.strip()}"
        for path in sorted(cli.glob("*.py"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if calls.search(line) or "urllib.request" in line
    ]
    assert found == []
