"""The OpenAPI 3.1 document, generated from the routes and their wire models.

python -m jennah.api.openapi            # print it
python -m jennah.api.openapi --write    # refresh the committed shared/jennah/api/openapi.json
python -m jennah.api.openapi --check    # exit 1 when the committed file is stale
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, models_json_schema

import jennah
from jennah.api import dto
from jennah.api.bodies import MAX_BODY_BYTES
from jennah.api.routes import ALL_ROUTES, Route
from jennah.domain import keyed, rules
from jennah.domain.access import KEY_ID_PATTERN, MANAGEMENT_PERMISSIONS, MEMORY_CHANGE_PERMISSIONS

COMMITTED = Path(__file__).with_name("openapi.json")
OPENAPI_PATH = "/openapi.json"
_REF = "#/components/schemas/{model}"
_ERRORS = {
    "400": "INVALID_ARGUMENT or FAILED_PRECONDITION: the message names the field or bound",
    "401": "UNAUTHENTICATED: missing, malformed, revoked or expired credential",
    "403": "PERMISSION_DENIED: the caller lacks the permission (management-class "
    "permissions are never usable with an API key)",
    "404": "NOT_FOUND: no such route or resource; a scope the caller does not reach is "
    "answered exactly as one that does not exist. A method the path does not bind is "
    'answered as Google\'s APIs answer it, NOT_FOUND ("Method not found", reason '
    "METHOD_NOT_ALLOWED), with the path's methods in an Allow header",
    "default": "any other error, as a google.rpc.Status",
}
_PAYLOAD_TOO_LARGE = (
    f"INVALID_ARGUMENT (reason PAYLOAD_TOO_LARGE): the body exceeds {MAX_BODY_BYTES:,} bytes "
    "(10 MiB); it is refused by its Content-Length before it is read, or as soon as a "
    "chunked body passes the limit"
)


class _Generator(GenerateJsonSchema):
    """Pydantic's generator without per-field titles (the camelCase names say it all)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def build_document(routes: tuple[Route, ...] = ALL_ROUTES) -> dict[str, Any]:
    """The whole document for `routes`, deterministic for a given code version."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Jennah Memory API",
            "version": jennah.__version__,
            "description": (
                "Long-term memory for AI agents. Bodies are proto3 JSON: camelCase, int64 "
                "as strings, enums by name, RFC 3339 timestamps. Errors are google.rpc.Status "
                "objects under `error`. Agent workspaces and subject scopes share one "
                "identifier space: /v1/scopes/X reaches scope X of either kind, "
                "/v1/agents/X only an agent workspace. A scope the caller does not reach "
                "is answered exactly as one that does not exist. Every refusal, those of "
                "the HTTP server included, is such a body: a request body over 10 MiB is "
                "413, a request line over 8 KiB 414, headers over 64 KiB 431, a request "
                "not received within 30 s 408 (DEADLINE_EXCEEDED), a malformed request 400; "
                "413, 414 and 431 carry the status INVALID_ARGUMENT."
            ),
        },
        "servers": [{"url": "http://127.0.0.1:8080", "description": "jnh serve"}],
        "security": [{"bearerAuth": []}],
        "paths": _paths(routes),
        "components": {
            "schemas": _schemas(routes),
            "responses": {
                "Error": {
                    "description": "A Google-style error body",
                    "content": {"application/json": {"schema": _ref("ErrorResponse")}},
                }
            },
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": (
                        "An API key (jk_…), a Google-signed ID token (production users), "
                        "or a development user credential (ju_…; `jnh auth print-token` "
                        "prints the local root's)"
                    ),
                }
            },
        },
    }


@functools.lru_cache(maxsize=1)
def document_text() -> str:
    """The document as the committed file holds it."""
    return json.dumps(build_document(), indent=2, ensure_ascii=False) + "\n"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": _REF.format(model=name)}


def _schemas(routes: tuple[Route, ...]) -> dict[str, Any]:
    pairs: list[tuple[type[BaseModel], JsonSchemaMode]] = [(dto.ErrorResponse, "serialization")]
    for route in routes:
        if route.request_model is not None:
            pairs.append((route.request_model, "validation"))
        if route.response_model is not None:
            pairs.append((route.response_model, "serialization"))
    _, top = models_json_schema(
        list(dict.fromkeys(pairs)), ref_template=_REF, schema_generator=_Generator
    )
    schemas: dict[str, Any] = top.get("$defs", {})
    return dict(sorted(schemas.items()))


def _paths(routes: tuple[Route, ...]) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for route in routes:
        paths.setdefault(route.template, {})[route.method.lower()] = _operation(route)
    paths[OPENAPI_PATH] = {
        "get": {
            "operationId": "openapi.get",
            "summary": "This document",
            "security": [],
            "responses": {"200": {"description": "The OpenAPI document"}},
        }
    }
    return paths


def _operation(route: Route) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": route.operation_id,
        "summary": route.summary,
        "description": _access_text(route),
        "parameters": _parameters(route),
    }
    if route.permission is not None:
        operation["x-jennah-permission"] = str(route.permission)
    if route.request_model is not None:
        operation["requestBody"] = {
            "required": route.body_required,
            "content": {"application/json": {"schema": _ref(route.request_model.__name__)}},
        }
    if route.body_media_type is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {route.body_media_type: {"schema": _binary(route.body_media_type)}},
        }
    ok: dict[str, Any] = {"description": "OK"}
    if route.response_model is not None:
        ok["content"] = {"application/json": {"schema": _ref(route.response_model.__name__)}}
    if route.reply_media_type is not None:
        ok["content"] = {route.reply_media_type: {"schema": _binary(route.reply_media_type)}}
    errors = dict(_ERRORS)
    if route.request_model is not None or route.body_media_type is not None:
        errors["413"] = _PAYLOAD_TOO_LARGE
    if route.body_media_type is not None:
        errors["415"] = f"INVALID_ARGUMENT: the body is not sent as {route.body_media_type}"
    operation["responses"] = {"200": ok} | {
        code: {"$ref": "#/components/responses/Error", "description": text}
        for code, text in sorted(errors.items())
    }
    if route.conditional:
        _conditional(operation)
    return operation


def _conditional(operation: dict[str, Any]) -> None:
    """A route answering a strong ETag, and 304 to an If-None-Match that names it."""
    etag = {
        "ETag": {
            "description": "A strong entity tag: a hash of the bytes served",
            "schema": {"type": "string"},
        }
    }
    operation["parameters"].append(
        {
            "name": "If-None-Match",
            "in": "header",
            "required": False,
            "description": (
                "Entity tags (RFC 9110: a comma-separated list, W/ tags compared weakly, "
                "or *): when one is the current ETag, the answer is 304 with no body"
            ),
            "schema": {"type": "string"},
        }
    )
    responses = operation["responses"]
    responses["200"]["headers"] = etag
    responses["304"] = {
        "description": "Not Modified: If-None-Match names the current ETag; no body",
        "headers": etag,
    }
    operation["responses"] = dict(sorted(responses.items()))


def _binary(media_type: str) -> dict[str, str]:
    return {"type": "string", "contentMediaType": media_type, "format": "binary"}


def _access_text(route: Route) -> str:
    if route.permission is None:
        return "Any authenticated caller."
    text = f"Requires {route.permission}"
    if route.permission in MANAGEMENT_PERMISSIONS:
        text += " (management-class: a user, never an API key)"
    if route.permission in MEMORY_CHANGE_PERMISSIONS:
        text += " (changes memory by hand: a user, never an API key)"
    if route.scope is not None:
        text += " and reach over the scope; without reach the scope is answered as missing"
    if route.scope_in_request:
        text += (
            "; naming a scope (scopeId) also requires reach over it, and without reach the "
            "scope is answered as missing; the enterprise level (no scopeId) needs no reach"
        )
    return text + "."


# Every path id is an identifier (rules.validate_identifier); some are narrower.
_PATH_ID = ("1-128 letters, digits, '_', '.', ':' or '-'", rules.IDENTIFIER_PATTERN.pattern)
_PATH_IDS = {
    "keyId": ("1-64 letters, digits or '-'", KEY_ID_PATTERN.pattern),
    "key": ("1-100 lowercase letters, digits, '-' or '_'", keyed.KEY_PATTERN.pattern),
}


def _parameters(route: Route) -> list[dict[str, Any]]:
    parameters: list[dict[str, Any]] = [
        {
            "name": name,
            "in": "path",
            "required": True,
            "description": _PATH_IDS.get(name, _PATH_ID)[0],
            "schema": {"type": "string", "pattern": _PATH_IDS.get(name, _PATH_ID)[1]},
        }
        for name in route.path_params
    ]
    if route.params_model is not None:
        schema = route.params_model.model_json_schema(
            mode="validation", ref_template=_REF, schema_generator=_Generator
        )
        for name, prop in schema.get("properties", {}).items():
            parameters.append({"name": name, "in": "query", "required": False, "schema": prop})
    return parameters


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jennah.api.openapi",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help=f"write {COMMITTED}")
    group.add_argument("--check", action="store_true", help="fail when the committed file is stale")
    args = parser.parse_args(argv)
    text = document_text()
    if args.write:
        COMMITTED.write_text(text, encoding="utf-8")
        print(f"wrote {COMMITTED}")
        return 0
    if args.check:
        stale = not COMMITTED.exists() or COMMITTED.read_text(encoding="utf-8") != text
        if stale:
            print(
                f"{COMMITTED} is stale: run python -m jennah.api.openapi --write", file=sys.stderr
            )
        return 1 if stale else 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
