"""`jnh agents memory dream` and `jnh scopes memory dream`: run the lifecycle pass now
(POST /v1/{agents|scopes}/{id}/memory:dream)."""

from __future__ import annotations

import click

from jennah.cli import render
from jennah.cli.client import resource_path
from jennah.cli.options import ClientOptions, client_options


def dream_command(collection: str, metavar: str, noun: str) -> click.Command:
    sample = "support-bot" if collection == "agents" else "bot.support"

    @click.command(
        "dream",
        short_help="Run the lifecycle pass now: expire, promote, decay, recompile the brief.",
        help=f"""Run the lifecycle ("dream") pass over {noun} {metavar} now
        (POST /v1/{collection}/{{id}}/memory:dream): expire the claims whose validUntil has
        arrived in the scope's time zone, promote passing claims reinforced three times to
        durable, make inferred claims not reinforced for 180 days dormant (pinned and
        explicit claims are left as they are), recompile the brief and log each change.
        Claims change state only: their words and history stay. A second run changes
        nothing. The service also runs the pass after every change and every night.

        Prints how many claims expired, were promoted and decayed, and whether the brief
        changed; -o json prints the answer as is.

        \b
        Example:
          jnh {collection} memory dream {sample}
        """,
    )
    @click.argument("resource_id", metavar=metavar)
    @client_options
    def dream(resource_id: str, opts: ClientOptions) -> None:
        answer = opts.client().post(resource_path(collection, resource_id, "dream"), {})
        if opts.output == "json":
            render.emit_json(answer)
        else:
            render.emit_pairs([(key, value) for key, value in answer.items()])

    return dream
