"""The usage ledger contract: every test here runs against BOTH ledgers.

`ledger` is parametrized over the embedded SQLite ledger (in the memory store's
file) and Cloud Spanner (on the local emulator, marked `spanner`). The rollup
watermark is global to a database, so each Spanner test gets a database of its
own (creating one on the emulator takes milliseconds); enterprises are unique
per test all the same.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from jennah.domain.access import Caller, Role, RoleBinding, User
from jennah.domain.billing import (
    ALLOWANCE_REASON,
    IN_PROGRESS_REASON,
    MAX_FORMATIONS_IN_PROGRESS,
    OVERAGE_LIMIT_REASON,
    RESERVATION_LIFETIME,
    Consumption,
    EnterpriseBilling,
    Plan,
    Spent,
    UsageDimension,
    UsageRecord,
)
from jennah.domain.models import ScopeRef
from jennah.errors import InvalidArgument, PermissionDenied, ResourceExhausted
from jennah.ports.ledger import UsageFilters, UsageLedger
from jennah.ports.store import MemoryStore
from jennah.services import billing as billing_service
from jennah.services.access import Access, create_enterprise
from jennah.services.commands import ChunkInput
from jennah.services.formation.model_calls import FormationUsage
from jennah.services.usage_report import (
    Per,
    TokenBucket,
    TokenUsageQuery,
    bucket_bounds,
    formation_tokens,
    rollup,
    time_zone,
)
from tests.contract.conftest import commit_items, row_counts

NOW = datetime(2026, 11, 29, 16, 20, 30, tzinfo=UTC)
MODELS = ("gemini-2.5-flash", "gemini-2.5-pro")
REGIONS = ("us-central1", "europe-west4")


@dataclass
class Backend:
    ledger: UsageLedger
    store: MemoryStore
    reopen: Any  # (**options) -> another ledger on the same file or database


def _sqlite(tmp_path: Path) -> Iterator[Backend]:
    from jennah.adapters.sqlite.ledger import SqliteUsageLedger
    from jennah.adapters.sqlite.store import SqliteStore

    path = tmp_path / "memory.db"
    opened: list[Any] = []

    def reopen(**options: Any) -> SqliteUsageLedger:
        opened.append(SqliteUsageLedger(path, **options))
        return opened[-1]

    store = SqliteStore(path)
    yield Backend(reopen(), store, reopen)
    for ledger in opened:
        ledger.close()
    store.close()


def _spanner() -> Iterator[Backend]:
    from jennah.adapters.spanner.ledger import SpannerUsageLedger
    from jennah.adapters.spanner.store import SpannerStore
    from tests.support.spanner_emulator import create_database, session_emulator

    database = create_database(session_emulator().host)
    yield Backend(
        SpannerUsageLedger(database, timeout_seconds=60),
        SpannerStore(database),
        lambda **options: SpannerUsageLedger(database, timeout_seconds=60, **options),
    )
    database.drop()


@pytest.fixture(params=["sqlite", pytest.param("spanner", marks=pytest.mark.spanner)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        yield from _sqlite(tmp_path)
    else:
        yield from _spanner()


@pytest.fixture
def ledger(backend: Backend) -> UsageLedger:
    return backend.ledger


@pytest.fixture
def enterprise() -> str:
    return f"ent-{uuid.uuid4().hex}"


def record(
    enterprise: str,
    at: datetime,
    *,
    scope: str = "bot",
    caller: str = "user:root",
    model: str = MODELS[0],
    region: str = REGIONS[0],
    input_tokens: int = 1_000,
    output_tokens: int = 500,
    units: int | None = None,
) -> UsageRecord:
    from jennah.domain.formation import formation_units

    return UsageRecord(
        enterprise_id=enterprise,
        spent_in_scope=scope,
        caller=caller,
        model=model,
        region=region,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        units=units if units is not None else formation_units(input_tokens, output_tokens),
        formation_id=f"fu_{uuid.uuid4().hex}",
        recorded_at=at,
    )


def put(ledger: UsageLedger, *records: UsageRecord) -> None:
    for each in records:
        assert ledger.settle(each.enterprise_id, each.formation_id, each)


def set_plan(ledger: UsageLedger, enterprise: str, plan: Plan, **fields: Any) -> None:
    ledger.put_billing(EnterpriseBilling(enterprise_id=enterprise, plan=plan, **fields))


def spend_units(ledger: UsageLedger, enterprise: str, units: int, at: datetime = NOW) -> None:
    """`units` worth of formations in one go: formations of 9 units, then the rest."""
    while units > 0:
        chunk = min(units, 9)
        put(ledger, record(enterprise, at, output_tokens=chunk * 8_192, units=chunk))
        units -= chunk


# -- a report, the way the API asks for it --------------------------------------


class Reader:
    """Runs the report service as the enterprise's root (reach over everything)."""

    def __init__(self, tmp_path: Path, enterprise: str) -> None:
        from jennah.adapters.sqlite.identity import SqliteIdentityStore

        self.identity = SqliteIdentityStore(tmp_path / f"identity-{enterprise}.db")
        create_enterprise(self.identity, enterprise, "user:root", NOW)
        self.access = Access(self.identity, _NoStore(), lambda: NOW)  # type: ignore[arg-type]
        self.root = Caller(enterprise_id=enterprise, principal="user:root")

    def tokens(
        self, ledger: UsageLedger, caller: Caller | None = None, **query: Any
    ) -> list[TokenBucket]:
        query.setdefault("start_time", NOW - timedelta(days=399))
        return formation_tokens(
            caller or self.root, self.access, ledger, TokenUsageQuery(**query), NOW
        )


