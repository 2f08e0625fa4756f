"""`jnh agents memory search` and `jnh scopes memory search`: turn-level retrieval
(POST /v1/{agents|scopes}/{id}/memory:search)."""

from __future__ import annotations

from typing import Any

import click

from jennah.cli import render
from jennah.cli.client import resource_path
from jennah.cli.options import ClientOptions, client_options

CANDIDATE_COLUMNS = ["ref", "type", "age", "sensitivity", "summary"]


def search_command(collection: str, metavar: str, noun: str) -> click.Command:
    sample = "support-bot" if collection == "agents" else "bot.support"

    @click.command(
        "search",
        short_help="Search the claims closest to a message (turn-level retrieval).",
        help=f"""Search the memory of {noun} {metavar} for the active, unexpired claims
        closest to QUERY, by meaning and by words (a typo is tolerated), merged: the
        search turn-level retrieval and the agent's search_memory tool run
        (POST /v1/{collection}/{{id}}/memory:search). Sensitive claims are found too,
        with their label. At most --max-items candidates, within --token-budget tokens
        for the whole rendering.

        -o table (the default) prints the candidates and the rendering's token count;
        -o json the answer, with `text`, the rendering placed in the turn; -o name the
        memory:// references (open one with `jnh {collection} memory show`).

        \b
        Examples:
          jnh {collection} memory search {sample} "when is the dentist appointment"
          jnh {collection} memory search {sample} "allergies" --max-items 10 -o json
          jnh {collection} memory search {sample} "pharmacy" --token-budget 150 -o name
        """,
    )
    @click.argument("resource_id", metavar=metavar)
    @click.argument("query", metavar="QUERY")
    @click.option(
        "--max-items", "-n", type=int, default=None,
        help="At most this many candidates, 1-20 [server default: 5].",
    )  # fmt: skip
    @click.option(
        "--token-budget", type=int, default=None,
        help="At most this many tokens for the rendering, 100-2000 [server default: 300].",
    )  # fmt: skip
    @client_options
    def search(
        resource_id: str,
        query: str,
        max_items: int | None,
        token_budget: int | None,
        opts: ClientOptions,
    ) -> None:
        body = search_body(query, max_items, token_budget)
        answer = opts.client().post(resource_path(collection, resource_id, "search"), body)
        emit_search(answer, opts.output)

    return search


def search_body(query: str, max_items: int | None, token_budget: int | None) -> dict[str, Any]:
    """The memory:search request the arguments describe (the server checks the bounds)."""
    body: dict[str, Any] = {"query": query}
    if max_items is not None:
        body["maxItems"] = max_items
    if token_budget is not None:
        body["tokenBudget"] = token_budget
    return body


def emit_search(answer: dict[str, Any], output: str) -> None:
    candidates = answer.get("candidates", [])
    if output == "json":
        render.emit_json(answer)
    elif output == "name":
        render.emit_names([c["ref"] for c in candidates])
    else:
        render.emit_section("candidates", CANDIDATE_COLUMNS, candidates)
        if candidates:
            click.echo(f"\n{answer.get('tokenCount', 0)} tokens")
