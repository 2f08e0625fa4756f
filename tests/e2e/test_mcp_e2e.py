"""The MCP server end to end, driven by the official `mcp` SDK's own client: `jnh mcp` as a
stdio subprocess and the streamable-HTTP endpoint of a running `jnh serve` (SQLite, hashing
embedder, the rules formation model), both calling that server's API.

Done when (issue 19): memories formed by memory:form come back through search_memory ->
read_memory -> read_conversation_excerpt.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.conftest import Server, jnh_command, serving
from tests.support.functions_process import FunctionProcess

pytestmark = pytest.mark.slow

AGENT = "helper"
TURNS = {
    "turns": [
        {"role": "TURN_ROLE_USER", "content": "I work at Farmacia Estrela."},
        {"role": "TURN_ROLE_ASSISTANT", "content": "Noted."},
    ],
    "observedAt": "2024-01-01T00:00:00Z",
}
READ_TOOLS = {"search_memory", "read_memory", "read_conversation_excerpt"}
KEYED_TOOLS = {"remember", "read_memories", "forget_memory"}
T = TypeVar("T")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("mcp")) as running:
        running.ok("agents", "memory", "form", AGENT, "--from-file", "-",
                   stdin=json.dumps(TURNS))  # fmt: skip
        yield running


@pytest.fixture(scope="module")
def token(server: Server) -> str:
    return server.ok("auth", "print-token").strip()


Connect = Callable[..., AbstractAsyncContextManager[Client]]


def stdio(server: Server, *flags: str, **env: str) -> AbstractAsyncContextManager[Client]:
    command, *prefix = jnh_command()
    params = StdioServerParameters(
        command=command, args=[*prefix, "mcp", *flags], env=server.env(**env),
        cwd=str(server.workdir),
    )  # fmt: skip
    return Client(params)


def http(server: Server, path: str, token: str | None) -> AbstractAsyncContextManager[Client]:
    return http_at(f"{server.endpoint}/mcp/{path}", token)


@asynccontextmanager
async def http_at(url: str, token: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as web,
        Client(streamable_http_client(url, http_client=web)) as client,
    ):
        yield client


def run(session: AbstractAsyncContextManager[Client], work: Callable[[Client], Awaitable[T]]) -> T:
    async def go() -> T:
        async with session as client:
            return await work(client)

    return asyncio.run(go())


def transports(server: Server, token: str, shared: bool = False) -> dict[str, Any]:
    suffix = "/shared" if shared else ""
    flags = ("--scope", AGENT, "--shared") if shared else ("--agent", AGENT)
    path = f"scopes/{AGENT}{suffix}" if shared else f"agents/{AGENT}"
    return {"stdio": stdio(server, *flags), "http": http(server, path, token)}


async def tool_names(client: Client) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_tools_are_listed_with_their_guidance(
    server: Server, token: str, transport: str
) -> None:
    tools = run(transports(server, token)[transport], lambda c: c.list_tools()).tools
    assert {t.name for t in tools} == READ_TOOLS | KEYED_TOOLS
    said = {t.name: t.description or "" for t in tools}
    assert "before telling the user you don't know" in said["search_memory"]
    assert all("Never show" in said[name] for name in READ_TOOLS)
    assert "expectedVersion" in said["remember"] and "reread" in said["remember"]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_household_mode_offers_no_tool_and_the_shared_brief(
    server: Server, token: str, transport: str
) -> None:
    async def look(client: Client) -> tuple[set[str], str, str]:
        templates = (await client.list_resource_templates()).resource_templates
        brief = await client.read_resource(f"memory://{AGENT}/brief")
        text = brief.contents[0].text  # type: ignore[union-attr]
        return await tool_names(client), templates[0].uri_template, text

    names, template, brief = run(transports(server, token, shared=True)[transport], look)
    assert names == set()
    assert template == "memory://{scope}/brief"
    shared = httpx.get(
        f"{server.endpoint}/v1/scopes/{AGENT}/memory/brief",
        params={"variant": "shared"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert brief == shared.json()["brief"]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_search_then_read_memory_then_read_the_excerpt(
    server: Server, token: str, transport: str
) -> None:
    """The issue's Done when: the formed memory comes back through the three read tools."""

    async def follow(client: Client) -> tuple[Any, Any, Any]:
        found = await client.call_tool("search_memory", {"query": "where do I work"})
        assert not found.is_error, found.content
        ref = found.structured_content["candidates"][0]["ref"]  # type: ignore[index]
        assert ref in found.content[0].text  # type: ignore[union-attr]
        claim = await client.call_tool("read_memory", {"ref": ref})
        assert not claim.is_error, claim.content
        (conv,) = re.findall(r"conv://\S+", claim.content[0].text)  # type: ignore[union-attr]
        assert [e["ref"] for e in claim.structured_content["evidence"]] == [conv]  # type: ignore[index]
        excerpt = await client.call_tool("read_conversation_excerpt", {"ref": conv})
        return found, claim, excerpt

    found, claim, excerpt = run(transports(server, token)[transport], follow)
    (best, *_) = found.structured_content["candidates"]
    assert "Farmacia Estrela" in best["summary"]
    assert best["ref"].startswith(f"memory://{AGENT}/")
    assert "Farmacia Estrela" in claim.content[0].text
    assert claim.structured_content["ref"] == best["ref"]
    assert not excerpt.is_error, excerpt.content
    assert excerpt.content[0].text == ("[turn 0] user: I work at Farmacia Estrela.")


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_bad_reference_is_a_tool_error_with_the_apis_status(
    server: Server, token: str, transport: str
) -> None:
    async def misuse(client: Client) -> list[Any]:
        return [
            await client.call_tool("read_memory", {"ref": "chk_123"}),
            await client.call_tool(
                "read_conversation_excerpt", {"ref": f"conv://{AGENT}/frm_nope"}
            ),
            await client.call_tool("read_memory", {"ref": f"memory://{AGENT}/chk_nope"}),
        ]

    malformed, no_step, no_claim = run(transports(server, token)[transport], misuse)
    assert malformed.is_error and no_step.is_error and no_claim.is_error
    assert malformed.structured_content["error"]["reason"] == "INVALID_REFERENCE"
    assert malformed.content[0].text.startswith("INVALID_ARGUMENT (INVALID_REFERENCE): ")
    assert no_step.structured_content["error"] | {"message": ""} == {
        "code": 404, "status": "NOT_FOUND", "reason": "STEP_NOT_FOUND", "message": "",
        "metadata": {"stepId": "frm_nope"},
    }  # fmt: skip
    assert no_claim.structured_content["error"]["status"] == "NOT_FOUND"


