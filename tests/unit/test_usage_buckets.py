"""The usage report's calendar: buckets in a time zone, their spans, and the range bounds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from jennah.errors import InvalidArgument
from jennah.ports.ledger import UsageSpan
from jennah.services.usage_report import (
    Per,
    TokenUsageQuery,
    bucket_bounds,
    spans_of,
    time_range,
    time_zone,
)

NOW = datetime(2026, 11, 29, 16, 20, tzinfo=UTC)
NEW_YORK = ZoneInfo("America/New_York")
KOLKATA = ZoneInfo("Asia/Kolkata")
TOKYO = ZoneInfo("Asia/Tokyo")


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def test_days_follow_the_local_calendar_across_dst() -> None:
    # New York springs forward on 2026-03-08 and falls back on 2026-11-01
    spring = bucket_bounds(utc(2026, 3, 7, 5), utc(2026, 3, 10, 4), Per.DAY, NEW_YORK)
    assert spring == [
        (utc(2026, 3, 7, 5), utc(2026, 3, 8, 5)),
        (utc(2026, 3, 8, 5), utc(2026, 3, 9, 4)),  # 23 hours
        (utc(2026, 3, 9, 4), utc(2026, 3, 10, 4)),
    ]
    autumn = bucket_bounds(utc(2026, 11, 1, 4), utc(2026, 11, 2, 5), Per.DAY, NEW_YORK)
    assert autumn == [(utc(2026, 11, 1, 4), utc(2026, 11, 2, 5))]  # 25 hours


def test_buckets_are_clipped_to_the_range() -> None:
    bounds = bucket_bounds(utc(2026, 9, 1, 10), utc(2026, 9, 2, 3), Per.DAY, TOKYO)
    # Tokyo days start at 15:00 UTC
    assert bounds == [
        (utc(2026, 9, 1, 10), utc(2026, 9, 1, 15)),
        (utc(2026, 9, 1, 15), utc(2026, 9, 2, 3)),
    ]


def test_weeks_are_iso_weeks_starting_monday() -> None:
    # 2026-01-01 is a Thursday: its ISO week began on Monday 2025-12-29
    bounds = bucket_bounds(utc(2026, 1, 1), utc(2026, 1, 13), Per.WEEK, ZoneInfo("UTC"))
    assert bounds == [
        (utc(2026, 1, 1), utc(2026, 1, 5)),
        (utc(2026, 1, 5), utc(2026, 1, 12)),
        (utc(2026, 1, 12), utc(2026, 1, 13)),
    ]
    assert all(start.weekday() == 0 for start, _ in bounds[1:])


def test_a_week_across_dst_has_167_hours() -> None:
    ((start, end),) = bucket_bounds(utc(2026, 3, 2, 5), utc(2026, 3, 9, 4), Per.WEEK, NEW_YORK)
    assert end - start == timedelta(hours=167)


def test_months_follow_the_local_calendar() -> None:
    bounds = bucket_bounds(utc(2026, 1, 31, 15), utc(2026, 3, 31, 15), Per.MONTH, TOKYO)
    assert bounds == [
        (utc(2026, 1, 31, 15), utc(2026, 2, 28, 15)),
        (utc(2026, 2, 28, 15), utc(2026, 3, 31, 15)),
    ]


def test_whole_hours_are_one_hourly_span_and_partial_hours_are_read_from_rows() -> None:
    assert spans_of(utc(2026, 1, 1), utc(2026, 1, 2)) == [
        UsageSpan(start=utc(2026, 1, 1), end=utc(2026, 1, 2), hourly=True)
    ]
    kolkata_day = bucket_bounds(utc(2026, 1, 1, 18, 30), utc(2026, 1, 2, 18, 30), Per.DAY, KOLKATA)
    assert kolkata_day == [(utc(2026, 1, 1, 18, 30), utc(2026, 1, 2, 18, 30))]
    assert spans_of(*kolkata_day[0]) == [
        UsageSpan(start=utc(2026, 1, 1, 18, 30), end=utc(2026, 1, 1, 19), hourly=False),
        UsageSpan(start=utc(2026, 1, 1, 19), end=utc(2026, 1, 2, 18), hourly=True),
        UsageSpan(start=utc(2026, 1, 2, 18), end=utc(2026, 1, 2, 18, 30), hourly=False),
    ]
    inside = spans_of(utc(2026, 1, 1, 3, 10), utc(2026, 1, 1, 3, 50))
    assert inside == [
        UsageSpan(start=utc(2026, 1, 1, 3, 10), end=utc(2026, 1, 1, 3, 50), hourly=False)
    ]


def test_kathmandu_quarter_hour_offset_is_split_exactly() -> None:
    (bucket,) = bucket_bounds(
        utc(2026, 5, 1, 18, 15), utc(2026, 5, 2, 18, 15), Per.DAY, ZoneInfo("Asia/Kathmandu")
    )
    spans = spans_of(*bucket)
    assert [s.hourly for s in spans] == [False, True, False]
    assert spans[0].end - spans[0].start == timedelta(minutes=45)


def test_the_range_reaches_back_at_most_400_days() -> None:
    time_range(TokenUsageQuery(start_time=NOW - timedelta(days=400)), NOW)
    with pytest.raises(InvalidArgument) as caught:
        time_range(TokenUsageQuery(start_time=NOW - timedelta(days=400, seconds=1)), NOW)
    assert caught.value.metadata["field"] == "startTime"
    assert "400 days" in caught.value.message


def test_the_end_must_follow_the_start() -> None:
    start = NOW - timedelta(days=2)
    with pytest.raises(InvalidArgument) as caught:
        time_range(TokenUsageQuery(start_time=start, end_time=start), NOW)
    assert caught.value.metadata["field"] == "endTime"
    with pytest.raises(InvalidArgument) as caught:
        time_range(TokenUsageQuery(start_time=NOW + timedelta(hours=1)), NOW)
    assert caught.value.metadata["field"] == "startTime"
    assert "(now)" in caught.value.message


def test_a_naive_time_is_utc_and_the_end_defaults_to_now() -> None:
    start, end = time_range(TokenUsageQuery(start_time=datetime(2026, 11, 1)), NOW)
    assert (start, end) == (utc(2026, 11, 1), NOW)


@pytest.mark.parametrize("name", ["Mars/Olympus", "+09:00", "", "../etc/passwd", "America"])
def test_a_time_zone_must_be_an_iana_name(name: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        time_zone(name)
    assert caught.value.metadata["field"] == "timeZone"


def test_utc_is_the_default_zone() -> None:
    assert TokenUsageQuery(start_time=NOW).time_zone == "UTC"
    assert time_zone("UTC").key == "UTC"
