"""`jnh billing get` and `jnh billing overage set-multiple`: the billing state, in units.

Setting the overage multiple is management-class (billing.overage:manage): a
root or administrator user only, never an API key, so `jnh` refuses it here,
before any request, when its credential is one.
"""

from __future__ import annotations

from typing import Any

import click

from jennah.cli import render
from jennah.cli.client import local_failure
from jennah.cli.options import ClientOptions, client_options
from jennah.domain.access import API_KEY_PREFIX
from jennah.domain.billing import (
    MAX_OVERAGE_MULTIPLE,
    OVERAGE_MULTIPLE_STEP,
    check_overage_multiple,
)
from jennah.errors import InvalidArgument, PermissionDenied

PATH = "/v1/billing"
SET_MULTIPLE_PATH = "/v1/billing:setOverageMultiple"
_MEASURES = {"FORMATION_UNITS": "formation units", "OUTPUT_TOKENS": "output tokens"}
_PER = {"DAILY": "per day", "MONTHLY": "per month", "NOT_BEFORE_TRIAL_ENDS": "for the trial"}
_RESETS = {
    "DAILY": "daily",
    "MONTHLY": "monthly",
    "NOT_BEFORE_TRIAL_ENDS": "the trial ends; no reset before",
}


@click.group(
    "billing",
    short_help="Billing state and overage multiple: get, overage set-multiple.",
    help="""The billing state of the current allowance period, in formation units:
    the plan's allowance, the units used, the overage units, the overage
    multiple, band and limit, and whether the enterprise is billable for
    overage (an active AWS Marketplace subscription on Pro, Scale or Team).

    \b
    Examples:
      jnh billing get
      jnh billing overage set-multiple 3
    """,
)
def billing() -> None:
    """The `billing` group."""


@billing.command(
    "get",
    help="""Show the billing state (GET /v1/billing): the plan, whether the
    enterprise is billable, the allowance (formation units per month, or on Free
    output tokens per day), the units used, the units past the allowance billed
    as overage, the overage multiple and the band it gives, the limit formations
    are refused from, when the allowance resets, and the formations in progress.
    Any member who can read the billing state (billing.state:read) sees it.

    \b
    Examples:
      jnh billing get
      jnh billing get -o json
    """,
)
@client_options
def get(opts: ClientOptions) -> None:
    emit_state(opts.client().get(PATH), opts.output)


@billing.group(
    "overage",
    short_help="The overage multiple: set-multiple.",
    help="""Overage: on Pro, Scale and Team bought through AWS Marketplace,
    formations continue past the monthly allowance, up to the allowance plus an
    overage band of multiple x the plan's monthly fee, counted in units.

    \b
    Example:
      jnh billing overage set-multiple 3
    """,
)
def overage() -> None:
    """The `billing overage` group."""


@overage.command(
    "set-multiple",
    help=f"""Set the overage multiple to VALUE, from 0 to {MAX_OVERAGE_MULTIPLE:g} in steps
    of {OVERAGE_MULTIPLE_STEP:g} (POST /v1/billing:setOverageMultiple), and print the
    billing state after it. The band is VALUE x the plan's monthly fee in units,
    so 3 is 1,488 units on Pro and 4,488 on Scale.

    A change applies to the next formation, for the current month: raising it
    admits formations straight away; lowering it below what the month has used
    refuses the next formation (the overage already used is still billed).
    0 turns overage off, so formations are refused at the allowance. An
    enterprise that is not billable can set it; it applies once it is billable.

    Root or administrator users only (billing.overage:manage), never an API key,
    even one an administrator created, so an agent can never raise its own
    spending limit: jnh refuses locally when its credential is one.

    \b
    Examples:
      jnh billing overage set-multiple 3
      jnh billing overage set-multiple 0
    """,
)
@click.argument("value", metavar="VALUE", type=float)
@client_options
def set_multiple(value: float, opts: ClientOptions) -> None:
    multiple = checked_multiple(value)
    refuse_api_key(opts)
    emit_state(opts.client().post(SET_MULTIPLE_PATH, {"overageMultiple": multiple}), opts.output)


def checked_multiple(value: float) -> float:
    """VALUE, if it is 0 to 10 in steps of 0.5; a usage error (exit 2) otherwise."""
    try:
        return check_overage_multiple(value)
    except InvalidArgument:
        raise click.BadParameter(
            f"{value:g} is not a valid overage multiple: give 0 to {MAX_OVERAGE_MULTIPLE:g} "
            f"in steps of {OVERAGE_MULTIPLE_STEP:g} (0 turns overage off)",
            param_hint="VALUE",
        ) from None


def refuse_api_key(opts: ClientOptions) -> None:
    """Exit 5 before any request when the credential is an API key (`jk_…`)."""
    token = opts.credential()
    if token is not None and token.startswith(API_KEY_PREFIX):
        raise local_failure(
            PermissionDenied(
                "setting the overage multiple needs billing.overage:manage, a management "
                "permission that can never be used with an API key, so jnh sent nothing; "
                "call as a root or administrator user (--token with a user credential, or "
                "`jnh auth login`)"
            )
        )


def emit_state(state: dict[str, Any], output: str) -> None:
    if output == "json":
        render.emit_json(state)
    elif output == "name":
        render.emit_names([state["plan"]])
    else:
        render.emit_pairs(state_pairs(state))


def state_pairs(state: dict[str, Any]) -> list[tuple[str, str]]:
    """The state as KEY  VALUE lines, counts with thousands separators."""
    measure = state["allowanceMeasure"]
    by_tokens = measure == "OUTPUT_TOKENS"
    counted = "output tokens" if by_tokens else "units"
    pairs = [
        ("plan", state["plan"]),
        ("billable", "yes" if state["billable"] else "no"),
        ("allowance", f"{_count(state['allowance'])} {_MEASURES[measure]} {_PER[state['resets']]}"),
        ("unitsUsed", _count(state["unitsUsed"])),
    ]
    if by_tokens:
        pairs.append(("outputTokensUsed", _count(state["outputTokensUsed"])))
    pairs += [
        ("overageUnits", _count(state["overageUnits"])),
        ("overageMultiple", f"{float(state['overageMultiple']):g}"),
        ("overageBand", _band(state)),
        ("overageLimit", f"{_count(state['overageLimit'])} {counted}"),
        ("resetsAt", f"{state['periodEndTime']} ({_RESETS[state['resets']]})"),
        ("formationsInProgress", str(state["formationsInProgress"])),
    ]
    return pairs


def _band(state: dict[str, Any]) -> str:
    band = f"{_count(state['overageBand'])} units"
    if int(state["overageBand"]) > 0 and not state["billable"]:
        return f"{band} (applies once billable)"
    return band


def _count(value: Any) -> str:
    return f"{int(value):,}"
