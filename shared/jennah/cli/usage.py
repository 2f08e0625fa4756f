"""`jnh usage tokens` and `jnh usage rollup`: formation token usage, and its rollup.

`tokens` reads the aggregated report over HTTP like every API command; `rollup`
is the one command that opens the local store itself, as `jnh serve` does,
to do the `usage-rollup` function's work on it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import click

from jennah.api.dto import format_timestamp, parse_timestamp
from jennah.cli import render
from jennah.cli.client import local_failure
from jennah.cli.options import ClientOptions, client_options, data_dir_option, load_settings
from jennah.errors import JennahError
from jennah.services import usage_report

TOKENS_PATH = "/v1/billing/usage/formation-tokens"
DEFAULT_LOOKBACK = timedelta(days=30)
PERS = ("day", "week", "month")
DIMENSIONS = ("scope", "caller", "model", "region")
COUNT_COLUMNS = ["inputTokens", "outputTokens", "units"]


@click.group(
    "usage",
    short_help="Formation token usage: tokens, rollup.",
    help="""Formation usage: the input and output tokens and the formation units
    your formations consumed, always aggregated, never per formation.

    \b
    Examples:
      jnh usage tokens
      jnh usage tokens --since 2026-09-01 --per day --by model --tz Asia/Tokyo
      jnh usage rollup --data-dir ~/.jennah
    """,
)
def usage() -> None:
    """The `usage` group."""


@usage.command(
    "tokens",
    short_help="Formation tokens and units per day, week or month.",
    help="""Formation input and output tokens and formation units, per day, ISO
    week (Monday start) or month of --tz, optionally split by one of scope,
    caller, model or region (GET /v1/billing/usage/formation-tokens). Output
    includes the model's reasoning tokens; UNITS are the formation units the
    bucket's formations consumed, summed per formation.

    --since and --until take RFC 3339 (2026-09-01T09:00:00Z), a date-time
    without zone or a bare date (the start of that day), both read in --tz.
    --since defaults to 30 days ago, --until to now; the range reaches back at
    most 400 days. A caller is user:<id> or api_key:<id> (a key is recorded as
    itself, never as the user who created it). --scope, --caller, --model and
    --region narrow what is counted without grouping by it.

    A formation whose model calls reported no tokens (abandoned at its time
    bound) counts 1 unit toward the allowance but has no tokens, so it is not
    shown here. Needs billing.usage:read, which the member role does not carry;
    grouping or filtering by scope also needs reach over every scope.

    \b
    Examples:
      # The last 30 days, in UTC
      jnh usage tokens
      # Per Tokyo calendar day, split by model
      jnh usage tokens --since 2026-09-01 --per day --by model --tz Asia/Tokyo
      # Per ISO week for one API key
      jnh usage tokens --per week \\
        --caller api_key:25678126-312d-4804-abee-f0adf163acbc
    """,
)
@click.option("--since", metavar="TIME",
              help="Start of the range: RFC 3339, or a date-time or date in --tz "
              "[default: 30 days ago].")  # fmt: skip
@click.option("--until", metavar="TIME", help="End of the range, exclusive [default: now].")
@click.option("--per", type=click.Choice(PERS), default="day", show_default=True,
              help="Bucket size: a calendar day, ISO week or month of --tz.")  # fmt: skip
@click.option("--by", "group_by", type=click.Choice(DIMENSIONS),
              help="Split each bucket by this dimension.")  # fmt: skip
@click.option("--tz", "time_zone", default="UTC", show_default=True, metavar="ZONE",
              help="IANA time zone of the calendar (Asia/Tokyo, Europe/Paris).")  # fmt: skip
@click.option("--scope", metavar="SCOPE", help="Count only this scope.")
@click.option("--caller", metavar="PRINCIPAL", help="Count only user:<id> or api_key:<id>.")
@click.option("--model", metavar="MODEL", help="Count only this model.")
@click.option("--region", metavar="REGION", help="Count only this region.")
@client_options
def tokens(
    since: str | None,
    until: str | None,
    per: str,
    group_by: str | None,
    time_zone: str,
    scope: str | None,
    caller: str | None,
    model: str | None,
    region: str | None,
    opts: ClientOptions,
) -> None:
    zone = resolve_zone(time_zone)
    params = tokens_params(
        since, until, per, group_by, time_zone, zone, datetime.now(UTC),
        {"scope": scope, "caller": caller, "model": model, "region": region},
    )  # fmt: skip
    answer = opts.client().get(TOKENS_PATH, params)
    emit_tokens(answer, zone, group_by, opts.output)


def resolve_zone(name: str) -> ZoneInfo:
    """The --tz zone; INVALID_ARGUMENT (exit 3) naming timeZone, as the server words it."""
    try:
        return usage_report.time_zone(name)
    except JennahError as err:
        raise local_failure(err) from None


def tokens_params(
    since: str | None,
    until: str | None,
    per: str,
    group_by: str | None,
    time_zone: str,
    zone: ZoneInfo,
    now: datetime,
    filters: dict[str, str | None],
) -> dict[str, str]:
    """The query parameters of the report request."""
    start = (
        format_timestamp((now - DEFAULT_LOOKBACK).replace(microsecond=0))
        if since is None
        else instant_in(since, zone, "--since")
    )
    params = {"startTime": start, "per": per, "timeZone": time_zone}
    if until is not None:
        params["endTime"] = instant_in(until, zone, "--until")
    if group_by is not None:
        params["groupBy"] = group_by
    params |= {name: value for name, value in filters.items() if value is not None}
    return params


def instant_in(text: str, zone: ZoneInfo, option: str) -> str:
    """An instant as RFC 3339 UTC; a date-time without zone, or a bare date (the start
    of that day), is read in `zone`."""
    try:
        instant = datetime.fromisoformat(text.strip())
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not a time: give RFC 3339 (2026-09-01T09:00:00Z), a date-time "
            "(2026-09-01T09:00) or a date (2026-09-01, the start of that day), the last two "
            "read in --tz",
            param_hint=option,
        ) from None
    return format_timestamp(instant if instant.tzinfo is not None else instant.replace(tzinfo=zone))


def emit_tokens(answer: dict[str, Any], zone: ZoneInfo, group_by: str | None, output: str) -> None:
    buckets: list[dict[str, Any]] = answer.get("buckets", [])
    if output == "json":
        render.emit_json(answer)
    elif output == "name":
        render.emit_names(dict.fromkeys(b["startTime"] for b in buckets))
    elif not buckets:
        start, end = (
            _local(answer[f], zone).isoformat("T", "minutes") for f in ("startTime", "endTime")
        )
        click.echo(f"No formation tokens from {start} to {end} ({zone.key}).")
    else:
        click.echo(tokens_table(buckets, zone, group_by))


def tokens_table(buckets: list[dict[str, Any]], zone: ZoneInfo, group_by: str | None) -> str:
    """START (the bucket's first day in `zone`), the group column, the counts, and TOTAL."""
    group = [group_by] if group_by else []
    rows = [_bucket_row(b, zone, group_by) for b in buckets]
    total = {c: f"{sum(int(b.get(c, 0)) for b in buckets):,}" for c in COUNT_COLUMNS}
    return render.table(["start", *group, *COUNT_COLUMNS], [*rows, {"start": "TOTAL", **total}])


def _bucket_row(bucket: dict[str, Any], zone: ZoneInfo, group_by: str | None) -> dict[str, Any]:
    row: dict[str, Any] = {"start": _local(bucket["startTime"], zone).date().isoformat()}
    if group_by:
        row[group_by] = bucket.get("key")
    return row | {c: f"{int(bucket.get(c, 0)):,}" for c in COUNT_COLUMNS}


def _local(stamp: str, zone: ZoneInfo) -> datetime:
    return parse_timestamp(stamp).astimezone(zone)


@usage.command(
    "rollup",
    short_help="Fold the local usage ledger into its per-hour aggregates.",
    help="""Fold the usage ledger of the local store (the one `jnh serve` uses:
    JENNAH_STORE, sqlite at <data-dir>/memory.db by default) into per-hour
    aggregates, up to 5 minutes ago, so the token report reads one row per hour
    instead of one per formation. Reports answer the same before and after.

    In production the `usage-rollup` function does this, on a Cloud Scheduler
    job every 15 minutes; run this for a local store, or to catch up. It is
    idempotent and safe to run beside a server or another rollup: each row is
    folded once, so a second run folds 0 rows. Prints the rows folded and the
    watermark (every usage row recorded before it is folded).

    \b
    Example:
      jnh usage rollup --data-dir ~/.jennah
    """,
)
@data_dir_option
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table",
              show_default=True, help="json prints {rowsFolded, watermark}.")  # fmt: skip
def rollup(data_dir: Path | None, output: str) -> None:
    from jennah.bootstrap import Container  # the store's imports stay off other commands

    container = Container(load_settings(data_dir))
    try:
        result = usage_report.rollup(container.ledger, container.now())
    except JennahError as err:
        raise local_failure(err) from None
    finally:
        container.close()
    watermark = format_timestamp(result.watermark)
    if output == "json":
        render.emit_json({"rowsFolded": result.rows_folded, "watermark": watermark})
    else:
        click.echo(f"Folded {result.rows_folded} usage rows; watermark {watermark}.")
