"""`jnh`: the Jennah Memory command line. It talks to the HTTP API only."""

from __future__ import annotations

import click

import jennah
from jennah.cli.auth import auth
from jennah.cli.client import EXIT_CODES_HELP
from jennah.cli.memory import memory_group
from jennah.cli.options import CliState
from jennah.cli.serve import serve

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(
    "jnh",
    context_settings=CONTEXT,
    help="""Jennah Memory: long-term memory for AI agents.

    Start a local server with `jnh serve`, then commit and query memory with
    `jnh agents memory …` or `jnh scopes memory …` (agent workspaces and subject
    scopes share one identifier space). Every API command takes --endpoint
    (JENNAH_ENDPOINT), --token (JENNAH_TOKEN; the local root token by default)
    and -o json|table|name. Errors print the server's message on standard error.

    \b
    Example:
      jnh serve &
      jnh scopes memory commit bot.support --from-file memories.yaml
      jnh scopes memory query bot.support --text "where does Alice work"
    """,
    epilog=EXIT_CODES_HELP,
)
@click.version_option(jennah.__version__, prog_name="jnh")
@click.pass_context
def cli(ctx: click.Context) -> None:
    ctx.ensure_object(CliState)


@click.group(
    "agents",
    short_help="Agent workspaces: jnh agents memory commit|query|inspect.",
    help="""Agent workspaces. /v1/agents/X and /v1/scopes/X address the same memory.

    \b
    Example:
      jnh agents memory query support-bot --text "what does the user prefer"
    """,
)
def agents() -> None:
    """The `agents` group."""


@click.group(
    "scopes",
    short_help="Subject scopes: jnh scopes memory commit|query|inspect.",
    help="""Subject scopes. /v1/scopes/X and /v1/agents/X address the same memory.

    \b
    Example:
      jnh scopes memory inspect bot.support --graph
    """,
)
def scopes() -> None:
    """The `scopes` group."""


agents.add_command(memory_group("agents", "AGENT", "the agent workspace"))
scopes.add_command(memory_group("scopes", "SCOPE", "the scope"))
cli.add_command(serve)
cli.add_command(auth)
cli.add_command(agents)
cli.add_command(scopes)


def main() -> None:
    cli(prog_name="jnh")
