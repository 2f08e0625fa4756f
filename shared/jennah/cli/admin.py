"""`jnh keys`, `jnh roles`, `jnh users`: administration over the HTTP API.

Each is management-class on the server (iam.keys:manage, iam.roles:manage):
call it as a user (the local root, or a user credential), never with an API key.
"""

from __future__ import annotations

import re
from typing import Any

import click

from jennah.cli import pages, render
from jennah.cli.client import segment
from jennah.cli.inputs import parse_instant
from jennah.cli.options import ClientOptions, client_options

ROLES = ("root", "administrator", "member")
_TTL = re.compile(r"^(\d+)([smhd]?)$")
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
KEY_COLUMNS = ["keyId", "displayName", "roles", "state", "createTime", "expireTime", "createdBy"]
BINDING_COLUMNS = ["principal", "role", "agentSelectors", "subjectSelectors"]
NOT_SHOWN_AGAIN = "Save it now: it is not shown again (the server keeps only its hash)."

_selector_options = (
    click.option(
        "--agent-selector", "agent_selectors", multiple=True, metavar="PATTERN",
        help="Agent workspaces reached: an id, or a pattern such as 'bot.*'; repeatable.",
    ),
    click.option(
        "--subject-selector", "subject_selectors", multiple=True, metavar="PATTERN",
        help="Subject scopes reached: an id, or a pattern such as 'user.*'; repeatable.",
    ),
)  # fmt: skip


def selector_options(func: Any) -> Any:
    for option in reversed(_selector_options):
        func = option(func)
    return func


def parse_ttl(text: str) -> str:
    """'30d', '12h', '90m', '45s' or '3600' as a proto3 Duration ('2592000s')."""
    found = _TTL.match(text.strip())
    if found is None or int(found.group(1)) == 0:
        raise click.BadParameter(
            f"{text!r}: give a positive number of seconds, or one with the unit s, m, h or d "
            "(30d, 12h, 90m)",
            param_hint="--ttl",
        )
    return f"{int(found.group(1)) * _SECONDS[found.group(2)]}s"


# keys


@click.group(
    "keys",
    short_help="API keys: create, list, revoke.",
    help="""API keys: credentials for programs. A key acts as itself
    (api_key:<keyId>), never as the user who created it; it has one role and the
    reach its selectors give. Management-class permissions (keys, roles, vocabulary
    management, the overage multiple) never work with a key, whatever its role.

    \b
    Examples:
      jnh keys create --display-name support-bot --role member --agent-selector 'bot.*' --ttl 90d
      jnh keys list
      jnh keys revoke 3f2a9c0d1e4b5a69
    """,
)
def keys() -> None:
    """The `keys` group."""


@keys.command(
    "create",
    help="""Create an API key (POST /v1/apiKeys). The key string is printed once:
    the server keeps only its hash. Only a root may create a key with the root role.

    \b
    Examples:
      jnh keys create --display-name support-bot --role member --agent-selector 'bot.*'
      jnh keys create --display-name nightly --role member --subject-selector 'user.*' \\
        --ttl 30d -o json | jq -r .keyString
    """,
)
@click.option("--display-name", default="", help="A name for people (up to 128 characters).")
@click.option("--role", type=click.Choice(ROLES), required=True, help="The key's role.")
@selector_options
@click.option("--ttl", metavar="DURATION", help="Lifetime: 3600, 90m, 12h or 30d.")
@click.option("--expire-time", metavar="TIME", help="When it stops working (RFC 3339 or a date).")
@client_options
def create_key(
    display_name: str,
    role: str,
    agent_selectors: tuple[str, ...],
    subject_selectors: tuple[str, ...],
    ttl: str | None,
    expire_time: str | None,
    opts: ClientOptions,
) -> None:
    if ttl and expire_time:
        raise click.UsageError("give --ttl or --expire-time, not both")
    body: dict[str, Any] = {
        "displayName": display_name,
        "role": role,
        "agentSelectors": list(agent_selectors),
        "subjectSelectors": list(subject_selectors),
    }
    if ttl:
        body["ttl"] = parse_ttl(ttl)
    if expire_time:
        body["expireTime"] = parse_instant(expire_time, "--expire-time")
    answer = opts.client().post("/v1/apiKeys", body)
    if opts.output == "json":
        render.emit_json(answer)
    elif opts.output == "name":
        render.emit_names([answer["keyId"]])
    else:
        _emit_key(answer, secret="keyString")
        click.echo(NOT_SHOWN_AGAIN, err=True)


