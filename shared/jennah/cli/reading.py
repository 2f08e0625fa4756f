"""`jnh agents|scopes memory show | excerpt | list`: read one whole claim, the turns a
conv:// reference cites, and the memory card."""

from __future__ import annotations

from typing import Any

import click

from jennah.cli import pages, render
from jennah.cli.client import local_failure, resource_path, segment
from jennah.cli.options import ClientOptions, client_options
from jennah.domain.references import parse_conv_ref, parse_memory_ref
from jennah.errors import InvalidArgument

CARD_COLUMNS = ["memoryId", "type", "status", "sensitivity", "age", "summary"]
LINEAGE_COLUMNS = ["way", "memoryId", "status", "summary"]


def _sample(collection: str) -> str:
    return "support-bot" if collection == "agents" else "bot.support"


def show_command(collection: str, metavar: str, noun: str) -> click.Command:
    sample = _sample(collection)

    @click.command(
        "show",
        short_help="Show one whole claim, whatever its status.",
        help=f"""Show claim MEMORY_ID of {noun} {metavar} whole (GET
        /v1/{collection}/{{id}}/memories/{{memoryId}}): its OKF file (front matter and
        body) and its lineage both ways (the claims it replaced and those that replaced
        it). Superseded, expired, dormant and retracted claims too. Give a memory://
        reference (as brief lines and search candidates carry) instead of {metavar} and
        MEMORY_ID. -o json prints the answer (the claim's fields, ref, lineage, okf);
        -o name prints the reference.

        \b
        Examples:
          jnh {collection} memory show {sample} chk_0123456789abcdef0123456789abcdef
          jnh {collection} memory show memory://{sample}/chk_0123456789abcdef0123456789abcdef
          jnh {collection} memory show {sample} chk_0123456789abcdef0123456789abcdef -o json
        """,
    )
    @click.argument("resource_id", metavar=f"{metavar}|MEMORY_REF")
    @click.argument("memory_id", metavar="[MEMORY_ID]", required=False)
    @client_options
    def show(resource_id: str, memory_id: str | None, opts: ClientOptions) -> None:
        scope_id, memory_id = _claim_named(resource_id, memory_id, metavar)
        path = f"/v1/{collection}/{segment(scope_id)}/memories/{segment(memory_id)}"
        emit_claim(opts.client().get(path), opts.output)

    return show


def _claim_named(first: str, memory_id: str | None, metavar: str) -> tuple[str, str]:
    if memory_id is not None:
        return first, memory_id
    if not first.startswith("memory://"):
        raise local_failure(
            InvalidArgument(f"give {metavar} and MEMORY_ID, or one memory:// reference")
        )
    try:
        ref = parse_memory_ref(first, "MEMORY_REF")
    except InvalidArgument as err:
        raise local_failure(err) from None
    return ref.scope_id, ref.memory_id


def emit_claim(answer: dict[str, Any], output: str) -> None:
    if output == "json":
        render.emit_json(answer)
        return
    if output == "name":
        render.emit_names([answer["ref"]])
        return
    click.echo(answer.get("okf", ""), nl=False)
    lineage = answer.get("lineage", {})
    rows = [
        {"way": way, **link}
        for key, way in (("supersedes", "replaced"), ("supersededBy", "replaced by"))
        for link in lineage.get(key, [])
    ]
    if rows:
        click.echo()
        click.echo(render.table(LINEAGE_COLUMNS, rows))


def excerpt_command(collection: str, metavar: str, noun: str) -> click.Command:
    sample = _sample(collection)
    ref = f"conv://{sample}/frm_0123456789abcdef0123456789abcdef#turn=0-2"

    @click.command(
        "excerpt",
        short_help="Print the conversation turns a conv:// reference cites.",
        help=f"""Print the turns a conv:// reference cites (POST
        /v1/{collection}/{{id}}/memory:readExcerpt), each with its number and role, from
        the execution-log step of {noun} {metavar}: the words a claim came from, as its
        evidence cites them. Turns are numbered from 0; a reference without #turn=
        prints every turn of the step. {metavar} defaults to the reference's own scope.
        -o json prints the answer; -o name prints one reference per turn.

        \b
        Examples:
          jnh {collection} memory excerpt {ref}
          jnh {collection} memory excerpt {sample} {ref} -o json
        """,
    )
    @click.argument("first", metavar=f"[{metavar}] CONV_REF")
    @click.argument("conv", metavar="", required=False)
    @client_options
    def excerpt(first: str, conv: str | None, opts: ClientOptions) -> None:
        scope_id, ref = (first, conv) if conv is not None else (_conv_scope(first), first)
        answer = opts.client().post(resource_path(collection, scope_id, "readExcerpt"),
                                    {"ref": ref})  # fmt: skip
        emit_excerpt(answer, opts.output)

    return excerpt


def _conv_scope(ref: str) -> str:
    try:
        return parse_conv_ref(ref, "CONV_REF").scope_id
    except InvalidArgument as err:
        raise local_failure(err) from None


def emit_excerpt(answer: dict[str, Any], output: str) -> None:
    turns = answer.get("turns", [])
    if output == "json":
        render.emit_json(answer)
    elif output == "name":
        base = answer["ref"].partition("#")[0]
        render.emit_names(f"{base}#turn={t['number']}-{t['number']}" for t in turns)
    else:
        for turn in turns:
            role = turn["role"].removeprefix("TURN_ROLE_").lower().replace("_", " ")
            click.echo(f"[turn {turn['number']}] {role}:")
            click.echo(turn["text"])


def list_command(collection: str, metavar: str, noun: str) -> click.Command:
    sample = _sample(collection)

    @click.command(
        "list",
        short_help="List the memory card: every claim, newest first.",
        help=f"""List the memory card of {noun} {metavar} (GET
        /v1/{collection}/{{id}}/memories): its claims one per line, newest first, with
        type, status, sensitivity, how long each has been remembered and its summary,
        every page of them; --page-size or --page-token asks for one page. --filter
        narrows it (AIP-160: status, type, sensitivity, appliesTo, joined with AND);
        without a status term every status but retracted is listed. -o name prints
        memory:// references; -o json the answer.

        \b
        Examples:
          jnh {collection} memory list {sample}
          jnh {collection} memory list {sample} --filter 'status = "active" AND type = "directive"'
          jnh {collection} memory list {sample} --filter 'appliesTo = "ana"' --page-size 20
        """,
    )
    @click.argument("resource_id", metavar=metavar)
    @click.option("--filter", "filter_text", metavar="FILTER", default=None,
                  help='Such as status = "active" AND sensitivity = "health".')  # fmt: skip
    @pages.page_options
    @client_options
    def list_(
        resource_id: str,
        filter_text: str | None,
        page_size: int | None,
        page_token: str | None,
        opts: ClientOptions,
    ) -> None:
        path = f"/v1/{collection}/{segment(resource_id)}/memories"
        params = {} if filter_text is None else {"filter": filter_text}
        answer = pages.fetch(opts.client(), path, params, "memories", page_size, page_token)
        emit_card(answer, opts.output)
        pages.note_next_page(answer, opts.output)

    return list_


def emit_card(answer: dict[str, Any], output: str) -> None:
    items = answer.get("memories", [])
    if output == "json":
        render.emit_json(answer)
    elif output == "name":
        render.emit_names(item["ref"] for item in items)
    else:
        render.emit_section("memories", CARD_COLUMNS, items)