class _NoStore:
    """The report never opens a scope."""


@pytest.fixture
def reader(tmp_path: Path, enterprise: str) -> Iterator[Reader]:
    reader = Reader(tmp_path, enterprise)
    yield reader
    reader.identity.close()


def rows(buckets: list[TokenBucket]) -> list[tuple[Any, ...]]:
    return [(b.start, b.end, b.key, b.input_tokens, b.output_tokens, b.units) for b in buckets]


def expected(
    records: list[UsageRecord],
    start: datetime,
    end: datetime,
    per: Per,
    zone: str,
    by: UsageDimension | None = None,
    filters: UsageFilters | None = None,
) -> list[tuple[Any, ...]]:
    """The reference answer: the records summed per bucket in plain Python."""
    filters = filters or UsageFilters()
    columns = {
        UsageDimension.SCOPE: "spent_in_scope",
        UsageDimension.CALLER: "caller",
        UsageDimension.MODEL: "model",
        UsageDimension.REGION: "region",
    }
    sums: dict[tuple[int, str | None], list[int]] = defaultdict(lambda: [0, 0, 0])
    bounds = bucket_bounds(start, end, per, time_zone(zone))
    for each in records:
        if not each.reported_tokens:
            continue
        if any(
            filters.value(d) is not None and getattr(each, c) != filters.value(d)
            for d, c in columns.items()
        ):
            continue
        for index, (b_start, b_end) in enumerate(bounds):
            if b_start <= each.recorded_at < b_end:
                key = getattr(each, columns[by]) if by is not None else None
                entry = sums[index, key]
                entry[0] += each.input_tokens
                entry[1] += each.output_tokens
                entry[2] += each.units
    return [
        (bounds[i][0], bounds[i][1], key, *values)
        for (i, key), values in sorted(sums.items(), key=lambda kv: (kv[0][0], kv[0][1] or ""))
    ]


# -- billing settings ------------------------------------------------------------


def test_an_enterprise_without_settings_is_on_the_free_plan(
    ledger: UsageLedger, enterprise: str
) -> None:
    assert ledger.get_billing(enterprise) == EnterpriseBilling(enterprise_id=enterprise)


def test_the_default_plan_applies_to_enterprises_without_settings(
    backend: Backend, enterprise: str
) -> None:
    """JENNAH_DEFAULT_PLAN: the plan of an enterprise with nothing stored; admission
    bounds formations by it; stored settings win."""
    pro = backend.reopen(default_plan=Plan.PRO)
    assert pro.get_billing(enterprise).plan is Plan.PRO
    admitted = pro.admit(enterprise, "fu_default", NOW)
    assert admitted.plan is Plan.PRO and admitted.input_token_cap == 16_384
    pro.settle(enterprise, "fu_default", None)
    pro.put_billing(EnterpriseBilling(enterprise_id=enterprise, plan=Plan.TEAM))
    assert pro.get_billing(enterprise).plan is Plan.TEAM
    with pytest.raises(InvalidArgument, match="trial"):
        backend.reopen(default_plan=Plan.TRIAL)


def test_settings_round_trip_and_stay_in_their_enterprise(
    ledger: UsageLedger, enterprise: str
) -> None:
    trial = EnterpriseBilling(
        enterprise_id=enterprise,
        plan=Plan.TRIAL,
        billable=False,
        overage_multiple=4.5,
        trial_started_at=datetime(2026, 11, 20, 8, 0, 0, 123456, tzinfo=UTC),
        trial_ends_at=datetime(2026, 12, 4, 8, 0, tzinfo=UTC),
    )
    ledger.put_billing(trial)
    assert ledger.get_billing(enterprise) == trial
    other = f"ent-{uuid.uuid4().hex}"
    assert ledger.get_billing(other).plan is Plan.FREE


