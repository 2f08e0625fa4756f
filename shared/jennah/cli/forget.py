"""`jnh {agents|scopes} memory forget | forget-group | suppressions`: forget = retract +
suppress (issue 17)."""

from __future__ import annotations

from typing import Any

import click

from jennah.cli import render
from jennah.cli.client import segment
from jennah.cli.options import ClientOptions, client_options

SUPPRESSION_COLUMNS = ["id", "memoryId", "text", "createdAt", "createdBy"]


def _sample(collection: str) -> str:
    return "support-bot" if collection == "agents" else "bot.support"


def forget_command(collection: str, metavar: str, noun: str) -> click.Command:
    sample = _sample(collection)

    @click.command(
        "forget",
        short_help="Forget one claim for good (retract + suppress).",
        help=f"""Forget claim MEMORY_ID of {noun} {metavar}: it becomes retracted (kept,
        out of search and the brief at once) and a suppression rule keeps formation from
        learning it back, in the same words or others
        (POST /v1/{collection}/{{id}}/memories/{{memoryId}}:forget). Asks first unless
        --yes. -o name prints the suppression's id.

        \b
        Examples:
          jnh {collection} memory forget {sample} chk_0123456789abcdef0123456789abcdef
          jnh {collection} memory forget {sample} chk_0123456789abcdef0123456789abcdef --yes -o json
        """,
    )
    @click.argument("resource_id", metavar=metavar)
    @click.argument("memory_id", metavar="MEMORY_ID")
    @click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
    @client_options
    def forget(resource_id: str, memory_id: str, yes: bool, opts: ClientOptions) -> None:
        if not yes:
            click.confirm(f"Forget memory {memory_id} for good?", abort=True, err=True)
        path = f"/v1/{collection}/{segment(resource_id)}/memories/{segment(memory_id)}:forget"
        answer = opts.client().post(path, {})
        rule = answer.get("suppression", {})
        if opts.output == "json":
            render.emit_json(answer)
        elif opts.output == "name":
            render.emit_names([rule.get("id", "")])
        else:
            render.emit_section("suppression", SUPPRESSION_COLUMNS, [rule])

    return forget


def forget_group_command(collection: str, metavar: str, noun: str) -> click.Command:
    sample = _sample(collection)

    @click.command(
        "forget-group",
        short_help="Forget a group of claims (a person, a topic, a type).",
        help=f"""Forget every active, dormant or expired claim of {noun} {metavar} picked by
        exactly one of --applies-to NODE_ID, --about TEXT or --type TYPE
        (POST /v1/{collection}/{{id}}/memories:forgetGroup). It first counts the group
        (validateOnly) and shows the count; --dry-run stops there. Otherwise it asks
        for confirmation (unless --yes) and sends the count as expectedCount: if the
        group changed meanwhile, nothing is forgotten (GROUP_CHANGED).

        \b
        Examples:
          jnh {collection} memory forget-group {sample} --about "Ana" --dry-run
          jnh {collection} memory forget-group {sample} --applies-to ana --yes -o json
        """,
    )
    @click.argument("resource_id", metavar=metavar)
    @click.option("--applies-to", "applies_to", metavar="NODE_ID", help="Claims about this node.")
    @click.option("--about", metavar="TEXT", help="Claims whose `about` is TEXT (any case).")
    @click.option("--type", "memory_type", metavar="TYPE", help="Claims of this type.")
    @click.option("--dry-run", is_flag=True, help="Only count the group.")
    @click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
    @client_options
    def forget_group(
        resource_id: str,
        applies_to: str | None,
        about: str | None,
        memory_type: str | None,
        dry_run: bool,
        yes: bool,
        opts: ClientOptions,
    ) -> None:
        picked = {"appliesTo": applies_to, "about": about, "type": memory_type}
        body: dict[str, Any] = {k: v for k, v in picked.items() if v is not None}
        if len(body) != 1:
            raise click.UsageError("give exactly one of --applies-to, --about or --type")
        client = opts.client()
        path = f"/v1/{collection}/{segment(resource_id)}/memories:forgetGroup"
        counted = client.post(path, body | {"validateOnly": True})
        count = int(counted.get("count", 0))
        if dry_run:
            _emit_group(counted, opts.output)
            return
        if not yes:
            click.confirm(f"Forget {count} memories for good?", abort=True, err=True)
        _emit_group(client.post(path, body | {"expectedCount": count}), opts.output)

    return forget_group


def _emit_group(answer: dict[str, Any], output: str) -> None:
    if output == "json":
        render.emit_json(answer)
    elif output == "name":
        render.emit_names(answer.get("memoryIds", []))
    else:
        render.emit_pairs([("count", answer.get("count", 0)),
                           ("validateOnly", answer.get("validateOnly", False))])  # fmt: skip
        render.emit_section("memories", ["id"], [{"id": i} for i in answer.get("memoryIds", [])])


def suppressions_command(collection: str, metavar: str, noun: str) -> click.Command:
    sample = _sample(collection)

    @click.command(
        "suppressions",
        short_help="List the suppression rules, or delete one.",
        help=f"""List the suppression rules of {noun} {metavar}, page by page
        (GET /v1/{collection}/{{id}}/suppressions); with --delete SUPPRESSION_ID remove
        that rule instead (DELETE …/suppressions/{{suppressionId}}): the fact may be
        formed again; the forgotten claim stays retracted.

        \b
        Examples:
          jnh {collection} memory suppressions {sample}
          jnh {collection} memory suppressions {sample} --delete sup_0123456789abcdef --yes
        """,
    )
    @click.argument("resource_id", metavar=metavar)
    @click.option("--delete", "delete_id", metavar="SUPPRESSION_ID", help="Remove this rule.")
    @click.option("--page-size", type=int, default=0, help="At most this many rules per page.")
    @click.option("--page-token", default="", help="nextPageToken of the previous page.")
    @click.option("--yes", is_flag=True, help="Do not ask before deleting.")
    @client_options
    def suppressions(
        resource_id: str,
        delete_id: str | None,
        page_size: int,
        page_token: str,
        yes: bool,
        opts: ClientOptions,
    ) -> None:
        base = f"/v1/{collection}/{segment(resource_id)}/suppressions"
        if delete_id is not None:
            if not yes:
                click.confirm(f"Delete suppression {delete_id}?", abort=True, err=True)
            opts.client().delete(f"{base}/{segment(delete_id)}")
            if opts.output == "json":
                render.emit_json({})
            else:
                render.emit_names([delete_id])
            return
        params = {"pageSize": str(page_size)} | ({"pageToken": page_token} if page_token else {})
        answer = opts.client().get(base, params)
        rules = answer.get("suppressions", [])
        if opts.output == "json":
            render.emit_json(answer)
        elif opts.output == "name":
            render.emit_names([rule["id"] for rule in rules])
        else:
            render.emit_section("suppressions", SUPPRESSION_COLUMNS, rules)

    return suppressions
