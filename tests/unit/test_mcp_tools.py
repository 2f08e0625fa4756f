"""jennah.mcp's tools through the SDK's own client, in process, over a mocked API."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from mcp import Client

from jennah.mcp._api import MemoryApi
from jennah.mcp.tools import PER_PERSON_TOOLS, build_server


def server_over(answer: httpx.Response, shared: bool = False) -> tuple[Any, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answer

    api = MemoryApi("http://local", "agents", "bot", "Bearer t", None, httpx.MockTransport(handle))
    return build_server(lambda _ctx: api, shared=shared), seen


def call(server: Any, name: str, arguments: dict[str, Any]) -> Any:
    async def go() -> Any:
        async with Client(server) as client:
            return await client.call_tool(name, arguments)

    return asyncio.run(go())


def names(server: Any) -> set[str]:
    async def go() -> set[str]:
        async with Client(server) as client:
            return {t.name for t in (await client.list_tools()).tools}

    return asyncio.run(go())


def test_household_mode_offers_none_of_the_per_person_tools() -> None:
    assert names(server_over(httpx.Response(200, json={}))[0]) == set(PER_PERSON_TOOLS)
    assert names(server_over(httpx.Response(200, json={}), shared=True)[0]) == set()


def test_a_reference_to_another_scope_is_not_found_without_asking_the_api() -> None:
    server, seen = server_over(httpx.Response(200, json={"okf": "x"}))
    result = call(server, "read_memory", {"ref": "memory://someone.else/chk_1"})
    assert result.is_error and seen == []
    assert result.structured_content["error"]["status"] == "NOT_FOUND"


def test_an_api_error_is_a_tool_error_with_its_status_reason_and_message() -> None:
    info = {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "KEYED_MEMORY_NOT_FOUND",
        "domain": "jennah",
        "metadata": {"key": "k"},
    }
    error = {"error": {"code": 404, "status": "NOT_FOUND", "message": "no such entry",
                       "details": [info]}}  # fmt: skip
    server, _ = server_over(httpx.Response(404, json=error))
    result = call(server, "forget_memory", {"key": "k"})
    assert result.is_error
    assert result.content[0].text == "NOT_FOUND (KEYED_MEMORY_NOT_FOUND): no such entry"
    assert result.structured_content["error"]["metadata"] == {"key": "k"}


def test_remember_sends_expected_version() -> None:
    entry = {
        "key": "k",
        "content": "v",
        "version": "1",
        "links": [],
        "createTime": "2025-01-02T03:04:05Z",
        "updateTime": "2025-01-02T03:04:05Z",
    }
    server, seen = server_over(httpx.Response(200, json=entry))
    result = call(server, "remember", {"key": "k", "content": "v", "expectedVersion": 0})
    assert not result.is_error and result.structured_content == entry
    assert seen[0].method == "PUT" and b'"expectedVersion":0' in seen[0].content