def test_setting_the_multiple_keeps_the_other_settings(
    ledger: UsageLedger, enterprise: str
) -> None:
    set_plan(ledger, enterprise, Plan.SCALE, billable=True)
    changed = ledger.set_overage_multiple(enterprise, 7.5)
    assert changed.plan is Plan.SCALE and changed.billable and changed.overage_multiple == 7.5
    assert ledger.get_billing(enterprise) == changed


def test_an_invalid_multiple_is_not_stored(ledger: UsageLedger, enterprise: str) -> None:
    with pytest.raises(InvalidArgument, match="overageMultiple"):
        ledger.set_overage_multiple(enterprise, 10.5)
    with pytest.raises(InvalidArgument, match="overageMultiple"):
        ledger.put_billing(EnterpriseBilling(enterprise_id=enterprise, overage_multiple=0.25))
    assert ledger.get_billing(enterprise).overage_multiple == 2


# -- admission and settlement ------------------------------------------------------


def test_formations_are_admitted_until_the_allowance_then_refused_with_its_terms(
    ledger: UsageLedger, enterprise: str
) -> None:
    set_plan(ledger, enterprise, Plan.PRO)
    spend_units(ledger, enterprise, 549)
    admission = ledger.admit(enterprise, "f-last", NOW)
    assert admission.reserved.units == 1
    # a formation started below the allowance completes and consumes all of its units
    put(ledger, record(enterprise, NOW, output_tokens=20_000, units=3))
    ledger.settle(enterprise, "f-last", None)
    with pytest.raises(ResourceExhausted) as caught:
        ledger.admit(enterprise, "f-next", NOW)
    error = caught.value
    assert error.reason == ALLOWANCE_REASON
    assert "550 formation units per month" in error.message
    assert "552 units were used this month" in error.message
    assert "resets monthly" in error.message
    assert ledger.snapshot(enterprise, NOW).in_progress == Consumption()


def test_with_overage_formations_run_to_the_limit(ledger: UsageLedger, enterprise: str) -> None:
    set_plan(ledger, enterprise, Plan.PRO, billable=True)
    spend_units(ledger, enterprise, 1_541)
    assert ledger.admit(enterprise, "f-1", NOW).in_overage
    ledger.settle(enterprise, "f-1", record(enterprise, NOW, units=1, output_tokens=10))
    with pytest.raises(ResourceExhausted) as caught:
        ledger.admit(enterprise, "f-2", NOW)
    assert caught.value.reason == OVERAGE_LIMIT_REASON
    assert "refused from 1,542 formation units" in caught.value.message
    assert "1,542 units were used this month" in caught.value.message


def test_a_change_of_multiple_applies_to_the_next_formation(
    ledger: UsageLedger, enterprise: str
) -> None:
    set_plan(ledger, enterprise, Plan.PRO, billable=True)
    spend_units(ledger, enterprise, 1_300)
    ledger.set_overage_multiple(enterprise, 1)  # limit 1,046: below what is used
    with pytest.raises(ResourceExhausted) as caught:
        ledger.admit(enterprise, "f-1", NOW)
    assert caught.value.reason == OVERAGE_LIMIT_REASON
    ledger.set_overage_multiple(enterprise, 3)  # limit 2,038: admits straight away
    ledger.admit(enterprise, "f-1", NOW)
    ledger.set_overage_multiple(enterprise, 0)
    with pytest.raises(ResourceExhausted) as caught:
        ledger.admit(enterprise, "f-2", NOW)
    assert caught.value.reason == ALLOWANCE_REASON


def test_free_counts_output_tokens_and_bounds_calls_by_what_is_left(
    ledger: UsageLedger, enterprise: str
) -> None:
    put(ledger, record(enterprise, NOW - timedelta(hours=2), output_tokens=44_000))
    put(ledger, record(enterprise, NOW - timedelta(days=1), output_tokens=40_000))  # yesterday
    admission = ledger.admit(enterprise, "f-1", NOW)
    assert admission.max_output_tokens == 6_000
    assert ledger.snapshot(enterprise, NOW).in_progress.output_tokens == 6_000
    ledger.settle(enterprise, "f-1", record(enterprise, NOW, output_tokens=6_100))
    with pytest.raises(ResourceExhausted) as caught:
        ledger.admit(enterprise, "f-2", NOW)
    assert "50,100 output tokens" in caught.value.message
    assert "resets daily" in caught.value.message