def test_no_reach_is_the_apis_answer_over_stdio_and_http(server: Server, tmp_path: Path) -> None:
    key = server.json("keys", "create", "--display-name", "other-bot", "--role", "member",
                      "--agent-selector", "other.*")  # fmt: skip
    secret = key["keyString"]

    async def search(client: Client) -> Any:
        return await client.call_tool("search_memory", {"query": "pharmacy"})

    over_stdio = run(stdio(server, "--agent", AGENT, "--token", secret), search)
    over_http = run(http(server, f"agents/{AGENT}", secret), search)
    for refused in (over_stdio, over_http):
        assert refused.is_error
        assert refused.structured_content["error"]["status"] in ("NOT_FOUND", "PERMISSION_DENIED")


def test_the_http_endpoint_refuses_a_caller_without_credentials(server: Server) -> None:
    answer = httpx.post(f"{server.endpoint}/mcp/agents/{AGENT}", json={})
    assert answer.status_code == 401
    assert answer.json()["error"]["status"] == "UNAUTHENTICATED"
    assert httpx.get(f"{server.endpoint}/mcp/agents/{AGENT}").status_code == 405
    assert httpx.post(f"{server.endpoint}/mcp/elsewhere", json={}).status_code == 404


def test_the_mcp_cloud_function_serves_the_tools_against_the_api(
    server: Server, token: str, tmp_path: Path
) -> None:
    """functions/mcp/main.py under functions-framework, its JENNAH_ENDPOINT the API."""
    env = {k: v for k, v in server.env().items() if k != "JENNAH_DATA_DIR"}
    function = FunctionProcess("mcp", "mcp", env | {"JENNAH_ENDPOINT": server.endpoint}, tmp_path)
    function.start().wait_ready()
    try:

        async def follow(client: Client) -> tuple[set[str], Any, Any]:
            found = await client.call_tool("search_memory", {"query": "where do I work"})
            ref = found.structured_content["candidates"][0]["ref"]  # type: ignore[index]
            return (
                await tool_names(client),
                found,
                await client.call_tool("read_memory", {"ref": ref}),
            )

        async def household(client: Client) -> set[str]:
            return await tool_names(client)

        url = function.url.removesuffix("/")
        names, found, claim = run(http_at(f"{url}/agents/{AGENT}", token), follow)
        assert names == READ_TOOLS | KEYED_TOOLS
        assert not found.is_error and not claim.is_error, (found.content, claim.content)
        assert "Farmacia Estrela" in claim.content[0].text
        assert run(http_at(f"{url}/scopes/{AGENT}/shared", token), household) == set()
        assert httpx.post(f"{url}/agents/{AGENT}", json={}).status_code == 401
    finally:
        function.stop()
