"""jennah.mcp's HTTP calls (`_api`) and the endpoint's own refusals, without a server."""

from __future__ import annotations

import contextlib
import json
import threading
from typing import Any

import httpx
import pytest
from werkzeug.test import Client as WsgiClient

from jennah.mcp import endpoint as endpoint_module
from jennah.mcp._api import ApiFailure, MemoryApi
from jennah.mcp.endpoint import McpEndpoint


def recording(answer: httpx.Response) -> tuple[list[httpx.Request], httpx.MockTransport]:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answer

    return seen, httpx.MockTransport(handle)


@pytest.mark.parametrize(
    ("call", "method", "url"),
    [
        (lambda a: a.search("tea", 3, None), "POST",
         "https://fn.example/jennah-query/v1/agents/bot/memory:search"),
        (lambda a: a.get_memory("chk_1"), "GET",
         "https://fn.example/jennah-inspect/v1/agents/bot/memories/chk_1"),
        (lambda a: a.read_excerpt("conv://bot/frm_1"), "POST",
         "https://fn.example/jennah-inspect/v1/agents/bot/memory:readExcerpt"),
        (lambda a: a.brief("shared"), "GET",
         "https://fn.example/jennah-inspect/v1/agents/bot/memory/brief?variant=shared"),
        (lambda a: a.remember("tea-pref", "green", 0), "PUT",
         "https://fn.example/jennah-keyed/v1/agents/bot/keyedMemories/tea-pref"),
        (lambda a: a.search_keyed("tea", None, "next"), "POST",
         "https://fn.example/jennah-keyed/v1/agents/bot/keyedMemories:search"),
        (lambda a: a.forget_keyed("tea-pref"), "DELETE",
         "https://fn.example/jennah-keyed/v1/agents/bot/keyedMemories/tea-pref"),
    ],
)  # fmt: skip
def test_each_route_goes_to_the_function_serving_it_with_the_callers_headers(
    call: Any, method: str, url: str
) -> None:
    seen, transport = recording(httpx.Response(200, json={}))
    api = MemoryApi("https://fn.example/jennah-{function}", "agents", "bot", "Bearer ju_x",
                    "acme", transport)  # fmt: skip
    with contextlib.suppress(ApiFailure):  # {} is no answer of most routes: UNKNOWN
        call(api)
    (request,) = seen
    assert (request.method, str(request.url)) == (method, url)
    assert request.headers["authorization"] == "Bearer ju_x"
    assert request.headers["x-jennah-enterprise"] == "acme"


def test_bodies_carry_the_apis_field_names() -> None:
    seen, transport = recording(httpx.Response(200, json={}))
    api = MemoryApi("http://local", "scopes", "fam", None, None, transport)
    for call in (
        lambda: api.search("tea", 3, 200),
        lambda: api.remember("k", "v", 4),
        lambda: api.search_keyed("tea", 10, "tok"),
    ):
        with contextlib.suppress(ApiFailure):  # {} is no answer of these routes: UNKNOWN
            call()
    bodies = [json.loads(r.content) for r in seen]
    assert bodies == [
        {"query": "tea", "maxItems": 3, "tokenBudget": 200},
        {"content": "v", "expectedVersion": 4},
        {"query": "tea", "pageSize": 10, "pageToken": "tok"},
    ]
    assert "authorization" not in seen[0].headers


def test_a_google_error_body_becomes_an_api_failure_with_its_reason() -> None:
    error = {"error": {"code": 409, "status": "ABORTED", "message": "version 2 is stale",
             "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                          "reason": "KEYED_MEMORY_VERSION_MISMATCH", "domain": "jennah",
                          "metadata": {"currentVersion": "3"}}]}}  # fmt: skip
    _, transport = recording(httpx.Response(409, json=error))
    with pytest.raises(ApiFailure) as caught:
        MemoryApi("http://local", "agents", "bot", transport=transport).remember("k", "v", 2)
    assert caught.value.body() == {
        "code": 409, "status": "ABORTED", "reason": "KEYED_MEMORY_VERSION_MISMATCH",
        "message": "version 2 is stale", "metadata": {"currentVersion": "3"},
    }  # fmt: skip