def test_the_trial_allowance_does_not_reset_before_the_trial_ends(
    ledger: UsageLedger, enterprise: str
) -> None:
    started, ends = NOW - timedelta(days=20), NOW + timedelta(days=10)
    set_plan(ledger, enterprise, Plan.TRIAL, trial_started_at=started, trial_ends_at=ends)
    spend_units(ledger, enterprise, 120, at=started + timedelta(hours=1))  # another month
    spend_units(ledger, enterprise, 80, at=NOW - timedelta(hours=1))
    with pytest.raises(ResourceExhausted) as caught:
        ledger.admit(enterprise, "f-1", NOW)
    assert caught.value.reason == ALLOWANCE_REASON
    assert "200 formation units for the trial" in caught.value.message
    assert "200 units were used during the trial" in caught.value.message
    assert "does not reset before the trial ends (2026-12-09T16:20:30Z)" in caught.value.message
    assert caught.value.metadata["resets"] == "NOT_BEFORE_TRIAL_ENDS"


def test_another_enterprises_usage_and_reservations_do_not_count(
    ledger: UsageLedger, enterprise: str
) -> None:
    other = f"ent-{uuid.uuid4().hex}"
    for each in (enterprise, other):
        set_plan(ledger, each, Plan.PRO)
    spend_units(ledger, other, 500)
    for i in range(MAX_FORMATIONS_IN_PROGRESS):
        ledger.admit(other, f"f-{i}", NOW)
    ledger.admit(enterprise, "f-1", NOW)
    assert ledger.snapshot(enterprise, NOW).used == Consumption()
    assert ledger.snapshot(enterprise, NOW).in_progress.formations == 1


def test_formations_in_progress_are_bounded_and_refused_with_a_retry_delay(
    ledger: UsageLedger, enterprise: str
) -> None:
    set_plan(ledger, enterprise, Plan.TEAM)
    for i in range(MAX_FORMATIONS_IN_PROGRESS):
        ledger.admit(enterprise, f"f-{i}", NOW)
    with pytest.raises(ResourceExhausted) as caught:
        ledger.admit(enterprise, "f-over", NOW)
    assert caught.value.reason == IN_PROGRESS_REASON
    assert caught.value.metadata["retryDelay"] == "5s"
    assert ledger.snapshot(enterprise, NOW).in_progress.formations == MAX_FORMATIONS_IN_PROGRESS
    ledger.settle(enterprise, "f-0", None)
    ledger.admit(enterprise, "f-over", NOW)


def test_a_reservation_never_settled_stops_counting_after_its_lifetime(
    ledger: UsageLedger, enterprise: str
) -> None:
    set_plan(ledger, enterprise, Plan.PRO)
    spend_units(ledger, enterprise, 549)
    ledger.admit(enterprise, "f-lost", NOW)  # its process died
    with pytest.raises(ResourceExhausted):
        ledger.admit(enterprise, "f-2", NOW + RESERVATION_LIFETIME - timedelta(seconds=1))
    later = NOW + RESERVATION_LIFETIME
    ledger.admit(enterprise, "f-2", later)
    assert ledger.snapshot(enterprise, later).in_progress.formations == 1


def test_settling_twice_records_once(ledger: UsageLedger, enterprise: str) -> None:
    ledger.admit(enterprise, "f-1", NOW)
    spent = record(enterprise, NOW).model_copy(update={"formation_id": "f-1"})
    assert ledger.settle(enterprise, "f-1", spent)
    assert not ledger.settle(enterprise, "f-1", spent)
    assert ledger.snapshot(enterprise, NOW).used == Consumption(
        formations=1, units=1, output_tokens=500
    )


def test_the_records_of_a_formations_attempts_are_read_back(
    ledger: UsageLedger, enterprise: str
) -> None:
    first = record(enterprise, NOW, input_tokens=20_000, output_tokens=100, units=2)
    first = first.model_copy(update={"formation_id": "fu_a", "formation_key": "k"})
    third = record(enterprise, NOW + timedelta(minutes=3)).model_copy(
        update={"formation_id": "fu_a.3"}
    )
    other = record(enterprise, NOW).model_copy(update={"formation_id": "fu_b"})
    elsewhere = record(f"{enterprise}-other", NOW).model_copy(update={"formation_id": "fu_a.2"})
    put(ledger, first, third, other, elsewhere)
    found = ledger.recorded(enterprise, ["fu_a", "fu_a.2", "fu_a.3", "fu_a"])
    assert sorted(found, key=lambda r: r.formation_id) == [first, third]
    assert ledger.recorded(enterprise, []) == []
    assert ledger.recorded(enterprise, ["fu_never"]) == []


