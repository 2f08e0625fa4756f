"""`jnh agents memory edit` and `jnh scopes memory edit`: correct one claim (edit =
supersede)."""

from __future__ import annotations

from typing import Any

import click

from jennah.cli import render
from jennah.cli.client import local_failure, segment
from jennah.cli.options import ClientOptions, client_options
from jennah.domain.access import API_KEY_PREFIX
from jennah.errors import PermissionDenied

EDIT_COLUMNS = ["id", "status", "authority", "supersedes", "supersededBy", "summary", "text"]


def edit_command(collection: str, metavar: str, noun: str) -> click.Command:
    sample = "support-bot" if collection == "agents" else "bot.support"
    memory = "chk_0123456789abcdef0123456789abcdef"

    @click.command(
        "edit",
        short_help="Correct one claim: new words supersede it.",
        help=f"""Correct claim MEMORY_ID of {noun} {metavar} with new words
        (POST /v1/{collection}/{{id}}/memories/{{memoryId}}:edit). Nothing is
        overwritten: the words become a new claim (authority user_explicit, the old
        claim's type, subject, strength, pin and validUntil) and the old one is
        superseded, pointing at it; both stay readable, and the brief uses the new
        words at once. Only an active claim can be edited. --summary sets the new
        one-line summary (else the text's first line).

        Prints the new claim and the superseded one; -o name prints the new claim's
        id. --dry-run prints the request and sends nothing. Needs
        agent.memory:edit, which an API key never has: jnh refuses locally when its
        credential is one.

        \b
        Examples:
          jnh {collection} memory edit {sample} {memory} --text "Practice is on Thursdays"
          jnh {collection} memory edit {sample} {memory} \\
            --text "Maya's coach is Ana Ruiz" --summary "Maya's coach: Ana Ruiz" -o json
          jnh {collection} memory edit {sample} {memory} --text "..." --dry-run
        """,
    )
    @click.argument("resource_id", metavar=metavar)
    @click.argument("memory_id", metavar="MEMORY_ID")
    @click.option("--text", required=True, metavar="TEXT", help="The claim's new words.")
    @click.option("--summary", metavar="TEXT", help="Its new one-line summary.")
    @click.option("--dry-run", is_flag=True, help="Print the request; send nothing.")
    @client_options
    def edit(
        resource_id: str,
        memory_id: str,
        text: str,
        summary: str | None,
        dry_run: bool,
        opts: ClientOptions,
    ) -> None:
        path = f"/v1/{collection}/{segment(resource_id)}/memories/{segment(memory_id)}:edit"
        body = {"text": text} | ({} if summary is None else {"summary": summary})
        refuse_api_key(opts)
        if dry_run:
            click.echo(f"POST {path}")
            render.emit_json(body)
            return
        emit_edit(opts.client().post(path, body), opts.output)

    return edit


def refuse_api_key(opts: ClientOptions) -> None:
    """Exit 5 before any request when the credential is an API key (`jk_…`)."""
    token = opts.credential()
    if token is not None and token.startswith(API_KEY_PREFIX):
        raise local_failure(
            PermissionDenied(
                "editing memory needs agent.memory:edit, which can never be used with an API "
                "key (an agent reads memory, it does not rewrite it), so jnh sent nothing; "
                "call as a user (--token with a user credential, or `jnh auth login`)"
            )
        )


def emit_edit(answer: dict[str, Any], output: str) -> None:
    if output == "json":
        render.emit_json(answer)
    elif output == "name":
        render.emit_names([answer["memory"]["id"]])
    else:
        click.echo("memory (new)")
        click.echo(render.table(EDIT_COLUMNS, [answer["memory"]]))
        click.echo()
        click.echo("superseded")
        click.echo(render.table(EDIT_COLUMNS, [answer["superseded"]]))