def test_an_answer_that_is_no_google_error_is_unknown() -> None:
    _, transport = recording(httpx.Response(502, text="bad gateway"))
    with pytest.raises(ApiFailure) as caught:
        MemoryApi("http://local", "agents", "bot", transport=transport).brief("full")
    assert (caught.value.code, caught.value.status) == (502, "UNKNOWN")


def test_an_unreachable_api_is_unavailable() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    api = MemoryApi("http://local", "agents", "bot", transport=httpx.MockTransport(refuse))
    with pytest.raises(ApiFailure) as caught:
        api.brief("full")
    assert caught.value.status == "UNAVAILABLE"


@pytest.mark.parametrize(
    ("method", "path", "headers", "code", "reason"),
    [
        ("POST", "/mcp/agents/bot", {}, 401, "CREDENTIALS_MISSING"),
        ("GET", "/mcp/agents/bot", {"Authorization": "Bearer x"}, 405, "METHOD_NOT_ALLOWED"),
        ("DELETE", "/mcp/agents/bot", {"Authorization": "Bearer x"}, 405, "METHOD_NOT_ALLOWED"),
        ("POST", "/mcp/people/bot", {"Authorization": "Bearer x"}, 404, "ROUTE_NOT_FOUND"),
        ("POST", "/mcp/agents/bot/other", {"Authorization": "Bearer x"}, 404, "ROUTE_NOT_FOUND"),
        ("POST", "/mcp", {"Authorization": "Bearer x"}, 404, "ROUTE_NOT_FOUND"),
    ],
)
def test_the_endpoint_refuses_in_googles_shape_before_the_mcp_server(
    method: str, path: str, headers: dict[str, str], code: int, reason: str
) -> None:
    endpoint = McpEndpoint("http://local", mount="/mcp")
    answer = WsgiClient(endpoint).open(path, method=method, headers=headers, json={})
    assert answer.status_code == code
    (info,) = answer.get_json()["error"]["details"]
    assert (info["reason"], info["domain"]) == (reason, "jennah")
    assert endpoint._apps == {}  # no MCP server was started for a refused request


CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "search_memory", "arguments": {"query": "tea"}}}  # fmt: skip
MCP_HEADERS = {"Authorization": "Bearer ju_x", "Accept": "application/json, text/event-stream"}


def test_a_tool_call_passes_the_callers_authorization_through() -> None:
    seen, transport = recording(
        httpx.Response(200, json={"candidates": [], "tokenCount": 0, "text": ""})
    )
    endpoint = McpEndpoint("http://local", mount="/mcp", transport=transport)
    answer = WsgiClient(endpoint).post("/mcp/scopes/fam", headers=MCP_HEADERS, json=CALL)
    assert answer.status_code == 200
    assert answer.get_json()["result"]["isError"] is False
    (request,) = seen
    assert str(request.url) == "http://local/v1/scopes/fam/memory:search"
    assert request.headers["authorization"] == "Bearer ju_x"


def test_a_request_that_outlasts_its_deadline_is_answered_504(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()

    def stall(request: httpx.Request) -> httpx.Response:
        release.wait(10)
        return httpx.Response(200, json={"candidates": [], "text": ""})

    monkeypatch.setattr(endpoint_module, "REQUEST_SECONDS", 0.2)
    endpoint = McpEndpoint("http://local", mount="/mcp", transport=httpx.MockTransport(stall))
    try:
        answer = WsgiClient(endpoint).post("/mcp/agents/bot", headers=MCP_HEADERS, json=CALL)
    finally:
        release.set()
    assert answer.status_code == 504
    assert answer.get_json()["error"]["status"] == "DEADLINE_EXCEEDED"
