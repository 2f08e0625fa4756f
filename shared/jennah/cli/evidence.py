"""`jnh agents memory evidence` and `jnh scopes memory evidence`: a claim's evidence."""

from __future__ import annotations

from typing import Any

import click

from jennah.cli import render
from jennah.cli.client import segment
from jennah.cli.options import ClientOptions, client_options

EVIDENCE_COLUMNS = ["recordedAt", "ref", "quote"]


def evidence_command(collection: str, metavar: str, noun: str) -> click.Command:
    sample = "support-bot" if collection == "agents" else "bot.support"

    @click.command(
        "evidence",
        short_help="Print the evidence behind one claim.",
        help=f"""Print the evidence of claim MEMORY_ID of {noun} {metavar}: each quote,
        the conv:// reference of the turns it came from (an execution-log step and
        its turns: `jnh agents memory step` prints them) and when it was recorded,
        oldest first (GET /v1/{collection}/{{id}}/memories/{{memoryId}}/evidence).
        Any claim has its evidence read, expired, superseded or retracted ones too.
        -o name prints the references.

        \b
        Examples:
          jnh {collection} memory evidence {sample} chk_0123456789abcdef0123456789abcdef
          jnh {collection} memory evidence {sample} chk_0123456789abcdef0123456789abcdef -o json
        """,
    )
    @click.argument("resource_id", metavar=metavar)
    @click.argument("memory_id", metavar="MEMORY_ID")
    @client_options
    def evidence(resource_id: str, memory_id: str, opts: ClientOptions) -> None:
        path = f"/v1/{collection}/{segment(resource_id)}/memories/{segment(memory_id)}/evidence"
        emit_evidence(opts.client().get(path), opts.output)

    return evidence


def emit_evidence(answer: dict[str, Any], output: str) -> None:
    lines = answer.get("evidence", [])
    if output == "json":
        render.emit_json(answer)
    elif output == "name":
        render.emit_names([line["ref"] for line in lines])
    else:
        render.emit_section("evidence", EVIDENCE_COLUMNS, lines)