def test_each_attempt_is_admitted_again_and_recorded_under_its_own_id(
    ledger: UsageLedger, enterprise: str
) -> None:
    set_plan(ledger, enterprise, Plan.PRO)
    root = Caller(enterprise_id=enterprise, principal="user:root")
    admitted = billing_service.admit_formation(ledger, root, NOW)
    first = FormationUsage(model_calls=1, input_tokens=20_000, output_tokens=10, model="m")

    def settle(attempt: billing_service.AdmittedFormation, usage: FormationUsage) -> None:
        billing_service.settle_formation(
            ledger, attempt, scope_id="bot", caller=root, usage=usage,
            formation_key="k", now=NOW,
        )  # fmt: skip

    settle(admitted, first)  # attempt 1 reached the model, then failed transiently
    second = billing_service.admit_attempt(ledger, admitted, 2, NOW)
    assert second.formation_id == f"{admitted.formation_id}.2"
    assert ledger.snapshot(enterprise, NOW).in_progress.formations == 1
    assert billing_service.spent_before(ledger, admitted, 2) == Spent(
        units=2, input_tokens=20_000, output_tokens=10
    )
    settle(second, FormationUsage(model_calls=1, input_tokens=5, output_tokens=5, model="m"))
    assert billing_service.spent_before(ledger, admitted, 3) == Spent(
        units=3, input_tokens=20_005, output_tokens=15
    )
    assert ledger.snapshot(enterprise, NOW).used == Consumption(
        formations=2, units=3, output_tokens=15
    )
    # attempt 3 crashes holding its reservation: attempt 4 releases it when admitted
    crashed = billing_service.admit_attempt(ledger, admitted, 3, NOW)
    fourth = billing_service.admit_attempt(ledger, admitted, 4, NOW)
    assert ledger.snapshot(enterprise, NOW).in_progress.formations == 1  # only attempt 4's
    billing_service.release(ledger, admitted, 4)
    assert ledger.snapshot(enterprise, NOW).in_progress == Consumption()
    assert (crashed.formation_id, fourth.formation_id) == (
        f"{admitted.formation_id}.3", f"{admitted.formation_id}.4",
    )  # fmt: skip


def test_a_retried_attempt_past_the_allowance_is_refused(
    ledger: UsageLedger, enterprise: str
) -> None:
    set_plan(ledger, enterprise, Plan.PRO)
    spend_units(ledger, enterprise, 549)
    root = Caller(enterprise_id=enterprise, principal="user:root")
    admitted = billing_service.admit_formation(ledger, root, NOW)
    billing_service.settle_formation(
        ledger, admitted, scope_id="bot", caller=root,
        usage=FormationUsage(model_calls=1, model="m"), formation_key=None, now=NOW,
    )  # fmt: skip
    with pytest.raises(ResourceExhausted) as refused:
        billing_service.admit_attempt(ledger, admitted, 2, NOW)
    assert refused.value.reason == ALLOWANCE_REASON
    assert ledger.snapshot(enterprise, NOW).in_progress == Consumption()


def test_replay_and_refusals_record_nothing(
    ledger: UsageLedger, enterprise: str, reader: Reader
) -> None:
    set_plan(ledger, enterprise, Plan.PRO)
    admitted = billing_service.admit_formation(ledger, reader.root, NOW)
    settled = billing_service.settle_formation(
        ledger,
        admitted,
        scope_id="bot",
        caller=reader.root,
        usage=FormationUsage(),  # a replay: no model call
        formation_key="k",
        now=NOW,
    )
    assert settled is None
    assert ledger.snapshot(enterprise, NOW).used == Consumption()
    assert ledger.snapshot(enterprise, NOW).in_progress == Consumption()
    assert reader.tokens(ledger) == []


def test_the_units_table_and_an_abandoned_formation(
    ledger: UsageLedger, enterprise: str, reader: Reader
) -> None:
    set_plan(ledger, enterprise, Plan.PRO)
    for input_tokens, output_tokens in ((2_700, 1_700), (2_680, 16_222), (16_552, 70_000), (0, 0)):
        admitted = billing_service.admit_formation(ledger, reader.root, NOW)
        billing_service.settle_formation(
            ledger,
            admitted,
            scope_id="bot",
            caller=reader.root,
            usage=FormationUsage(
                model_calls=1,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                model=MODELS[0],
                region=REGIONS[0],
            ),
            formation_key=None,
            now=NOW - timedelta(minutes=1),
        )
    # the abandoned formation counts 1 unit toward the allowance ...
    assert ledger.snapshot(enterprise, NOW).used.units == 1 + 2 + 9 + 1
    # ... but has no tokens to report, so it does not appear in the token report
    (bucket,) = reader.tokens(ledger, start_time=NOW - timedelta(hours=1), per=Per.MONTH)
    assert (bucket.input_tokens, bucket.output_tokens, bucket.units) == (21_932, 87_922, 12)


# -- racing for the last unit ---------------------------------------------------


