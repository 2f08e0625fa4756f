"""The usage ledger port: formation usage, allowance accounting and billing settings.

Two adapters implement it, SQLite (the embedded default, in the memory store's
file) and Cloud Spanner (production, in the memory store's database); one
contract suite (`tests/contract/test_usage_ledger_contract.py`) runs against both.
Every method is confined to one enterprise, except `rollup`, which folds the
whole ledger.

Usage is keyed by enterprise, never by scope: the scope a formation spent its
units in is plain data (`spent_in_scope`), so usage outlives the scopes it was
spent on. Billing settings are control data kept beside the ledger, so that
admission reads them in the same transaction as the usage it counts.

The ledger holds one row per formation that reached the model. A formation
abandoned before any call returned tokens has a row with zero tokens and 1
unit: it counts toward the allowance, and token reports leave it out. Rows are
folded into per-hour aggregates by `rollup`, up to a watermark: reports read
the aggregates below it and the rows at or above it, and answer identically
either way. A row recorded below the current watermark (its formation settled
after a rollup had folded that time) is recorded at the watermark instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from jennah.domain.billing import (
    Admission,
    Consumption,
    EnterpriseBilling,
    Period,
    UsageDimension,
    UsageRecord,
)

# How far behind `now` a rollup's watermark stays: a formation settles at the
# clock it read before its transaction, so a settle committing later than this
# after its clock read (or on a machine whose clock runs this far behind) is
# recorded at the watermark rather than at its own time.
ROLLUP_LAG = timedelta(minutes=5)
# How long usage is kept: the report reaches back 400 days; rows go a day later.
USAGE_RETENTION = timedelta(days=401)

# The groupings the per-hour aggregates are kept at: the enterprise's totals
# (""), each dimension alone, and all four together ("all"). A report reads the
# smallest grouping holding every dimension it groups or filters by, so the
# usual questions read one row per hour (or per hour and value) instead of one
# per (scope, caller, model, region) combination.
ALL_DIMENSIONS = "all"
ROLLUP_GROUPINGS: tuple[str, ...] = ("", *(d.value for d in UsageDimension), ALL_DIMENSIONS)


def grouping_kept(grouping: str) -> frozenset[UsageDimension]:
    """The dimensions an aggregate of `grouping` keeps (the others are stored as '')."""
    if grouping == ALL_DIMENSIONS:
        return frozenset(UsageDimension)
    return frozenset({UsageDimension(grouping)}) if grouping else frozenset()


class UsageSpan(BaseModel):
    """A stretch of time to total, [start, end). An `hourly` span starts and ends on
    whole UTC hours, so it may be answered from the per-hour aggregates; any other
    span is answered from the ledger's rows."""

    model_config = ConfigDict(frozen=True)

    start: datetime
    end: datetime
    hourly: bool


class UsageFilters(BaseModel):
    """Exact matches that narrow what is counted; None counts everything."""

    model_config = ConfigDict(frozen=True)

    scope: str | None = None
    caller: str | None = None
    model: str | None = None
    region: str | None = None

    def value(self, dimension: UsageDimension) -> str | None:
        values = {
            UsageDimension.SCOPE: self.scope,
            UsageDimension.CALLER: self.caller,
            UsageDimension.MODEL: self.model,
            UsageDimension.REGION: self.region,
        }
        return values[dimension]


def grouping_for(group_by: UsageDimension | None, filters: UsageFilters) -> str:
    """The smallest aggregate grouping that answers this grouping and these filters."""
    needed = {d for d in UsageDimension if filters.value(d) is not None}
    if group_by is not None:
        needed.add(group_by)
    if not needed:
        return ""
    return needed.pop().value if len(needed) == 1 else ALL_DIMENSIONS


class SpanTotals(BaseModel):
    """What formations that reported tokens spent in one span, for one group key
    (None when not grouped)."""

    span: int  # index into the spans asked for
    key: str | None
    formations: int
    input_tokens: int
    output_tokens: int
    units: int


class BillingSnapshot(BaseModel):
    """An enterprise's settings, its usage in the allowance period an instant falls
    in, and what its formations in progress have reserved."""

    billing: EnterpriseBilling
    period: Period
    used: Consumption
    in_progress: Consumption


class RollupStep(BaseModel):
    watermark: datetime  # every row recorded before it is folded into the aggregates
    rows_folded: int  # reported rows this step folded


class UsageLedger(Protocol):
    # billing settings

    def get_billing(self, enterprise_id: str) -> EnterpriseBilling:
        """The enterprise's settings; the defaults (Free, not billable, multiple 2)
        when none were stored."""
        ...

    def put_billing(self, billing: EnterpriseBilling) -> None:
        """Store the whole settings (checked first by `billing.check_billing`)."""
        ...

    def set_overage_multiple(self, enterprise_id: str, multiple: float) -> EnterpriseBilling:
        """Change only the multiple (checked first), in one atomic read-modify-write
        that keeps the other settings; the settings now stored."""
        ...

    # admission and settlement

    def admit(self, enterprise_id: str, formation_id: str, at: datetime) -> Admission:
        """Admit one formation in ONE transaction: read the settings, the period's
        usage and the live reservations, decide with `billing.admit` (which raises
        RESOURCE_EXHAUSTED, writing nothing), and store the formation's reservation
        (expiring `billing.RESERVATION_LIFETIME` after `at`). Concurrent admissions
        are serialized, so they cannot together pass a limit."""
        ...

    def settle(self, enterprise_id: str, formation_id: str, record: UsageRecord | None) -> bool:
        """In ONE transaction: release the formation's reservation and, when `record`
        is given, add it to the ledger and to its UTC day's usage. Idempotent: a
        formation already recorded is not recorded again (returns False)."""
        ...

    def recorded(self, enterprise_id: str, formation_ids: Sequence[str]) -> list[UsageRecord]:
        """The ledger rows of those of `formation_ids` that were recorded, in any order
        (the attempts of one formation: what they spent so far)."""
        ...

    def snapshot(self, enterprise_id: str, at: datetime) -> BillingSnapshot:
        """The settings, the allowance period containing `at`, the usage recorded in
        it, and the reservations live at `at`, read consistently."""
        ...

    # reports

    def usage_totals(
        self,
        enterprise_id: str,
        spans: Sequence[UsageSpan],
        group_by: UsageDimension | None,
        filters: UsageFilters,
    ) -> list[SpanTotals]:
        """Totals of the formations that reported tokens, per span and group key, in
        any order; spans and keys with nothing counted are absent. Read from one
        consistent snapshot; `hourly` spans must start and end on whole hours."""
        ...

    def fold(self, until: datetime, window: timedelta) -> RollupStep:
        """ONE transaction of the rollup: fold the rows recorded from the watermark up to
        the earlier of `until` and `window` past the first such row into per-hour
        aggregates (by enterprise, at every grouping of ROLLUP_GROUPINGS; rows that
        reported tokens only), and advance the watermark there. A watermark already at or past
        `until` is left as it is. Idempotent: concurrent folds are serialized, and
        each row is folded once (it is below the watermark afterwards)."""
        ...
