"""The lifecycle pass's rules (jennah.domain.lifecycle): expiry at the scope's local
midnight, promotion at the third reinforcement, decay at 180 local days, the
precedence between them, and what they never touch."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from jennah.domain import lifecycle
from jennah.domain.lifecycle import Change, WalkCursor
from jennah.domain.models import (
    Authority,
    ClaimUpdate,
    Durability,
    MemoryRecord,
    ScopeRef,
    Status,
)
from jennah.errors import InvalidArgument

SCOPE = ScopeRef(enterprise_id="e", scope_id="s")
UTC_ZONE = ZoneInfo("UTC")
AZORES = ZoneInfo("Atlantic/Azores")  # UTC-1 in December, UTC+0 in summer
NEW_YORK = ZoneInfo("America/New_York")  # DST 2026: from 8 March, until 1 November
SANTIAGO = ZoneInfo("America/Santiago")  # DST 2026 begins at local midnight on 6 September
FORMED = datetime(2026, 1, 1, 12, tzinfo=UTC)


def claim(memory_id: str = "chk_a", **fields: Any) -> MemoryRecord:
    base: dict[str, Any] = {
        "id": memory_id, "scope": SCOPE, "text": "the words", "summary": "words",
        "created_at": FORMED, "revision": 4,
    }  # fmt: skip
    return MemoryRecord.model_validate({**base, **fields})


def change_of(record: MemoryRecord, now: datetime, zone: Any = UTC_ZONE) -> Change | None:
    moved = lifecycle.transition(record, now, zone)
    return None if moved is None else moved.change


# the scope's calendar


@pytest.mark.parametrize(
    ("zone", "day", "begins"),
    [
        (UTC_ZONE, date(2026, 12, 17), datetime(2026, 12, 17, tzinfo=UTC)),
        (AZORES, date(2026, 12, 17), datetime(2026, 12, 17, 1, tzinfo=UTC)),
        (NEW_YORK, date(2026, 11, 1), datetime(2026, 11, 1, 4, tzinfo=UTC)),  # still EDT
        (NEW_YORK, date(2026, 11, 2), datetime(2026, 11, 2, 5, tzinfo=UTC)),  # EST from the 1st
        (NEW_YORK, date(2026, 3, 8), datetime(2026, 3, 8, 5, tzinfo=UTC)),  # EST until 02:00
        (NEW_YORK, date(2026, 3, 9), datetime(2026, 3, 9, 4, tzinfo=UTC)),  # EDT
        # local midnight does not exist on 6 September: the day begins at 01:00 -03
        (SANTIAGO, date(2026, 9, 6), datetime(2026, 9, 6, 4, tzinfo=UTC)),
    ],
)
def test_a_local_day_begins_at_the_zones_own_midnight(
    zone: Any, day: date, begins: datetime
) -> None:
    assert lifecycle.start_of_local_day(day, zone) == begins
    assert lifecycle.local_day(begins, zone) == day
    assert lifecycle.local_day(begins - timedelta(microseconds=1), zone) == day - timedelta(days=1)


def test_an_unknown_time_zone_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidArgument) as refused:
        lifecycle.scope_zone("Mars/Olympus")
    assert refused.value.metadata["field"] == "timeZone"
    assert lifecycle.scope_zone("Europe/Lisbon") == ZoneInfo("Europe/Lisbon")


# expire


def test_a_claim_valid_until_the_17th_expires_when_the_17th_begins_locally_not_an_hour_before() -> (
    None
):
    until = lifecycle.start_of_local_day(date(2026, 12, 17), AZORES)  # 01:00Z
    record = claim(valid_until=until)
    assert change_of(record, datetime(2026, 12, 17, 0, tzinfo=UTC), AZORES) is None  # UTC midnight
    assert change_of(record, until - timedelta(microseconds=1), AZORES) is None
    assert change_of(record, until, AZORES) is Change.EXPIRED
    assert change_of(record, until + timedelta(hours=5), AZORES) is Change.EXPIRED


@pytest.mark.parametrize(
    ("day", "begins"),
    [
        (date(2026, 11, 2), datetime(2026, 11, 2, 5, tzinfo=UTC)),  # the day after clocks go back
        (date(2026, 3, 9), datetime(2026, 3, 9, 4, tzinfo=UTC)),  # the day after they go forward
    ],
)
def test_expiry_across_a_dst_change_is_at_local_midnight_not_an_hour_off(
    day: date, begins: datetime
) -> None:
    record = claim(valid_until=lifecycle.start_of_local_day(day, NEW_YORK))
    an_hour = timedelta(hours=1)
    assert change_of(record, begins - an_hour, NEW_YORK) is None
    assert change_of(record, begins - timedelta(seconds=1), NEW_YORK) is None
    assert change_of(record, begins, NEW_YORK) is Change.EXPIRED


def test_an_expiry_sets_expired_and_closes_the_window_at_valid_until() -> None:
    until = datetime(2026, 6, 1, tzinfo=UTC)
    moved = lifecycle.transition(claim(valid_until=until), until + timedelta(days=2), UTC_ZONE)
    assert moved is not None
    assert moved.update == ClaimUpdate(
        memory_id="chk_a", expected_revision=4, status=Status.EXPIRED, invalid_at=until
    )
    assert (moved.entry.memory_id, moved.entry.change) == ("chk_a", "expired")
    assert (moved.entry.from_value, moved.entry.to_value) == ("active", "expired")


def test_an_expiry_leaves_an_already_closed_window_as_it_is() -> None:
    closed = datetime(2026, 5, 1, tzinfo=UTC)
    record = claim(valid_until=datetime(2026, 6, 1, tzinfo=UTC), invalid_at=closed)
    moved = lifecycle.transition(record, datetime(2026, 7, 1, tzinfo=UTC), UTC_ZONE)
    assert moved is not None and moved.update.invalid_at is None
    assert moved.update.status is Status.EXPIRED


def test_a_pinned_or_explicit_claim_still_expires() -> None:
    until = datetime(2026, 6, 1, tzinfo=UTC)
    for record in (claim(valid_until=until, pin=True),
                   claim(valid_until=until, authority=Authority.USER_EXPLICIT)):  # fmt: skip
        assert change_of(record, until) is Change.EXPIRED


def test_the_change_log_is_dated_with_the_scope_local_day_of_the_pass() -> None:
    until = datetime(2026, 12, 16, tzinfo=UTC)
    now = datetime(2026, 12, 17, 0, 30, tzinfo=UTC)  # 23:30 on the 16th in the Azores
    moved = lifecycle.transition(claim(valid_until=until), now, AZORES)
    assert moved is not None and moved.entry.day == "2026-12-16"
    moved_utc = lifecycle.transition(claim(valid_until=until), now, UTC_ZONE)
    assert moved_utc is not None and moved_utc.entry.day == "2026-12-17"


# promote


@pytest.mark.parametrize(("count", "promoted"), [(0, False), (2, False), (3, True), (7, True)])
def test_a_passing_claim_is_promoted_at_the_third_reinforcement_not_the_second(
    count: int, promoted: bool
) -> None:
    record = claim(durability=Durability.PASSING, reinforcement_count=count,
                   authority=Authority.USER_STATED)  # fmt: skip
    assert (change_of(record, FORMED) is Change.PROMOTED) is promoted
    assert lifecycle.PROMOTION_REINFORCEMENTS == 3


def test_a_promotion_changes_the_durability_only() -> None:
    record = claim(durability=Durability.PASSING, reinforcement_count=3)
    moved = lifecycle.transition(record, FORMED, UTC_ZONE)
    assert moved is not None
    assert moved.update == ClaimUpdate(
        memory_id="chk_a", expected_revision=4, durability=Durability.DURABLE
    )
    assert (moved.entry.from_value, moved.entry.to_value) == ("passing", "durable")


@pytest.mark.parametrize(
    "fields",
    [
        {"pin": True},
        {"authority": Authority.USER_EXPLICIT},
        {"durability": Durability.SEASONAL},
        {"durability": Durability.DURABLE},
        {"status": Status.DORMANT},
    ],
)
def test_pinned_explicit_not_passing_or_inactive_claims_are_not_promoted(
    fields: dict[str, Any],
) -> None:
    record = claim(**{"durability": Durability.PASSING, "reinforcement_count": 5, **fields})
    assert change_of(record, FORMED) is None


# decay


def test_an_inferred_claim_decays_at_180_local_days_not_179() -> None:
    record = claim(authority=Authority.INFERRED, created_at=datetime(2026, 1, 1, 23, tzinfo=UTC))
    day_179 = datetime(2026, 6, 29, 23, 59, tzinfo=UTC)  # 1 January + 179 days, its last minute
    day_180 = datetime(2026, 6, 30, 0, 0, tzinfo=UTC)
    assert change_of(record, day_179) is None
    assert change_of(record, day_180) is Change.DECAYED
    assert lifecycle.DECAY_DAYS == 180


def test_decay_counts_from_the_last_reinforcement_when_there_is_one() -> None:
    record = claim(authority=Authority.INFERRED,
                   last_reinforced_at=datetime(2026, 3, 1, tzinfo=UTC))  # fmt: skip
    assert change_of(record, datetime(2026, 8, 27, tzinfo=UTC)) is None  # 179 days after
    assert change_of(record, datetime(2026, 8, 28, tzinfo=UTC)) is Change.DECAYED


def test_decay_days_are_the_scopes_calendar_days() -> None:
    # reinforced at 23:30 on 1 March in New York (04:30Z on the 2nd): the 180th local day
    # after it, 28 August, begins at 04:00Z (EDT)
    reinforced = datetime(2026, 3, 2, 4, 30, tzinfo=UTC)
    record = claim(authority=Authority.INFERRED, last_reinforced_at=reinforced)
    begins = lifecycle.start_of_local_day(date(2026, 8, 28), NEW_YORK)
    assert change_of(record, begins - timedelta(seconds=1), NEW_YORK) is None
    assert change_of(record, begins, NEW_YORK) is Change.DECAYED
    # in UTC the same reinforcement is on 2 March: 180 days are reached a day later
    assert change_of(record, begins, UTC_ZONE) is None


def test_a_decay_makes_the_claim_dormant() -> None:
    record = claim(authority=Authority.INFERRED)
    moved = lifecycle.transition(record, FORMED + timedelta(days=400), UTC_ZONE)
    assert moved is not None
    assert moved.update == ClaimUpdate(
        memory_id="chk_a", expected_revision=4, status=Status.DORMANT
    )
    assert (moved.entry.change, moved.entry.to_value) == ("decayed", "dormant")


@pytest.mark.parametrize(
    "fields",
    [
        {"pin": True},
        {"authority": Authority.USER_STATED},
        {"authority": Authority.USER_EXPLICIT},
        {"authority": Authority.SYSTEM},
        {"status": Status.EXPIRED},
        {"created_at": None},
    ],
)
def test_pinned_stated_explicit_or_inactive_claims_do_not_decay(fields: dict[str, Any]) -> None:
    record = claim(**{"authority": Authority.INFERRED, **fields})
    assert change_of(record, FORMED + timedelta(days=1000)) is None


# precedence, determinism, words


def test_one_transition_per_claim_expiry_first_then_decay_then_promotion() -> None:
    late = FORMED + timedelta(days=400)
    everything = claim(authority=Authority.INFERRED, durability=Durability.PASSING,
                       reinforcement_count=3, valid_until=FORMED + timedelta(days=1))  # fmt: skip
    assert change_of(everything, late) is Change.EXPIRED
    assert change_of(everything.model_copy(update={"valid_until": None}), late) is Change.DECAYED
    assert change_of(everything.model_copy(update={"valid_until": None}), FORMED) is Change.PROMOTED


def test_transitions_are_deterministic_in_id_order_and_never_touch_words() -> None:
    late = FORMED + timedelta(days=400)
    claims = [
        claim("chk_c", authority=Authority.INFERRED),
        claim("chk_a", valid_until=FORMED),
        claim("chk_b", durability=Durability.PASSING, reinforcement_count=3),
        claim("chk_d"),
    ]
    first = lifecycle.transitions(claims, late, UTC_ZONE)
    assert [t.update.memory_id for t in first] == ["chk_a", "chk_b", "chk_c"]
    assert lifecycle.transitions(list(reversed(claims)), late, UTC_ZONE) == first
    words = {"text", "summary", "about", "when_to_use", "metadata"}
    assert all(words.isdisjoint(t.update.model_fields_set) for t in first)


def test_active_after_applies_the_moves_and_keeps_only_active_valid_claims() -> None:
    late = FORMED + timedelta(days=400)
    claims = [
        claim("chk_a", valid_until=FORMED),
        claim("chk_b", durability=Durability.PASSING, reinforcement_count=3),
        claim("chk_c", authority=Authority.INFERRED),
        claim("chk_d"),
        claim("chk_e", valid_at=late + timedelta(days=1)),  # not valid yet
    ]
    moves = lifecycle.transitions(claims, late, UTC_ZONE)
    after = lifecycle.active_after(claims, moves, late)
    assert [c.id for c in after] == ["chk_b", "chk_d"]
    assert after[0].durability is Durability.DURABLE and after[0].revision == 5
    assert lifecycle.transitions(after, late, UTC_ZONE) == []


# the nightly walk's cursor


def test_a_walk_resumes_when_unfinished_and_recent_and_starts_afresh_otherwise() -> None:
    now = datetime(2026, 12, 2, 3, tzinfo=UTC)
    assert lifecycle.walk_start(None, now) == WalkCursor(started_at=now)
    stopped = WalkCursor(after=SCOPE, started_at=now - timedelta(minutes=20))
    assert lifecycle.walk_start(stopped, now) == stopped
    stale = WalkCursor(after=SCOPE, started_at=now - lifecycle.RESUME_WINDOW)
    assert lifecycle.walk_start(stale, now) == WalkCursor(started_at=now)
    done = stopped.model_copy(update={"finished_at": now - timedelta(minutes=1), "after": None})
    assert lifecycle.walk_start(done, now) == WalkCursor(started_at=now)
