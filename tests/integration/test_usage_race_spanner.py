"""Admission raced for real on the Spanner emulator.

Formations race for the last unit of an allowance, each on its own thread and
its own client. The database wrapper holds every transaction's FIRST attempt
between its reads and its commit until all racers have read (or a barrier
timeout passes, when the emulator makes a racer wait or abort first), so each
racer decides on the same usage and Spanner itself must serialize the commits.
Exactly one may be admitted; the others are refused with nothing reserved.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest

from jennah.adapters.spanner.ledger import SpannerUsageLedger
from jennah.domain.billing import (
    ALLOWANCE_REASON,
    IN_PROGRESS_REASON,
    MAX_FORMATIONS_IN_PROGRESS,
    EnterpriseBilling,
    Plan,
    UsageRecord,
)
from jennah.errors import ResourceExhausted
from tests.support.spanner_emulator import (
    Emulator,
    create_database,
    session_emulator,
    start_emulator,
)

pytestmark = [pytest.mark.spanner]

NOW = datetime(2026, 11, 17, 10, 0, tzinfo=UTC)
RACERS = 6


class HeldAtCommit:
    """A Database whose transactions wait, on their first attempt, after their reads
    and writes are buffered and before Spanner commits them, for the other racers."""

    def __init__(self, database: Any, barrier: threading.Barrier) -> None:
        self._database = database
        self._barrier = barrier
        self._lock = threading.Lock()
        self.attempts = 0
        self.transactions = 0

    def run_in_transaction(self, fn: Callable[[Any], Any], **kwargs: Any) -> Any:
        first = [True]

        def held(txn: Any) -> Any:
            with self._lock:
                self.attempts += 1
            result = fn(txn)
            if first[0]:
                first[0] = False
                # a racer made to wait or abort before its reads finished breaks it
                with contextlib.suppress(threading.BrokenBarrierError):
                    self._barrier.wait()
            return result

        with self._lock:
            self.transactions += 1
        return self._database.run_in_transaction(held, **kwargs)

    def snapshot(self, **kwargs: Any) -> Any:
        return self._database.snapshot(**kwargs)


@pytest.fixture(scope="module")
def database() -> Iterator[Any]:
    database = create_database(session_emulator().host)
    yield database
    database.drop()


@pytest.fixture(scope="module")
def faulty_database() -> Iterator[Any]:
    emulator: Emulator = start_emulator("--enable_fault_injection")
    database = create_database(emulator.host)
    yield database
    emulator.stop()


def enterprise_with(database: Any, plan: Plan, units_used: int) -> str:
    enterprise = f"ent-{uuid.uuid4().hex}"
    ledger = SpannerUsageLedger(database, timeout_seconds=60)
    ledger.put_billing(EnterpriseBilling(enterprise_id=enterprise, plan=plan))
    if units_used:  # one record holding them all: what admission counts is units
        spent = UsageRecord(
            enterprise_id=enterprise,
            spent_in_scope="bot",
            caller="user:root",
            model="gemini-2.5-flash",
            region="us-central1",
            input_tokens=1_000,
            output_tokens=8_192,
            units=units_used,
            formation_id=f"fu_{uuid.uuid4().hex}",
            recorded_at=NOW,
        )
        ledger.settle(enterprise, spent.formation_id, spent)
    return enterprise


def race(database: Any, enterprise: str, racers: int) -> tuple[list[str], HeldAtCommit]:
    """Admit `racers` formations at once; each outcome is "admitted" or the refusal's reason."""
    held = HeldAtCommit(database, threading.Barrier(racers, timeout=2))
    ledgers = [SpannerUsageLedger(held, timeout_seconds=120) for _ in range(racers)]

    def admit(index: int) -> str:
        try:
            ledgers[index].admit(enterprise, f"racer-{index}", NOW)
            return "admitted"
        except ResourceExhausted as exc:
            return exc.reason or ""

    with ThreadPoolExecutor(racers) as pool:
        return list(pool.map(admit, range(racers))), held


def test_formations_racing_for_the_last_unit_admit_exactly_one(database: Any) -> None:
    enterprise = enterprise_with(database, Plan.PRO, 549)
    outcomes, held = race(database, enterprise, RACERS)
    assert outcomes.count("admitted") == 1, outcomes
    assert set(outcomes) == {"admitted", IN_PROGRESS_REASON}
    assert held.attempts > held.transactions  # they did conflict: Spanner reran the losers
    ledger = SpannerUsageLedger(database)
    assert ledger.snapshot(enterprise, NOW).in_progress.formations == 1


def test_the_admitted_formation_completes_and_usage_ends_slightly_above(database: Any) -> None:
    enterprise = enterprise_with(database, Plan.PRO, 549)
    outcomes, _ = race(database, enterprise, RACERS)
    winner = f"racer-{outcomes.index('admitted')}"
    ledger = SpannerUsageLedger(database)
    spent = UsageRecord(
        enterprise_id=enterprise,
        spent_in_scope="bot",
        caller="user:root",
        model="gemini-2.5-flash",
        region="us-central1",
        input_tokens=2_680,
        output_tokens=20_000,
        units=3,
        formation_id=winner,
        recorded_at=NOW,
    )
    assert ledger.settle(enterprise, winner, spent)
    assert ledger.snapshot(enterprise, NOW).used.units == 552  # 2 above the allowance
    with pytest.raises(ResourceExhausted) as caught:
        ledger.admit(enterprise, "after", NOW)
    assert caught.value.reason == ALLOWANCE_REASON
    assert "552 units were used this month" in caught.value.message


def test_racing_past_the_in_progress_bound_admits_exactly_the_bound(database: Any) -> None:
    enterprise = enterprise_with(database, Plan.TEAM, 0)
    racers = MAX_FORMATIONS_IN_PROGRESS + 3
    outcomes, _ = race(database, enterprise, racers)
    assert outcomes.count("admitted") == MAX_FORMATIONS_IN_PROGRESS, outcomes
    assert outcomes.count(IN_PROGRESS_REASON) == 3


@pytest.mark.slow
def test_aborted_commits_are_rerun_and_still_admit_exactly_one(faulty_database: Any) -> None:
    for _ in range(3):
        enterprise = enterprise_with(faulty_database, Plan.SCALE, 1_799)
        outcomes, _ = race(faulty_database, enterprise, 4)
        assert outcomes.count("admitted") == 1, outcomes
        ledger = SpannerUsageLedger(faulty_database, timeout_seconds=60)
        assert ledger.snapshot(enterprise, NOW).in_progress.formations == 1