def test_formations_racing_for_the_last_unit_admit_one(backend: Backend, enterprise: str) -> None:
    set_plan(backend.ledger, enterprise, Plan.PRO)
    spend_units(backend.ledger, enterprise, 549)
    racers = 6
    ledgers = [backend.reopen() for _ in range(racers)]  # separate connections / clients
    barrier = threading.Barrier(racers, timeout=60)

    def race(index: int) -> str:
        barrier.wait()
        try:
            ledgers[index].admit(enterprise, f"racer-{index}", NOW)
            return "admitted"
        except ResourceExhausted as exc:
            return exc.reason or ""

    with ThreadPoolExecutor(racers) as pool:
        outcomes = list(pool.map(race, range(racers)))
    assert outcomes.count("admitted") == 1, outcomes
    assert set(outcomes) == {"admitted", IN_PROGRESS_REASON}
    assert backend.ledger.snapshot(enterprise, NOW).in_progress.formations == 1


# -- reports -------------------------------------------------------------------


def test_days_in_a_time_zone_across_dst(
    ledger: UsageLedger, enterprise: str, reader: Reader
) -> None:
    ny = ZoneInfo("America/New_York")

    def local(*parts: int) -> datetime:
        return datetime(*parts, tzinfo=ny).astimezone(UTC)  # type: ignore[misc]

    spent = [
        record(enterprise, local(2026, 3, 7, 23, 59), output_tokens=1),
        record(enterprise, local(2026, 3, 8, 0, 1), output_tokens=2),
        record(enterprise, local(2026, 3, 8, 23, 59), output_tokens=4),  # a 23-hour day
        record(enterprise, local(2026, 3, 9, 0, 0), output_tokens=8),
        record(enterprise, local(2026, 11, 1, 0, 30), output_tokens=16),
        record(enterprise, local(2026, 11, 1, 23, 30), output_tokens=32),  # a 25-hour day
    ]
    put(ledger, *spent)
    start = local(2026, 3, 7, 0, 0)
    got = reader.tokens(ledger, start_time=start, per=Per.DAY, time_zone="America/New_York")
    assert [(b.start, b.end - b.start, b.output_tokens) for b in got] == [
        (local(2026, 3, 7), timedelta(hours=24), 1),
        (local(2026, 3, 8), timedelta(hours=23), 6),
        (local(2026, 3, 9), timedelta(hours=24), 8),
        (local(2026, 11, 1), timedelta(hours=25), 48),
    ]
    assert rows(got) == expected(spent, start, NOW, Per.DAY, "America/New_York")


def test_iso_weeks_start_on_monday_in_the_time_zone(
    ledger: UsageLedger, enterprise: str, reader: Reader
) -> None:
    tokyo = ZoneInfo("Asia/Tokyo")
    sunday_night = datetime(2026, 6, 14, 23, 30, tzinfo=tokyo).astimezone(UTC)
    monday_morning = datetime(2026, 6, 15, 0, 30, tzinfo=tokyo).astimezone(UTC)
    put(
        ledger,
        record(enterprise, sunday_night, output_tokens=100),
        record(enterprise, monday_morning, output_tokens=200),
    )
    got = reader.tokens(
        ledger, start_time=datetime(2026, 6, 1, tzinfo=UTC), per=Per.WEEK, time_zone="Asia/Tokyo"
    )
    assert [b.output_tokens for b in got] == [100, 200]
    assert got[1].start == datetime(2026, 6, 15, tzinfo=tokyo).astimezone(UTC)
    assert got[1].start.astimezone(tokyo).weekday() == 0


def test_months_in_a_time_zone(ledger: UsageLedger, enterprise: str, reader: Reader) -> None:
    # 2026-01-31T15:30Z is already February in Tokyo
    put(
        ledger,
        record(enterprise, datetime(2026, 1, 31, 14, 30, tzinfo=UTC), output_tokens=1),
        record(enterprise, datetime(2026, 1, 31, 15, 30, tzinfo=UTC), output_tokens=2),
    )
    start = datetime(2026, 1, 1, tzinfo=UTC)
    utc_months = reader.tokens(ledger, start_time=start, per=Per.MONTH)
    tokyo_months = reader.tokens(ledger, start_time=start, per=Per.MONTH, time_zone="Asia/Tokyo")
    assert [b.output_tokens for b in utc_months] == [3]
    assert [b.output_tokens for b in tokyo_months] == [1, 2]


