"""The usage ledger of the embedded default: its own tables in the memory store's file.

Tables, created idempotently on open (none has a `scope_id` column: usage is
keyed by enterprise and outlives the scopes it was spent on, so destroying a
scope never touches it):
- `usage_records`: one row per formation that reached the model, keyed by
  (enterprise_id, recorded_at, formation_id); a formation is recorded once
  (unique (enterprise_id, formation_id));
- `usage_hours`: the per-hour aggregates `fold` writes (reported rows only), at
  each grouping of `ROLLUP_GROUPINGS` (`grouped_by`; dimensions not kept are '');
- `usage_days`: each enterprise's usage per UTC day, which admission counts;
- `formation_reservations`: formations admitted and not yet settled;
- `billing_settings`: plan, billable, overage multiple, trial dates (control data);
- `usage_rollup_state`: the rollup watermark.

Timestamps are INTEGER microseconds since the Unix epoch (UTC). Writes go
through one connection under a lock, each in a BEGIN IMMEDIATE transaction, so
admissions are serialized across threads and processes; reads use pooled
connections, each in one read transaction (a consistent WAL snapshot).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jennah.adapters.ledger_rows import RECORD_COLUMNS, record_of, record_values
from jennah.adapters.sqlite.codec import from_micros, required_datetime, required_micros
from jennah.adapters.sqlite.connection import ControlFile
from jennah.domain import billing
from jennah.domain.billing import (
    Admission,
    Consumption,
    EnterpriseBilling,
    Plan,
    UsageDimension,
    UsageRecord,
)
from jennah.ports.ledger import (
    ROLLUP_GROUPINGS,
    USAGE_RETENTION,
    BillingSnapshot,
    RollupStep,
    SpanTotals,
    UsageFilters,
    UsageSpan,
    grouping_for,
    grouping_kept,
)

if TYPE_CHECKING:
    from sqlite3 import Connection, Row

_TABLES = """
CREATE TABLE IF NOT EXISTS usage_records (
  enterprise_id TEXT NOT NULL,
  recorded_at INTEGER NOT NULL,
  formation_id TEXT NOT NULL,
  spent_in_scope TEXT NOT NULL,
  caller TEXT NOT NULL,
  model TEXT NOT NULL,
  region TEXT NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  units INTEGER NOT NULL,
  formation_key TEXT,
  PRIMARY KEY (enterprise_id, recorded_at, formation_id)
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS usage_records_by_formation
  ON usage_records (enterprise_id, formation_id);
CREATE INDEX IF NOT EXISTS usage_records_by_time ON usage_records (recorded_at);

CREATE TABLE IF NOT EXISTS usage_hours (
  enterprise_id TEXT NOT NULL,
  grouped_by TEXT NOT NULL,
  hour INTEGER NOT NULL,
  spent_in_scope TEXT NOT NULL,
  caller TEXT NOT NULL,
  model TEXT NOT NULL,
  region TEXT NOT NULL,
  formations INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  units INTEGER NOT NULL,
  PRIMARY KEY (enterprise_id, grouped_by, hour, spent_in_scope, caller, model, region)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS usage_days (
  enterprise_id TEXT NOT NULL,
  day INTEGER NOT NULL,
  formations INTEGER NOT NULL,
  units INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  PRIMARY KEY (enterprise_id, day)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS formation_reservations (
  enterprise_id TEXT NOT NULL,
  formation_id TEXT NOT NULL,
  reserved_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  units INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  PRIMARY KEY (enterprise_id, formation_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS billing_settings (
  enterprise_id TEXT NOT NULL PRIMARY KEY,
  plan TEXT NOT NULL,
  billable INTEGER NOT NULL,
  overage_multiple REAL NOT NULL,
  trial_started_at INTEGER,
  trial_ends_at INTEGER
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS usage_rollup_state (
  name TEXT NOT NULL PRIMARY KEY,
  watermark INTEGER NOT NULL
) WITHOUT ROWID
"""

HOUR_US = 3_600_000_000
_ROLLUP = "hourly"
_REPORTED = "(input_tokens > 0 OR output_tokens > 0)"
_COLUMNS: dict[UsageDimension, str] = {
    UsageDimension.SCOPE: "spent_in_scope",
    UsageDimension.CALLER: "caller",
    UsageDimension.MODEL: "model",
    UsageDimension.REGION: "region",
}


class SqliteUsageLedger:
    """UsageLedger on a SQLite file (its tables created if missing)."""

    def __init__(self, path: str | Path, *, default_plan: Plan = Plan.FREE) -> None:
        """`default_plan`: the plan of an enterprise with no settings stored."""
        self._default_plan = billing.check_default_plan(default_plan)
        self.path = Path(path)
        self._file = ControlFile(self.path, "usage ledger", _TABLES)

    def close(self) -> None:
        self._file.close()

    # billing settings

    def get_billing(self, enterprise_id: str) -> EnterpriseBilling:
        with self._file.snapshot() as conn:
            return _billing(conn, enterprise_id, self._default_plan)

    def put_billing(self, settings: EnterpriseBilling) -> None:
        billing.check_billing(settings)
        with self._file.transaction() as conn:
            _put_billing(conn, settings)

    def set_overage_multiple(self, enterprise_id: str, multiple: float) -> EnterpriseBilling:
        multiple = billing.check_overage_multiple(multiple)
        with self._file.transaction() as conn:
            settings = _billing(conn, enterprise_id, self._default_plan).model_copy(
                update={"overage_multiple": multiple}
            )
            _put_billing(conn, settings)
        return settings

    # admission and settlement

    def admit(self, enterprise_id: str, formation_id: str, at: datetime) -> Admission:
        at_us = required_micros(at)
        with self._file.transaction() as conn:
            conn.execute(
                "DELETE FROM formation_reservations WHERE enterprise_id = ? AND expires_at <= ?",
                (enterprise_id, at_us),
            )
            settings = _billing(conn, enterprise_id, self._default_plan)
            period = billing.allowance_period(settings, at)
            used = _used(conn, enterprise_id, period.start, period.end)
            in_progress = _in_progress(conn, enterprise_id, at_us, formation_id)
            admission = billing.admit(settings, used, in_progress, at)
            _reserve(conn, enterprise_id, formation_id, at, admission)
        return admission

    def settle(self, enterprise_id: str, formation_id: str, record: UsageRecord | None) -> bool:
        with self._file.transaction() as conn:
            conn.execute(
                "DELETE FROM formation_reservations WHERE enterprise_id = ? AND formation_id = ?",
                (enterprise_id, formation_id),
            )
            return record is not None and _record(conn, record, _watermark(conn))

    def recorded(self, enterprise_id: str, formation_ids: Sequence[str]) -> list[UsageRecord]:
        ids = sorted(set(formation_ids))
        if not ids:
            return []
        with self._file.snapshot() as conn:
            rows = conn.execute(
                f"SELECT {', '.join(RECORD_COLUMNS)} FROM usage_records WHERE enterprise_id = ? "
                f"AND formation_id IN ({', '.join('?' * len(ids))})",
                (enterprise_id, *ids),
            ).fetchall()
        return [record_of(tuple(row), required_datetime(row["recorded_at"])) for row in rows]

    def record_many(self, records: Sequence[UsageRecord]) -> int:
        """Add records straight to the ledger in one transaction (no reservations):
        for loading and benchmarks. Returns how many were new."""
        with self._file.transaction() as conn:
            watermark = _watermark(conn)
            return sum(_record(conn, record, watermark) for record in records)

    def snapshot(self, enterprise_id: str, at: datetime) -> BillingSnapshot:
        with self._file.snapshot() as conn:
            settings = _billing(conn, enterprise_id, self._default_plan)
            period = billing.allowance_period(settings, at)
            return BillingSnapshot(
                billing=settings,
                period=period,
                used=_used(conn, enterprise_id, period.start, period.end),
                in_progress=_in_progress(conn, enterprise_id, required_micros(at), None),
            )

    # reports

    def usage_totals(
        self,
        enterprise_id: str,
        spans: Sequence[UsageSpan],
        group_by: UsageDimension | None,
        filters: UsageFilters,
    ) -> list[SpanTotals]:
        if not spans:
            return []
        _check_hourly(spans)
        key = _COLUMNS[group_by] if group_by is not None else "NULL"
        where, params = _filters(filters)
        params |= {
            "enterprise_id": enterprise_id,
            "spans": _spans_json(spans),
            "grouped_by": grouping_for(group_by, filters),
        }
        with self._file.snapshot() as conn:
            params["watermark"] = _watermark(conn)
            rows = conn.execute(_totals_sql(key, where), params).fetchall()
        return [
            SpanTotals(
                span=row[0],
                key=row[1],
                formations=row[2],
                input_tokens=row[3],
                output_tokens=row[4],
                units=row[5],
            )
            for row in rows
        ]

    def fold(self, until: datetime, window: timedelta) -> RollupStep:
        until_us = required_micros(until)
        with self._file.transaction() as conn:
            start = _watermark(conn)
            if start >= until_us:
                return RollupStep(watermark=required_datetime(start), rows_folded=0)
            first = conn.execute(
                "SELECT MIN(recorded_at) FROM usage_records WHERE recorded_at >= ?", (start,)
            ).fetchone()[0]
            end = until_us if first is None else min(until_us, first + _micros(window))
            folded = _fold(conn, start, end)
            if end == until_us:  # the rollup's last step
                _forget(conn, until_us - _micros(USAGE_RETENTION))
            conn.execute(
                "INSERT INTO usage_rollup_state (name, watermark) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET watermark = excluded.watermark",
                (_ROLLUP, end),
            )
        return RollupStep(watermark=required_datetime(end), rows_folded=folded)


def _micros(delta: timedelta) -> int:
    return delta // timedelta(microseconds=1)


def _billing(conn: Connection, enterprise_id: str, default_plan: Plan) -> EnterpriseBilling:
    row: Row | None = conn.execute(
        "SELECT plan, billable, overage_multiple, trial_started_at, trial_ends_at "
        "FROM billing_settings WHERE enterprise_id = ?",
        (enterprise_id,),
    ).fetchone()
    if row is None:
        return EnterpriseBilling(enterprise_id=enterprise_id, plan=default_plan)
    return EnterpriseBilling(
        enterprise_id=enterprise_id,
        plan=Plan(row["plan"]),
        billable=bool(row["billable"]),
        overage_multiple=row["overage_multiple"],
        trial_started_at=from_micros(row["trial_started_at"]),
        trial_ends_at=from_micros(row["trial_ends_at"]),
    )


def _reserve(
    conn: Connection, enterprise_id: str, formation_id: str, at: datetime, admission: Admission
) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO formation_reservations (enterprise_id, formation_id, "
        "reserved_at, expires_at, units, output_tokens) VALUES (?, ?, ?, ?, ?, ?)",
        (
            enterprise_id,
            formation_id,
            required_micros(at),
            required_micros(at + billing.RESERVATION_LIFETIME),
            admission.reserved.units,
            admission.reserved.output_tokens,
        ),
    )


def _put_billing(conn: Connection, settings: EnterpriseBilling) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO billing_settings (enterprise_id, plan, billable, "
        "overage_multiple, trial_started_at, trial_ends_at) VALUES (?, ?, ?, ?, ?, ?)",
        (
            settings.enterprise_id,
            settings.plan.value,
            int(settings.billable),
            settings.overage_multiple,
            _optional_micros(settings.trial_started_at),
            _optional_micros(settings.trial_ends_at),
        ),
    )


def _optional_micros(value: datetime | None) -> int | None:
    return None if value is None else required_micros(value)


def _used(conn: Connection, enterprise_id: str, start: datetime, end: datetime) -> Consumption:
    row = conn.execute(
        "SELECT COALESCE(SUM(formations), 0), COALESCE(SUM(units), 0), "
        "COALESCE(SUM(output_tokens), 0) FROM usage_days "
        "WHERE enterprise_id = ? AND day >= ? AND day < ?",
        (enterprise_id, required_micros(start), required_micros(end)),
    ).fetchone()
    return Consumption(formations=row[0], units=row[1], output_tokens=row[2])


def _in_progress(
    conn: Connection, enterprise_id: str, at_us: int, excluding: str | None
) -> Consumption:
    row = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(units), 0), COALESCE(SUM(output_tokens), 0) "
        "FROM formation_reservations WHERE enterprise_id = ? AND expires_at > ? "
        "AND formation_id IS NOT ?",
        (enterprise_id, at_us, excluding),
    ).fetchone()
    return Consumption(formations=row[0], units=row[1], output_tokens=row[2])


def _watermark(conn: Connection) -> int:
    row = conn.execute(
        "SELECT watermark FROM usage_rollup_state WHERE name = ?", (_ROLLUP,)
    ).fetchone()
    return 0 if row is None else int(row[0])


def _record(conn: Connection, record: UsageRecord, watermark: int) -> bool:
    """Insert the record (at the watermark if it is older) and add it to its day."""
    recorded_at = max(required_micros(record.recorded_at), watermark)
    inserted = conn.execute(
        f"INSERT OR IGNORE INTO usage_records ({', '.join(RECORD_COLUMNS)}) "
        f"VALUES ({', '.join('?' * len(RECORD_COLUMNS))})",
        record_values(record, recorded_at),
    ).rowcount
    if not inserted:
        return False
    day = required_micros(billing.utc_day(required_datetime(recorded_at)))
    conn.execute(
        "INSERT INTO usage_days (enterprise_id, day, formations, units, input_tokens, "
        "output_tokens) VALUES (?, ?, 1, ?, ?, ?) ON CONFLICT (enterprise_id, day) DO UPDATE "
        "SET formations = formations + 1, units = units + excluded.units, "
        "input_tokens = input_tokens + excluded.input_tokens, "
        "output_tokens = output_tokens + excluded.output_tokens",
        (record.enterprise_id, day, record.units, record.input_tokens, record.output_tokens),
    )
    return True


def _fold(conn: Connection, start: int, end: int) -> int:
    """Add the reported rows recorded in [start, end) to their hours, at every grouping;
    how many rows that was."""
    conn.execute("DROP TABLE IF EXISTS temp.usage_fold")
    conn.execute(
        "CREATE TEMP TABLE usage_fold AS "
        f"SELECT enterprise_id, recorded_at - recorded_at % {HOUR_US} AS hour, spent_in_scope, "
        "caller, model, region, COUNT(*) AS formations, SUM(input_tokens) AS input_tokens, "
        "SUM(output_tokens) AS output_tokens, SUM(units) AS units FROM usage_records "
        f"WHERE recorded_at >= ? AND recorded_at < ? AND {_REPORTED} GROUP BY 1, 2, 3, 4, 5, 6",
        (start, end),
    )
    for grouping in ROLLUP_GROUPINGS:
        kept = grouping_kept(grouping)
        dims = ", ".join(
            column if dimension in kept else "''" for dimension, column in _COLUMNS.items()
        )
        conn.execute(
            "INSERT INTO usage_hours (enterprise_id, grouped_by, hour, spent_in_scope, caller, "
            "model, region, formations, input_tokens, output_tokens, units) "
            f"SELECT enterprise_id, ?, hour, {dims}, SUM(formations), SUM(input_tokens), "
            "SUM(output_tokens), SUM(units) FROM temp.usage_fold WHERE true "
            "GROUP BY 1, 2, 3, 4, 5, 6, 7 "
            "ON CONFLICT (enterprise_id, grouped_by, hour, spent_in_scope, caller, model, region) "
            "DO UPDATE SET formations = formations + excluded.formations, "
            "input_tokens = input_tokens + excluded.input_tokens, "
            "output_tokens = output_tokens + excluded.output_tokens, "
            "units = units + excluded.units",
            (grouping,),
        )
    (rows,) = conn.execute("SELECT COALESCE(SUM(formations), 0) FROM temp.usage_fold").fetchone()
    conn.execute("DROP TABLE temp.usage_fold")
    return int(rows)


def _forget(conn: Connection, before: int) -> None:
    """Delete usage past its retention (Spanner's row deletion policy does it there)."""
    conn.execute("DELETE FROM usage_records WHERE recorded_at < ?", (before,))
    conn.execute("DELETE FROM usage_hours WHERE hour < ?", (before,))
    conn.execute("DELETE FROM usage_days WHERE day < ?", (before,))


def _check_hourly(spans: Sequence[UsageSpan]) -> None:
    for span in spans:
        if span.hourly and (
            required_micros(span.start) % HOUR_US or required_micros(span.end) % HOUR_US
        ):
            raise ValueError(f"an hourly span must start and end on whole hours: {span}")


def _spans_json(spans: Sequence[UsageSpan]) -> str:
    return json.dumps(
        [[required_micros(s.start), required_micros(s.end), int(s.hourly)] for s in spans]
    )


def _filters(filters: UsageFilters) -> tuple[str, dict[str, Any]]:
    conditions, params = [], {}
    for dimension, column in _COLUMNS.items():
        value = filters.value(dimension)
        if value is not None:
            conditions.append(f" AND {column} = :{column}")
            params[column] = value
    return "".join(conditions), params


def _totals_sql(key: str, where: str) -> str:
    """Aggregates of the hourly spans' whole hours, plus rows at or above the watermark
    in hourly spans, plus every row of the other spans; summed per span and key.

    `spans` is the outer loop of each join (CROSS JOIN keeps SQLite from reordering),
    so each span is one range scan of a primary key."""
    sums = "SUM(formations), SUM(input_tokens), SUM(output_tokens), SUM(units)"
    return f"""
WITH spans(idx, s, e, hourly) AS MATERIALIZED (
  SELECT CAST(key AS INTEGER), value ->> 0, value ->> 1, value ->> 2 FROM json_each(:spans)
),
parts(idx, k, formations, input_tokens, output_tokens, units) AS (
  SELECT spans.idx, {key}, {sums}
  FROM spans CROSS JOIN usage_hours
  WHERE spans.hourly AND enterprise_id = :enterprise_id AND grouped_by = :grouped_by
    AND hour >= spans.s AND hour < spans.e{where}
  GROUP BY 1, 2
  UNION ALL
  SELECT spans.idx, {key}, COUNT(*), SUM(input_tokens), SUM(output_tokens), SUM(units)
  FROM spans CROSS JOIN usage_records
  WHERE enterprise_id = :enterprise_id
    AND recorded_at >= CASE WHEN spans.hourly THEN MAX(spans.s, :watermark) ELSE spans.s END
    AND recorded_at < spans.e AND {_REPORTED}{where}
  GROUP BY 1, 2
)
SELECT idx, k, {sums} FROM parts GROUP BY idx, k
"""
