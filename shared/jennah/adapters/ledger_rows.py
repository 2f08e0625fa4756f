"""The ledger row (`usage_records`) as both SQL ledger adapters write it: one column
list and one value order, so the SQLite and Spanner adapters cannot drift apart."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from jennah.domain.billing import UsageRecord

# The columns of a ledger row (`usage_records`), in the order `record_values` gives them.
RECORD_COLUMNS: tuple[str, ...] = (
    "enterprise_id", "recorded_at", "formation_id", "spent_in_scope", "caller", "model",
    "region", "input_tokens", "output_tokens", "units", "formation_key",
)  # fmt: skip


def record_values(record: UsageRecord, recorded_at: object) -> tuple[object, ...]:
    """A ledger row's values in RECORD_COLUMNS order; `recorded_at` as the adapter stores
    it (the record's own time, or the rollup watermark when that is later)."""
    return (
        record.enterprise_id, recorded_at, record.formation_id, record.spent_in_scope,
        record.caller, record.model, record.region, record.input_tokens,
        record.output_tokens, record.units, record.formation_key,
    )  # fmt: skip


def record_of(values: Sequence[object], recorded_at: datetime) -> UsageRecord:
    """The record of a ledger row read in RECORD_COLUMNS order (`recorded_at` converted)."""
    row = dict(zip(RECORD_COLUMNS, values, strict=True))
    return UsageRecord.model_validate({**row, "recorded_at": recorded_at})