def _emit_key(key: dict[str, Any], secret: str | None = None) -> None:
    fields = [*KEY_COLUMNS[:3], "agentSelectors", "subjectSelectors", *KEY_COLUMNS[3:]]
    if secret is not None:
        fields.append(secret)
    render.emit_pairs([(f, key.get(f)) for f in fields], full=[secret] if secret else [])


@keys.command(
    "list",
    help="""List the enterprise's API keys, revoked and expired ones included
    (GET /v1/apiKeys), every page of them; --page-size or --page-token asks for one
    page.

    \b
    Example:
      jnh keys list -o json
    """,
)
@pages.page_options
@client_options
def list_keys(page_size: int | None, page_token: str | None, opts: ClientOptions) -> None:
    answer = pages.fetch(opts.client(), "/v1/apiKeys", {}, "apiKeys", page_size, page_token)
    found = answer.get("apiKeys", [])
    if opts.output == "json":
        render.emit_json(answer)
    elif opts.output == "name":
        render.emit_names([k["keyId"] for k in found])
    else:
        render.emit_section("API keys", KEY_COLUMNS, found)
    pages.note_next_page(answer, opts.output)


@keys.command(
    "revoke",
    help="""Revoke an API key (POST /v1/apiKeys/{keyId}:revoke): it authenticates no
    more. Revoking a revoked key changes nothing.

    \b
    Example:
      jnh keys revoke 3f2a9c0d1e4b5a69
    """,
)
@click.argument("key_id", metavar="KEY_ID")
@client_options
def revoke_key(key_id: str, opts: ClientOptions) -> None:
    answer = opts.client().post(f"/v1/apiKeys/{segment(key_id)}:revoke", {})
    if opts.output == "json":
        render.emit_json(answer)
    elif opts.output == "name":
        render.emit_names([answer["keyId"]])
    else:
        _emit_key(answer)


# roles


@click.group(
    "roles",
    short_help="Role bindings: grant, revoke, list.",
    help="""Role bindings: a role (root, administrator or member) and reach
    (agent and subject selectors) for a principal, user:<id> or api_key:<keyId>.

    \b
    Roles:
      root           every permission; reaches every scope; only a root grants root
      administrator  every permission, over the scopes its selectors reach
      member         form, commit and query memory, list scopes, read the vocabulary
                     and billing state; no billing.usage:read, no management

    \b
    Examples:
      jnh roles grant user:ana@example.com member --agent-selector 'bot.*'
      jnh roles list --principal user:ana@example.com
      jnh roles revoke user:ana@example.com member
    """,
)
def roles() -> None:
    """The `roles` group."""


@roles.command(
    "grant",
    help="""Bind ROLE to PRINCIPAL with the reach the selectors give
    (POST /v1/roleBindings:grant). It replaces PRINCIPAL's binding of ROLE, if any.
    A user not known yet is created without a credential (in production such a
    user signs in with a Google ID token; locally, `jnh users create` gives one).

    \b
    Examples:
      jnh roles grant user:ana@example.com member --agent-selector 'bot.*' \\
        --subject-selector 'user.ana'
      jnh roles grant user:ops@example.com administrator --agent-selector '*' \\
        --subject-selector '*'
    """,
)
@click.argument("principal", metavar="PRINCIPAL")
@click.argument("role", metavar="ROLE", type=click.Choice(ROLES))
@selector_options
@client_options
def grant(
    principal: str,
    role: str,
    agent_selectors: tuple[str, ...],
    subject_selectors: tuple[str, ...],
    opts: ClientOptions,
) -> None:
    body = {
        "principal": principal,
        "role": role,
        "agentSelectors": list(agent_selectors),
        "subjectSelectors": list(subject_selectors),
    }
    answer = opts.client().post("/v1/roleBindings:grant", body)
    _emit_bindings([answer], opts.output, answer)


