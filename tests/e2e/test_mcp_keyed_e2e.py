"""The keyed-memory tools (remember, read_memories, forget_memory) end to end, with the
official `mcp` SDK's client over stdio and streamable HTTP against a running `jnh serve`
(issue 18's …/keyedMemories routes, reached through jennah.client)."""

from __future__ import annotations

import pytest
from mcp import Client

from tests.e2e.conftest import Server
from tests.e2e.test_mcp_e2e import http, run, stdio

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def token(server: Server) -> str:
    return server.ok("auth", "print-token").strip()


def session(server: Server, token: str, transport: str, agent: str) -> object:
    return (
        stdio(server, "--agent", agent)
        if transport == "stdio"
        else http(server, f"agents/{agent}", token)
    )


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_remember_read_conflict_reread_and_forget(
    server: Server, token: str, transport: str
) -> None:
    agent = f"notes-{transport}"

    async def work(client: Client) -> list[object]:
        made = await client.call_tool("remember", {
            "key": "status-reports", "content": "Status reports lead with the outcome.",
            "expectedVersion": 0})  # fmt: skip
        stale = await client.call_tool("remember", {
            "key": "status-reports", "content": "Under 200 words.",
            "expectedVersion": 0})  # fmt: skip
        found = await client.call_tool("read_memories", {"query": "status reports outcome"})
        version = found.structured_content["results"][0]["version"]  # type: ignore[index]
        updated = await client.call_tool("remember", {
            "key": "status-reports", "content": "Outcome first, under 200 words.",
            "expectedVersion": version})  # fmt: skip
        gone = await client.call_tool("forget_memory", {"key": "status-reports"})
        again = await client.call_tool("forget_memory", {"key": "status-reports"})
        after = await client.call_tool("read_memories", {"query": "status reports"})
        return [made, stale, found, updated, gone, again, after]

    made, stale, found, updated, gone, again, after = run(
        session(server, token, transport, agent),
        work,  # type: ignore[arg-type]
    )
    assert not made.is_error and made.structured_content["version"] == "1"  # type: ignore[attr-defined]
    assert stale.is_error  # type: ignore[attr-defined]
    assert stale.structured_content["error"]["status"] == "ALREADY_EXISTS"  # type: ignore[attr-defined]
    (hit,) = found.structured_content["results"]  # type: ignore[attr-defined]
    assert hit["key"] == "status-reports" and hit["version"] == "1"
    assert updated.structured_content["version"] == "2"  # type: ignore[attr-defined]
    assert not gone.is_error  # type: ignore[attr-defined]
    assert again.is_error  # type: ignore[attr-defined]
    assert again.structured_content["error"]["status"] == "NOT_FOUND"  # type: ignore[attr-defined]
    assert after.structured_content.get("results", []) == []  # type: ignore[attr-defined]


def test_a_stale_version_is_aborted_with_the_reason_to_reread(server: Server, token: str) -> None:
    async def work(client: Client) -> object:
        await client.call_tool("remember", {"key": "tea", "content": "green", "expectedVersion": 0})
        await client.call_tool("remember", {"key": "tea", "content": "black", "expectedVersion": 1})
        return await client.call_tool("remember", {
            "key": "tea", "content": "oolong", "expectedVersion": 1})  # fmt: skip

    stale = run(http(server, "agents/notes-stale", token), work)
    error = stale.structured_content["error"]  # type: ignore[attr-defined]
    assert (error["status"], error["reason"]) == ("ABORTED", "KEYED_MEMORY_VERSION_MISMATCH")
