"""`jnh enterprises create|recover-root`: operator commands, straight in the stores.

`create` makes a new enterprise, its root user and plan; `recover-root` gives a
user of an enterprise nobody can manage any more a root binding and a new credential.

The one command that does not go through the HTTP API: an enterprise's first
credential cannot come from a request that needs one. It writes to the stores
the environment configures (JENNAH_CONTROL / JENNAH_STORE and their projects),
with the operator's own Google credentials in production.
"""

from __future__ import annotations

from pathlib import Path

import click

from jennah.cli.options import data_dir_option, load_settings
from jennah.domain.billing import EnterpriseBilling, Plan
from jennah.errors import JennahError


@click.group(
    "enterprises",
    short_help="Create an enterprise and its root user (operators; writes the stores).",
    help="""Enterprises: the tenants of a deployment. Operators only: these commands
    write the stores the environment names (JENNAH_CONTROL=firestore with
    JENNAH_FIRESTORE_PROJECT, JENNAH_STORE=spanner with JENNAH_SPANNER_*; or the
    local SQLite file), with your own Google credentials (gcloud auth
    application-default login), not through the API.

    \b
    Examples:
      jnh enterprises create acme --root user:alice@example.com --plan PRO
      jnh enterprises recover-root acme --root user:bob@example.com
    """,
)
def enterprises() -> None:
    """The `enterprises` group."""


@enterprises.command(
    "create",
    short_help="Create an enterprise with a root user; prints its credential once.",
    help="""Create ENTERPRISE with a root user (PRINCIPAL, user:<id>) and its plan,
    and print the root's development credential (ju_…) once: the enterprise's first
    credential. All or nothing: when any part fails nothing is left behind, so the
    same command can simply be run again. In production the root then signs in with
    a Google ID token for its e-mail (JENNAH_OIDC_AUDIENCE), creates administrators
    with `jnh roles grant` and API keys for agents with `jnh keys create`.

    \b
    Example:
      JENNAH_CONTROL=firestore JENNAH_FIRESTORE_PROJECT=acme-prod \\
      JENNAH_STORE=spanner JENNAH_SPANNER_PROJECT=acme-prod \\
        jnh enterprises create acme --root user:alice@example.com --plan PRO --billable
    """,
)
@click.argument("enterprise")
@click.option("--root", "root", required=True, metavar="PRINCIPAL",
              help="The root user, user:<id> (in production, user:<e-mail>).")  # fmt: skip
@click.option("--plan", type=click.Choice([p.value for p in Plan if p is not Plan.TRIAL]),
              default=None, help="The plan [default: JENNAH_DEFAULT_PLAN, else FREE].")  # fmt: skip
@click.option("--billable/--not-billable", default=False, show_default=True,
              help="Holds an active marketplace subscription (overage needs it).")  # fmt: skip
@data_dir_option
def create(
    enterprise: str, root: str, plan: str | None, billable: bool, data_dir: Path | None
) -> None:
    from jennah.bootstrap import Container
    from jennah.services import enterprises as service

    if not root.startswith("user:") or len(root) <= len("user:"):
        raise click.BadParameter("must be user:<id>", param_hint="--root")
    settings = load_settings(data_dir)
    container = Container(settings)
    billing = EnterpriseBilling(
        enterprise_id=enterprise,
        plan=Plan(plan) if plan else settings.default_plan,
        billable=billable,
    )
    try:
        token = service.create_enterprise(
            container.identity, container.ledger, root, billing, container.now()
        )
    except JennahError as err:
        raise click.ClickException(f"{err.status}: {err.message}") from None
    finally:
        container.close()
    click.echo(f"Created enterprise {enterprise!r} on the {billing.terms.label}, "
               f"root {root}.", err=True)  # fmt: skip
    click.echo("The root's credential (shown once; keep it secret):", err=True)
    click.echo(token)


@enterprises.command(
    "recover-root",
    short_help="Give a user root in an enterprise and a new credential (recovery).",
    help="""Recover ENTERPRISE when nobody can manage it any more (its last root user
    gone, or locked out): give PRINCIPAL (user:<id>) a root binding, creating the user
    when the enterprise has none of that name, and print a new development credential
    (ju_…) for it once. The user's earlier development credential stops working; its
    other role bindings stay. Running it again issues another credential.

    \b
    Example:
      jnh enterprises recover-root acme --root user:bob@example.com
    """,
)
@click.argument("enterprise")
@click.option("--root", "root", required=True, metavar="PRINCIPAL",
              help="The user to make root, user:<id> (in production, user:<e-mail>).")  # fmt: skip
@data_dir_option
def recover_root(enterprise: str, root: str, data_dir: Path | None) -> None:
    from jennah.bootstrap import Container
    from jennah.services import enterprises as service

    settings = load_settings(data_dir)
    container = Container(settings)
    try:
        token = service.recover_root(container.identity, enterprise, root, container.now())
    except JennahError as err:
        raise click.ClickException(f"{err.status}: {err.message}") from None
    finally:
        container.close()
    click.echo(f"{root} is now a root of enterprise {enterprise!r}.", err=True)
    click.echo("Its new credential (shown once; keep it secret):", err=True)
    click.echo(token)
