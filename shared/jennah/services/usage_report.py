"""Formation token usage: the aggregated report, and the rollup that keeps it fast.

`formation_tokens` answers GET /v1/billing/usage/formation-tokens: input tokens,
output tokens and units of the formations that reported tokens, per day, ISO
week (Monday start) or month of a time zone's calendar (so across a DST change
a day has 23 or 25 hours), optionally grouped by one of scope, caller, model or
region, and narrowed by any of them. Always aggregated, never per formation.

Buckets are the calendar periods the range [startTime, endTime) touches,
clipped to it; a bucket (or group) with nothing counted is left out. Each
bucket is read as spans: its whole UTC hours (answered from the per-hour
aggregates below the rollup watermark plus the ledger's rows above it) and
its partial hours at either end (answered from the ledger's rows). Time zones
whose offset is not a whole hour (Asia/Kolkata +5:30, Asia/Kathmandu +5:45)
have every day boundary inside an hour, so those hours are read from the rows:
the answer stays exact, never apportioned.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, Field

from jennah.domain.access import Caller, Permission, reaches_everything
from jennah.domain.billing import UsageDimension
from jennah.errors import InvalidArgument, PermissionDenied
from jennah.ports.ledger import ROLLUP_LAG, SpanTotals, UsageFilters, UsageLedger, UsageSpan
from jennah.services.access import Access

MAX_LOOKBACK = timedelta(days=400)  # the retention period of usage records
ROLLUP_WINDOW = timedelta(days=1)  # the most one rollup transaction folds
_HOUR = timedelta(hours=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Per(StrEnum):
    DAY = "day"
    WEEK = "week"  # ISO week, Monday start
    MONTH = "month"


class TokenUsageQuery(BaseModel):
    """One report request. A naive start or end time is taken to be UTC; `time_zone`
    is an IANA name; `end_time` None means now."""

    start_time: datetime
    end_time: datetime | None = None
    per: Per = Per.DAY
    time_zone: str = "UTC"
    group_by: UsageDimension | None = None
    filters: UsageFilters = Field(default_factory=UsageFilters)


class TokenBucket(BaseModel):
    """One bucket: [start, end) in UTC, its group key (None when not grouped)."""

    start: datetime
    end: datetime
    key: str | None = None
    input_tokens: int
    output_tokens: int
    units: int


def formation_tokens(
    caller: Caller, access: Access, ledger: UsageLedger, query: TokenUsageQuery, now: datetime
) -> list[TokenBucket]:
    """The caller's enterprise's formation token usage, bucketed; ordered by start, key.

    Requires billing.usage:read. Grouping or filtering by scope also requires
    reach over every scope of the enterprise: without it PERMISSION_DENIED, never
    an answer limited to the scopes the caller reaches. INVALID_ARGUMENT naming
    the field for a start more than 400 days back, an end not after the start,
    or a time zone that is not an IANA name.
    """
    grants = access.require(caller, Permission.BILLING_USAGE_READ)
    by_scope = query.group_by is UsageDimension.SCOPE or query.filters.scope is not None
    if by_scope and not reaches_everything(grants):
        raise PermissionDenied(
            f"{caller.principal} cannot group or filter usage by scope: that needs reach "
            "over every agent workspace and every subject scope of the enterprise, so "
            "that a per-scope breakdown adds up to the enterprise's totals",
            reason="USAGE_SCOPE_REACH",
            metadata={"permission": str(Permission.BILLING_USAGE_READ)},
        )
    zone = time_zone(query.time_zone)
    start, end = time_range(query, now)
    buckets = bucket_bounds(start, end, query.per, zone)
    spans, owners = _spans(buckets)
    totals = ledger.usage_totals(caller.enterprise_id, spans, query.group_by, query.filters)
    return _buckets(buckets, owners, totals)


def rollup(ledger: UsageLedger, now: datetime) -> RollupResult:
    """Fold the ledger into per-hour aggregates up to `now - ROLLUP_LAG` (the
    `usage-rollup` function's and `jnh usage rollup`'s work). Idempotent, and safe
    to run concurrently: each transaction folds from the watermark it reads."""
    until = now - ROLLUP_LAG
    folded = 0
    while True:
        step = ledger.fold(until, ROLLUP_WINDOW)
        folded += step.rows_folded
        if step.watermark >= until:
            return RollupResult(watermark=step.watermark, rows_folded=folded)


class RollupResult(BaseModel):
    watermark: datetime
    rows_folded: int


# Validation.


def time_zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidArgument(
            f"timeZone {name[:80]!r} is not an IANA time zone name (e.g. UTC, Asia/Tokyo)",
            field="timeZone",
        ) from None


def time_range(query: TokenUsageQuery, now: datetime) -> tuple[datetime, datetime]:
    """[start, end) in UTC, within the 400 days usage is kept."""
    now = _utc(now)
    start = _utc(query.start_time)
    end = _utc(query.end_time) if query.end_time is not None else now
    if start < now - MAX_LOOKBACK:
        raise InvalidArgument(
            f"startTime {_stamp(start)} is more than {MAX_LOOKBACK.days} days back; usage "
            f"records are kept for {MAX_LOOKBACK.days} days, so the range can start at "
            f"{_stamp(now - MAX_LOOKBACK)} at the earliest",
            field="startTime",
        )
    if end <= start:
        field = "endTime" if query.end_time is not None else "startTime"
        raise InvalidArgument(
            f"startTime {_stamp(start)} must be before endTime {_stamp(end)}"
            + ("" if query.end_time is not None else " (now)"),
            field=field,
        )
    return start, end


# Buckets and spans.


def bucket_bounds(
    start: datetime, end: datetime, per: Per, zone: ZoneInfo
) -> list[tuple[datetime, datetime]]:
    """The calendar periods of `zone` that [start, end) touches, in UTC, clipped to it."""
    bounds: list[tuple[datetime, datetime]] = []
    for first, following in _periods(start.astimezone(zone).date(), per):
        period_start, period_end = _midnight(first, zone), _midnight(following, zone)
        if period_start >= end:
            return bounds
        if period_end > start:
            bounds.append((max(period_start, start), min(period_end, end)))
    raise AssertionError("unreachable")  # _periods never ends


def _periods(day: date, per: Per) -> Iterator[tuple[date, date]]:
    if per is Per.WEEK:
        day -= timedelta(days=day.weekday())
    elif per is Per.MONTH:
        day = day.replace(day=1)
    while True:
        following = _next_period(day, per)
        yield day, following
        day = following


def _next_period(day: date, per: Per) -> date:
    if per is Per.DAY:
        return day + timedelta(days=1)
    if per is Per.WEEK:
        return day + timedelta(days=7)
    return (day.replace(day=1) + timedelta(days=32)).replace(day=1)


def _midnight(day: date, zone: ZoneInfo) -> datetime:
    """The first instant of a local calendar day (a midnight skipped by a DST change
    maps to the instant the day begins)."""
    return datetime.combine(day, time(), tzinfo=zone).astimezone(UTC)


def spans_of(start: datetime, end: datetime) -> list[UsageSpan]:
    """[start, end) as its whole UTC hours (hourly) and the partial hours at its ends."""
    first, last = _ceil_hour(start), _floor_hour(end)
    if first >= last:
        return [UsageSpan(start=start, end=end, hourly=False)]
    spans = [UsageSpan(start=first, end=last, hourly=True)]
    if start < first:
        spans.insert(0, UsageSpan(start=start, end=first, hourly=False))
    if last < end:
        spans.append(UsageSpan(start=last, end=end, hourly=False))
    return spans


def _spans(buckets: list[tuple[datetime, datetime]]) -> tuple[list[UsageSpan], list[int]]:
    """Every bucket's spans, and for each span the index of its bucket."""
    spans: list[UsageSpan] = []
    owners: list[int] = []
    for index, (start, end) in enumerate(buckets):
        pieces = spans_of(start, end)
        spans.extend(pieces)
        owners.extend([index] * len(pieces))
    return spans, owners


def _buckets(
    buckets: list[tuple[datetime, datetime]], owners: list[int], totals: list[SpanTotals]
) -> list[TokenBucket]:
    sums: dict[tuple[int, str | None], list[int]] = defaultdict(lambda: [0, 0, 0])
    for total in totals:
        entry = sums[owners[total.span], total.key]
        entry[0] += total.input_tokens
        entry[1] += total.output_tokens
        entry[2] += total.units
    ordered = sorted(sums.items(), key=lambda item: (item[0][0], item[0][1] or ""))
    return [
        TokenBucket(
            start=buckets[index][0],
            end=buckets[index][1],
            key=key,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            units=units,
        )
        for (index, key), (input_tokens, output_tokens, units) in ordered
    ]


def _floor_hour(at: datetime) -> datetime:
    return _EPOCH + (at - _EPOCH) // _HOUR * _HOUR


def _ceil_hour(at: datetime) -> datetime:
    floor = _floor_hour(at)
    return floor if floor == at else floor + _HOUR


def _utc(at: datetime) -> datetime:
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def _stamp(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")