def test_grouping_and_filtering(ledger: UsageLedger, enterprise: str, reader: Reader) -> None:
    day = datetime(2026, 11, 20, 10, tzinfo=UTC)
    spent = [
        record(enterprise, day, scope="a", caller="user:ana", model=MODELS[0], region=REGIONS[0]),
        record(enterprise, day, scope="b", caller="api_key:k1", model=MODELS[1], region=REGIONS[0]),
        record(enterprise, day, scope="b", caller="user:ana", model=MODELS[1], region=REGIONS[1],
               output_tokens=9_000),
    ]  # fmt: skip
    put(ledger, *spent)
    start = datetime(2026, 11, 15, tzinfo=UTC)
    for by in [None, *UsageDimension]:
        got = reader.tokens(ledger, start_time=start, per=Per.WEEK, group_by=by)
        assert rows(got) == expected(spent, start, NOW, Per.WEEK, "UTC", by), by
    narrowed = UsageFilters(scope="b", caller="user:ana")
    got = reader.tokens(ledger, start_time=start, group_by=UsageDimension.MODEL, filters=narrowed)
    assert [(b.key, b.output_tokens, b.units) for b in got] == [(MODELS[1], 9_000, 2)]
    assert rows(got) == expected(spent, start, NOW, Per.DAY, "UTC", UsageDimension.MODEL, narrowed)


def generated(enterprise: str, count: int, start: datetime, days: int) -> list[UsageRecord]:
    rng = random.Random(7)
    spent = []
    for _ in range(count):
        at = start + timedelta(seconds=rng.randrange(days * 86_400))
        output = rng.choice([0, 0, 700, 1_900, 12_000, 20_000]) if rng.random() < 0.95 else 0
        spent.append(
            record(
                enterprise,
                at,
                scope=rng.choice(["a", "b", "c"]),
                caller=rng.choice(["user:ana", "api_key:k1"]),
                model=rng.choice(MODELS),
                region=rng.choice(REGIONS),
                input_tokens=rng.choice([0, 2_000, 17_000]) if output else 0,
                output_tokens=output,
            )
        )
    return spent


QUERIES = [
    (Per.DAY, "UTC", None, UsageFilters()),
    (Per.DAY, "Asia/Kolkata", UsageDimension.SCOPE, UsageFilters()),
    (Per.DAY, "Asia/Kathmandu", None, UsageFilters(model=MODELS[1])),
    (Per.WEEK, "America/New_York", UsageDimension.CALLER, UsageFilters()),
    (Per.MONTH, "Asia/Tokyo", UsageDimension.MODEL, UsageFilters(region=REGIONS[0])),
    (Per.DAY, "Europe/London", UsageDimension.REGION, UsageFilters(scope="b")),
]


def answers(reader: Reader, ledger: UsageLedger, start: datetime) -> list[list[tuple[Any, ...]]]:
    return [
        rows(reader.tokens(ledger, start_time=start, per=per, time_zone=tz, group_by=by,
                           filters=filters))
        for per, tz, by, filters in QUERIES
    ]  # fmt: skip


def test_the_answer_is_identical_with_and_without_rollups(
    backend: Backend, enterprise: str, reader: Reader
) -> None:
    ledger = backend.ledger
    first = datetime(2026, 10, 24, tzinfo=UTC)  # New York and London leave DST in here
    spent = generated(enterprise, 400, first, days=20)
    put(ledger, *spent)
    start = first + timedelta(hours=3, minutes=7)  # partial hours at the range's start
    without = answers(reader, ledger, start)
    assert without == [
        expected(spent, start, NOW, per, tz, by, filters) for per, tz, by, filters in QUERIES
    ]
    # a watermark inside an hour: that hour is part aggregate, part rows
    mid_hour = first + timedelta(days=9, hours=5, minutes=41, seconds=13)
    result = rollup(ledger, mid_hour)
    assert result.watermark == mid_hour - timedelta(minutes=5)
    assert 0 < result.rows_folded < len(spent)
    assert answers(reader, ledger, start) == without
    # run twice, then concurrently from two connections: each row is folded once
    assert rollup(ledger, mid_hour).rows_folded == 0
    others = [backend.reopen(), backend.reopen()]
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda ledger: rollup(ledger, NOW), others))
    assert answers(reader, ledger, start) == without


def test_a_formation_settled_below_the_watermark_is_recorded_at_it(
    ledger: UsageLedger, enterprise: str, reader: Reader
) -> None:
    hour = datetime(2026, 11, 10, 12, tzinfo=UTC)
    put(ledger, record(enterprise, hour + timedelta(minutes=10), output_tokens=1))
    watermark = rollup(ledger, hour + timedelta(hours=2)).watermark
    late = record(enterprise, hour + timedelta(minutes=20), output_tokens=2)
    put(ledger, late)
    got = reader.tokens(ledger, start_time=hour - timedelta(days=1), per=Per.MONTH)
    assert [b.output_tokens for b in got] == [3]
    hours = reader.tokens(ledger, start_time=hour, end_time=hour + timedelta(hours=3))
    assert [b.output_tokens for b in hours] == [3]
    at_watermark = reader.tokens(
        ledger, start_time=watermark, end_time=watermark + timedelta(seconds=1)
    )
    assert [b.output_tokens for b in at_watermark] == [2]


