"""`jnh auth`: log in, see who you are, print the local root credential."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from jennah.auth import read_local_credentials
from jennah.cli import render
from jennah.cli.client import ApiClient, local_failure
from jennah.cli.config import SavedLogin, forget_login, login_path, save_login
from jennah.cli.options import (
    ClientOptions,
    CliState,
    client_options,
    data_dir_option,
    load_settings,
)
from jennah.cli.render import OUTPUT_FORMATS
from jennah.errors import JennahError

CALLER_FIELDS = (
    "enterprise", "principal", "kind", "roles", "agentSelectors", "subjectSelectors",
    "permissions",
)  # fmt: skip


@click.group(
    "auth",
    short_help="Log in, see who you are, print the local root credential.",
    help="""Credentials. A command finds its credential in this order: --token,
    JENNAH_TOKEN, the credential saved by `jnh auth login`, and last the local
    server's root credential in <data-dir>/credentials.json.

    \b
    Examples:
      jnh auth whoami
      jnh auth login --token "$JENNAH_KEY"
      export JENNAH_TOKEN="$(jnh auth print-token --data-dir ~/.jennah)"
    """,
)
def auth() -> None:
    """The `auth` group."""


@auth.command(
    "print-token",
    help="""Print the local server's root credential (user:root of enterprise
    "local"), for curl and scripts. jnh commands use it automatically.

    `jnh serve` writes it to <data-dir>/credentials.json (mode 0600) when it
    creates the local enterprise on its first start, and reuses it afterwards.

    \b
    Example:
      curl -H "Authorization: Bearer $(jnh auth print-token)" \\
        -d '{"semantic": {"queryText": "Alice"}}' \\
        http://127.0.0.1:8080/v1/scopes/bot.support/memory:query
    """,
)
@data_dir_option
def print_token(data_dir: Path | None) -> None:
    settings = load_settings(data_dir)
    try:
        click.echo(read_local_credentials(settings.data_dir).token)
    except JennahError as err:
        raise local_failure(err) from None


@auth.command(
    "whoami",
    help="""Show who the credential proves: enterprise, principal, kind (USER or
    API_KEY), roles, usable permissions and reach (GET /v1/caller).

    \b
    Examples:
      jnh auth whoami
      jnh auth whoami --token "$JENNAH_KEY" -o json
    """,
)
@client_options
def whoami(opts: ClientOptions) -> None:
    emit_caller(opts.client().get("/v1/caller"), opts.output)


def emit_caller(answer: dict[str, Any], output: str) -> None:
    if output == "json":
        render.emit_json(answer)
    elif output == "name":
        render.emit_names([answer.get("principal", "")])
    else:
        render.emit_pairs([(f, answer.get(f)) for f in CALLER_FIELDS])


@auth.command(
    "login",
    help="""Save a credential (an API key, or a user credential) for later jnh
    commands, in ~/.config/jennah/credentials (mode 0600). Give it with --token or
    on standard input (never on a shared command line if you can avoid it). The
    credential is checked against the server first (GET /v1/caller) unless
    --no-verify is given.

    --token and JENNAH_TOKEN still win over the saved credential; `jnh auth logout`
    forgets it.

    \b
    Examples:
      jnh keys create --display-name ci --role member --agent-selector 'bot.*' \\
        -o json | jq -r .keyString | jnh auth login
      jnh auth login --token jk_0123456789abcdef_…
    """,
)
@click.option("--token", metavar="TOKEN", help="The credential [default: read standard input].")
@click.option("--endpoint", metavar="URL", help="The server to check it against.")
@click.option("--no-verify", is_flag=True, help="Save without asking the server.")
@data_dir_option
@click.option("-o", "--output", type=click.Choice(OUTPUT_FORMATS), default="table",
              show_default=True, help="How to print the caller the credential proves.")  # fmt: skip
@click.option("--timeout", type=click.FloatRange(min=0.1), default=30.0, show_default=True,
              help="Seconds to wait for the server.")  # fmt: skip
def login(
    token: str | None,
    endpoint: str | None,
    no_verify: bool,
    data_dir: Path | None,
    output: str,
    timeout: float,
) -> None:
    credential = (token or _read_token()).strip()
    if not credential or any(c.isspace() for c in credential):
        raise click.BadParameter("the credential is empty or contains spaces", param_hint="--token")
    settings = load_settings(data_dir)
    if not no_verify:
        state = click.get_current_context().find_object(CliState)
        client = ApiClient(
            endpoint=endpoint or settings.endpoint,
            token=credential,
            timeout=timeout,
            transport=state.transport if state else None,
        )
        emit_caller(client.get("/v1/caller"), output)
    path = save_login(SavedLogin(token=credential))
    click.echo(f"Saved the credential to {path}.", err=True)


def _read_token() -> str:
    if sys.stdin.isatty():
        return str(click.prompt("Credential", hide_input=True))
    return sys.stdin.readline()


@auth.command(
    "logout",
    help="""Forget the credential saved by `jnh auth login` (it stays valid on the
    server: revoke an API key with `jnh keys revoke`). Later commands fall back to
    --token, JENNAH_TOKEN or the local server's root credential.

    \b
    Example:
      jnh auth logout
    """,
)
def logout() -> None:
    if forget_login():
        click.echo(f"Removed {login_path()}.")
    else:
        click.echo("No saved credential.")
