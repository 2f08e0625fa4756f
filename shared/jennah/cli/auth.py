"""`jnh auth`: the local server's credentials."""

from __future__ import annotations

from pathlib import Path

import click

from jennah.auth import ensure_local_credentials
from jennah.cli.options import data_dir_option, load_settings


@click.group(
    "auth",
    short_help="Credentials for the local server.",
    help="""Credentials for the local server.

    \b
    Example:
      export JENNAH_TOKEN="$(jnh auth print-token --data-dir ~/.jennah)"
    """,
)
def auth() -> None:
    """The `auth` group."""


@auth.command(
    "print-token",
    help="""Print the bearer token of the local server's root user (user:root in
    enterprise "local"), for curl and scripts. jnh commands use it automatically.

    The token lives in <data-dir>/credentials.json (mode 0600), created on the first
    `jnh serve` (or by this command) and reused afterwards.

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
    click.echo(ensure_local_credentials(settings.data_dir).token)