# -- the reach rule ----------------------------------------------------------------


def test_by_scope_needs_reach_over_every_scope_never_a_partial_answer(
    ledger: UsageLedger, enterprise: str, reader: Reader
) -> None:
    day = datetime(2026, 11, 20, tzinfo=UTC)
    put(ledger, record(enterprise, day, scope="bot.a"), record(enterprise, day, scope="crm"))
    partial = Caller(enterprise_id=enterprise, principal="user:ops")
    reader.identity.put_user(User(enterprise_id=enterprise, principal=partial.principal))
    reader.identity.put_binding(
        RoleBinding(
            enterprise_id=enterprise,
            principal=partial.principal,
            role=Role.ADMINISTRATOR,
            agent_selectors=["*"],  # every agent workspace, but no subject scope
        )
    )
    for query in ({"group_by": UsageDimension.SCOPE}, {"filters": UsageFilters(scope="bot.a")}):
        with pytest.raises(PermissionDenied) as caught:
            reader.tokens(ledger, partial, **query)
        assert caught.value.reason == "USAGE_SCOPE_REACH"
    # grouping by anything else needs billing.usage:read alone
    assert len(reader.tokens(ledger, partial, group_by=UsageDimension.MODEL)) == 1
    by_scope = reader.tokens(ledger, group_by=UsageDimension.SCOPE, per=Per.MONTH)
    total = reader.tokens(ledger, per=Per.MONTH)
    assert [b.key for b in by_scope] == ["bot.a", "crm"]
    assert sum(b.units for b in by_scope) == total[0].units


def test_reading_usage_needs_billing_usage_read(
    ledger: UsageLedger, enterprise: str, reader: Reader
) -> None:
    member = Caller(enterprise_id=enterprise, principal="user:member")
    reader.identity.put_user(User(enterprise_id=enterprise, principal=member.principal))
    reader.identity.put_binding(
        RoleBinding(
            enterprise_id=enterprise,
            principal=member.principal,
            role=Role.MEMBER,
            agent_selectors=["*"],
            subject_selectors=["*"],
        )
    )
    with pytest.raises(PermissionDenied) as caught:
        reader.tokens(ledger, member)
    assert caught.value.metadata["permission"] == "billing.usage:read"


# -- usage outlives the scope it was spent on -----------------------------------------


def test_usage_outlives_a_destroyed_scope(
    backend: Backend, enterprise: str, reader: Reader
) -> None:
    scope = ScopeRef(enterprise_id=enterprise, scope_id="bot.gone")
    commit_items(backend.store, scope, chunks=[ChunkInput(text="Ada prefers tea.")])
    day = datetime(2026, 11, 20, tzinfo=UTC)
    put(backend.ledger, record(enterprise, day, scope="bot.gone", output_tokens=321))
    # no usage table is keyed by (enterprise_id, scope_id), so destroy never reaches it
    assert not {"usage_records", "usage_hours", "usage_days"} & set(
        row_counts(backend.store, scope)
    )
    assert backend.store.destroy_scope(scope) > 0
    assert backend.store.get_scope(scope) is None
    got = reader.tokens(backend.ledger, group_by=UsageDimension.SCOPE)
    assert [(b.key, b.output_tokens) for b in got] == [("bot.gone", 321)]
    assert backend.ledger.snapshot(enterprise, day).used.output_tokens == 321


@pytest.mark.spanner
def test_spanner_a_fold_over_too_many_groups_narrows_its_window(tmp_path: Path) -> None:
    from jennah.adapters.spanner.ledger import SpannerUsageLedger
    from tests.support.spanner_emulator import create_database, session_emulator

    database = create_database(session_emulator().host)
    try:
        ledger = SpannerUsageLedger(database, timeout_seconds=60, max_groups_per_fold=4)
        enterprise = f"ent-{uuid.uuid4().hex}"
        first = datetime(2026, 11, 2, tzinfo=UTC)
        spent = generated(enterprise, 60, first, days=2)
        put(ledger, *spent)
        reader = Reader(tmp_path, enterprise)
        start = first + timedelta(minutes=1)
        without = answers(reader, ledger, start)
        step = ledger.fold(NOW, timedelta(days=1))
        assert 0 < step.rows_folded < 20  # one transaction: at most 4 groups
        assert step.watermark < first + timedelta(days=1)
        result = rollup(ledger, NOW)
        assert result.rows_folded + step.rows_folded == sum(1 for r in spent if r.reported_tokens)
        assert answers(reader, ledger, start) == without
        reader.identity.close()
    finally:
        database.drop()
