"""`jnh agents memory brief` and `jnh scopes memory brief`: the scope's brief
(GET /v1/{agents|scopes}/{id}/memory/brief)."""

from __future__ import annotations

import click

from jennah.cli import render
from jennah.cli.client import segment
from jennah.cli.options import ClientOptions, client_options

VARIANTS = ("full", "shared")


def brief_path(collection: str, resource_id: str) -> str:
    return f"/v1/{collection}/{segment(resource_id)}/memory/brief"


def brief_command(collection: str, metavar: str, noun: str) -> click.Command:
    sample = "support-bot" if collection == "agents" else "bot.support"

    @click.command(
        "brief",
        short_help="Print the brief an agent starts every conversation with.",
        help=f"""Print the brief of {noun} {metavar}: the compact block of data (at most
        2,000 tokens) an agent starts every conversation with: Identity, Directives,
        Topic index and Last conversation, each line ending with the memory:// reference
        of its claim (GET /v1/{collection}/{{id}}/memory/brief).

        --variant shared leaves out the last conversation, for a thread several people
        read. -o table (the default) and -o name print the brief as is; -o json prints
        the answer, with its tokenCount.

        \b
        Examples:
          jnh {collection} memory brief {sample}
          jnh {collection} memory brief {sample} --variant shared -o json
        """,
    )
    @click.argument("resource_id", metavar=metavar)
    @click.option(
        "--variant", type=click.Choice(VARIANTS), default="full", show_default=True,
        help="full, or shared: without the last conversation.",
    )  # fmt: skip
    @client_options
    def brief(resource_id: str, variant: str, opts: ClientOptions) -> None:
        answer = opts.client().get(brief_path(collection, resource_id), {"variant": variant})
        if opts.output == "json":
            render.emit_json(answer)
        else:
            click.echo(answer["brief"], nl=False)

    return brief