@roles.command(
    "revoke",
    help="""Remove PRINCIPAL's binding of ROLE (POST /v1/roleBindings:revoke). The
    enterprise's last root binding cannot be removed.

    \b
    Example:
      jnh roles revoke user:ana@example.com member
    """,
)
@click.argument("principal", metavar="PRINCIPAL")
@click.argument("role", metavar="ROLE", type=click.Choice(ROLES))
@client_options
def revoke(principal: str, role: str, opts: ClientOptions) -> None:
    answer = opts.client().post("/v1/roleBindings:revoke", {"principal": principal, "role": role})
    if opts.output == "json":
        render.emit_json(answer)
    elif opts.output == "name":
        render.emit_names([principal])
    else:
        click.echo(f"Revoked {role} from {principal}.")


@roles.command(
    "list",
    help="""List the enterprise's role bindings, or one principal's
    (GET /v1/roleBindings), every page of them; --page-size or --page-token asks for
    one page.

    \b
    Examples:
      jnh roles list
      jnh roles list --principal api_key:3f2a9c0d1e4b5a69 -o json
    """,
)
@click.option("--principal", metavar="PRINCIPAL", help="Only this principal's bindings.")
@pages.page_options
@client_options
def list_roles(
    principal: str | None, page_size: int | None, page_token: str | None, opts: ClientOptions
) -> None:
    params = {"principal": principal} if principal else {}
    answer = pages.fetch(
        opts.client(), "/v1/roleBindings", params, "roleBindings", page_size, page_token
    )
    _emit_bindings(answer.get("roleBindings", []), opts.output, answer)
    pages.note_next_page(answer, opts.output)


def _emit_bindings(bindings: list[dict[str, Any]], output: str, answer: dict[str, Any]) -> None:
    if output == "json":
        render.emit_json(answer)
    elif output == "name":
        render.emit_names(dict.fromkeys(b["principal"] for b in bindings))
    else:
        render.emit_section("role bindings", BINDING_COLUMNS, bindings)


# users


@click.group(
    "users",
    short_help="Users with development credentials (local servers).",
    help="""Users. In production users sign in with Google ID tokens; a local server
    gives each user a development credential instead.

    \b
    Example:
      jnh users create user:ana
      jnh roles grant user:ana member --agent-selector 'bot.*'
    """,
)
def users() -> None:
    """The `users` group."""


@users.command(
    "create",
    help="""Create PRINCIPAL (user:<id>; a bare id means user:<id>) with a
    development credential, printed once (POST /v1/users). The user has no role
    until `jnh roles grant` gives one.

    \b
    Examples:
      jnh users create user:ana
      jnh users create ana -o json | jq -r .token | jnh auth login
    """,
)
@click.argument("principal", metavar="PRINCIPAL")
@client_options
def create_user(principal: str, opts: ClientOptions) -> None:
    if not principal.startswith(("user:", "api_key:")):
        principal = f"user:{principal}"
    answer = opts.client().post("/v1/users", {"principal": principal})
    if opts.output == "json":
        render.emit_json(answer)
    elif opts.output == "name":
        render.emit_names([answer["principal"]])
    else:
        fields = ("principal", "createTime", "token")
        render.emit_pairs([(f, answer.get(f)) for f in fields], full=["token"])
        click.echo(NOT_SHOWN_AGAIN, err=True)
