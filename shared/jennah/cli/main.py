"""`jnh`: the Jennah Memory command line. It talks to the HTTP API only."""

from __future__ import annotations

import click

import jennah
from jennah.cli import scopes as scope_commands
from jennah.cli.admin import keys, roles, users
from jennah.cli.auth import auth
from jennah.cli.billing import billing
from jennah.cli.client import EXIT_CODES_HELP
from jennah.cli.enterprises import enterprises
from jennah.cli.mcp import mcp
from jennah.cli.memory import memory_group
from jennah.cli.notes import notes_group
from jennah.cli.operations import operations
from jennah.cli.options import CliState
from jennah.cli.serve import serve
from jennah.cli.usage import usage
from jennah.cli.vocabulary import vocabulary

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
ALIASES = {"vocab": "vocabulary"}  # short form -> command


class Jnh(click.Group):
    """The root group, which also answers to the commands' short forms (ALIASES)."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, ALIASES.get(cmd_name, cmd_name))


@click.group(
    "jnh",
    cls=Jnh,
    context_settings=CONTEXT,
    help="""Jennah Memory: long-term memory for AI agents.

    Start a local server with `jnh serve`, then commit and query memory with
    `jnh agents memory …` or `jnh scopes memory …` (agent workspaces and subject
    scopes share one identifier space). Every API command takes --endpoint
    (JENNAH_ENDPOINT), --token (JENNAH_TOKEN, else the credential saved by
    `jnh auth login`, else the local root credential) and -o json|table|name.
    Errors print the server's message on standard error.

    \b
    Example:
      jnh serve &
      jnh scopes memory commit bot.support --from-file memories.yaml
      jnh scopes memory query bot.support --text "where does Alice work"
      jnh keys create --display-name support-bot --role member --agent-selector 'bot.*'
      jnh vocabulary declare --class Person="an individual human being" --yes
      jnh usage tokens --per week --by model
    """,
    epilog=EXIT_CODES_HELP,
)
@click.version_option(jennah.__version__, prog_name="jnh")
@click.pass_context
def cli(ctx: click.Context) -> None:
    ctx.ensure_object(CliState)


@click.group(
    "agents",
    short_help="Agent workspaces: list, memory form|step|commit|query|inspect|evidence.",
    help="""Agent workspaces. /v1/agents/X reaches agent workspace X only; /v1/scopes/X
    reaches the same workspace (and subject scopes too).

    \b
    Example:
      jnh agents list
      jnh agents memory form support-bot --from-file turns.json
      jnh agents memory query support-bot --text "what does the user prefer"
    """,
)
def agents() -> None:
    """The `agents` group."""


@click.group(
    "scopes",
    short_help="Scopes: list, create, update, destroy, memory commit|query|inspect|evidence.",
    help="""Scopes: agent workspaces and subject scopes, which share one identifier
    space. /v1/scopes/X reaches scope X whatever its kind; /v1/agents/X only an
    agent workspace. A scope you do not reach is answered as though it did not exist.

    \b
    Example:
      jnh scopes list
      jnh scopes memory inspect bot.support --graph
      jnh scopes destroy bot.test --yes
    """,
)
def scopes() -> None:
    """The `scopes` group."""


agents.add_command(scope_commands.list_agents)
agents.add_command(memory_group("agents", "AGENT", "the agent workspace"))
agents.add_command(notes_group("agents", "AGENT", "the agent workspace"))
scopes.add_command(scope_commands.list_scopes)
scopes.add_command(scope_commands.create_scope)
scopes.add_command(scope_commands.update_scope)
scopes.add_command(scope_commands.destroy_scope)
scopes.add_command(memory_group("scopes", "SCOPE", "the scope"))
scopes.add_command(notes_group("scopes", "SCOPE", "the scope"))
for command in (serve, mcp, auth, agents, scopes, vocabulary, usage, billing, keys, roles, users):
    cli.add_command(command)
cli.add_command(operations)
cli.add_command(enterprises)  # operators: writes the stores, not the API


def main() -> None:
    cli(prog_name="jnh")
