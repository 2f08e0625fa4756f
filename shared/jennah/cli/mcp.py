"""`jnh mcp`: the MCP server over stdio, for an MCP client that starts it (Claude Desktop,
Gemini CLI, …). The tools call the HTTP API with the credential jnh uses."""

from __future__ import annotations

from pathlib import Path

import click

from jennah.cli.options import data_dir_option, load_settings
from jennah.client.credentials import resolve_token


@click.command(
    "mcp",
    short_help="Serve the memory tools to an MCP client over stdio.",
    help="""Serve Jennah Memory's MCP tools over stdio (standard input and output), on
    the scope --scope names (or the agent workspace --agent names): search_memory,
    read_memory, read_conversation_excerpt (the memory formed from conversations, read
    only), remember, read_memories, forget_memory (the keyed memory), and the resource
    memory://{scope}/brief. Each tool calls the API at --endpoint with the credential
    jnh uses (--token, JENNAH_TOKEN, `jnh auth login`, else the local root credential),
    so what it reaches is what that credential reaches.

    --shared is household mode, for a thread several people read: memories belong to
    individuals, so no tool is offered, and the brief is its shared variant (without
    the last conversation).

    `jnh serve` also serves the tools over streamable HTTP at
    /mcp/{agents|scopes}/{id} (and /mcp/scopes/{id}/shared), with the caller's bearer
    credential.

    \b
    Example (an MCP client's configuration):
      {"mcpServers": {"jennah": {"command": "jnh",
        "args": ["mcp", "--agent", "support-bot"]}}}
    """,
)
@click.option("--scope", "scope_id", metavar="SCOPE", help="The scope the tools act on.")
@click.option("--agent", "agent_id", metavar="AGENT", help="The agent workspace they act on.")
@click.option("--shared", is_flag=True, help="Household mode: no tool, the shared brief.")
@click.option(
    "--endpoint", metavar="URL",
    help="The server [default: JENNAH_ENDPOINT, else http://127.0.0.1:8080].",
)  # fmt: skip
@click.option(
    "--token", envvar="JENNAH_TOKEN", metavar="TOKEN",
    help="Bearer credential [default: JENNAH_TOKEN, else the one saved by `jnh auth login`, "
    "else the local server's root credential from --data-dir].",
)  # fmt: skip
@data_dir_option
def mcp(
    scope_id: str | None,
    agent_id: str | None,
    shared: bool,
    endpoint: str | None,
    token: str | None,
    data_dir: Path | None,
) -> None:
    from jennah.mcp._api import MemoryApi  # the SDK's imports stay off other commands
    from jennah.mcp.tools import build_server

    if (scope_id is None) == (agent_id is None):
        raise click.UsageError("name exactly one of --scope and --agent")
    settings = load_settings(data_dir)
    credential = resolve_token(token, settings.data_dir)
    api = MemoryApi(
        endpoint or settings.endpoint,
        "agents" if agent_id else "scopes",
        agent_id or scope_id or "",
        f"Bearer {credential}" if credential else None,
        settings.enterprise,
    )
    build_server(lambda _ctx: api, shared=shared).run("stdio")
