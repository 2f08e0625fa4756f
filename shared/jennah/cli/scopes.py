"""`jnh scopes list|create|update|destroy` and `jnh agents list`: the scopes a caller
reaches."""

from __future__ import annotations

import sys
from typing import Any

import click

from jennah.cli import pages, render
from jennah.cli.client import segment
from jennah.cli.options import ClientOptions, client_options

SCOPE_COLUMNS = ["scopeId", "kind", "timeZone", "createTime", "createdBy"]
_TIME_ZONE_HELP = (
    "The IANA time zone the scope's calendar is judged in (a claim's validUntil expires "
    "it at local time), such as Europe/Lisbon."
)


def _emit_scopes(answer: dict[str, Any], items: list[dict[str, Any]], output: str) -> None:
    if output == "json":
        render.emit_json(answer)
    elif output == "name":
        render.emit_names([s["scopeId"] for s in items])
    else:
        render.emit_section("scopes", SCOPE_COLUMNS, items)
    pages.note_next_page(answer, output)


@click.command(
    "list",
    help="""List the scopes you reach, agent workspaces and subject scopes, with their
    kind and creation time (GET /v1/scopes), every page of them. Scopes you do not
    reach are not listed. --page-size or --page-token asks for one page.

    \b
    Examples:
      jnh scopes list
      jnh scopes list --kind SUBJECT -o name
      jnh scopes list --page-size 100          # then --page-token TOKEN for the next
    """,
)
@click.option(
    "--kind", type=click.Choice(["AGENT", "SUBJECT"], case_sensitive=False),
    help="Only scopes of this kind.",
)  # fmt: skip
@pages.page_options
@client_options
def list_scopes(
    kind: str | None, page_size: int | None, page_token: str | None, opts: ClientOptions
) -> None:
    params = {"kind": kind.upper()} if kind else {}
    answer = pages.fetch(opts.client(), "/v1/scopes", params, "scopes", page_size, page_token)
    _emit_scopes(answer, answer.get("scopes", []), opts.output)


@click.command(
    "create",
    help="""Create an empty scope explicitly (POST /v1/scopes); a first commit also
    creates one (in UTC). Needs agent.memory:commit and reach over SCOPE.

    \b
    Examples:
      jnh scopes create user.ana
      jnh scopes create support-bot --kind AGENT --time-zone America/Los_Angeles
    """,
)
@click.argument("scope_id", metavar="SCOPE")
@click.option(
    "--kind", type=click.Choice(["AGENT", "SUBJECT"], case_sensitive=False),
    default="SUBJECT", show_default=True, help="An agent workspace or a subject scope.",
)  # fmt: skip
@click.option("--time-zone", metavar="TZ", help=_TIME_ZONE_HELP + " [server default: UTC]")
@client_options
def create_scope(scope_id: str, kind: str, time_zone: str | None, opts: ClientOptions) -> None:
    body = {"scopeId": scope_id, "kind": kind.upper()}
    if time_zone is not None:
        body["timeZone"] = time_zone
    answer = opts.client().post("/v1/scopes", body)
    _emit_scopes(answer, [answer], opts.output)


@click.command(
    "update",
    help="""Update SCOPE, an agent workspace or a subject scope
    (PATCH /v1/scopes/{id}?updateMask=…): each flag given changes its field only.
    Needs agent.memory:commit and reach over SCOPE.

    \b
    Examples:
      jnh scopes update user.ana --time-zone Europe/Lisbon
      jnh scopes update support-bot --time-zone UTC -o json
    """,
)
@click.argument("scope_id", metavar="SCOPE")
@click.option("--time-zone", metavar="TZ", help=_TIME_ZONE_HELP)
@client_options
def update_scope(scope_id: str, time_zone: str | None, opts: ClientOptions) -> None:
    changes = {"timeZone": time_zone} if time_zone is not None else {}
    if not changes:
        raise click.UsageError("nothing to update: give --time-zone")
    answer = opts.client().patch(
        f"/v1/scopes/{segment(scope_id)}", changes, {"updateMask": ",".join(changes)}
    )
    _emit_scopes(answer, [answer], opts.output)


@click.command(
    "destroy",
    help="""Destroy SCOPE: erase every memory record, node, edge, execution-log step,
    evidence line and formation-key record of it, and its scope-level memory
    vocabulary, for good (DELETE /v1/scopes/{id}).
    Usage records outlive it. Needs agent.scopes:destroy and reach over SCOPE.

    It asks for confirmation; --yes skips the question, and is required when
    standard input is not a terminal.

    \b
    Examples:
      jnh scopes destroy user.ana
      jnh scopes destroy bot.test --yes
    """,
)
@click.argument("scope_id", metavar="SCOPE")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@client_options
def destroy_scope(scope_id: str, yes: bool, opts: ClientOptions) -> None:
    if not yes:
        if not stdin_is_interactive():
            raise click.UsageError(
                "destroying a scope erases its memory for good: pass --yes to confirm "
                "when standard input is not a terminal"
            )
        click.confirm(f"Erase scope {scope_id!r} and everything in it?", abort=True)
    answer = opts.client().delete(f"/v1/scopes/{segment(scope_id)}")
    if opts.output == "json":
        render.emit_json(answer)
    elif opts.output == "name":
        render.emit_names([answer["scopeId"]])
    else:
        click.echo(f"Destroyed scope {answer['scopeId']}: {answer.get('rowsErased', '0')} "
                   "rows erased.")  # fmt: skip


def stdin_is_interactive() -> bool:
    return sys.stdin.isatty()


@click.command(
    "list",
    help="""List the agent workspaces you reach (GET /v1/agents), every page of them;
    --page-size or --page-token asks for one page.

    \b
    Example:
      jnh agents list -o name
    """,
)
@pages.page_options
@client_options
def list_agents(page_size: int | None, page_token: str | None, opts: ClientOptions) -> None:
    answer = pages.fetch(opts.client(), "/v1/agents", {}, "agents", page_size, page_token)
    _emit_scopes(answer, answer.get("agents", []), opts.output)
