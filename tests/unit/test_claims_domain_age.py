"""remembered_for: the age a search candidate and a card item show."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from jennah.domain.claims import remembered_for

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("ago", "expected"),
    [
        (timedelta(hours=-3), "today"),
        (timedelta(hours=23), "today"),
        (timedelta(days=1), "1 day"),
        (timedelta(days=13), "13 days"),
        (timedelta(days=14), "2 weeks"),
        (timedelta(days=59), "8 weeks"),
        (timedelta(days=60), "2 months"),
        (timedelta(days=364), "12 months"),
        (timedelta(days=365), "1 year"),
        (timedelta(days=800), "2 years"),
    ],
)
def test_age_is_whole_units_rounded_down(ago: timedelta, expected: str) -> None:
    assert remembered_for(NOW - ago, NOW) == expected
