"""The usage ledger on Cloud Spanner: the usage and billing tables of `schema.sql`.

Writes go through `Database.run_in_transaction` with transaction functions
that only read and buffer mutations (Spanner may run them several times);
the clock is read by the caller, never inside. Admission reads the settings,
the period's daily usage and the enterprise's reservations, and writes its
reservation, in one read-write transaction: Spanner's serializable
transactions keep two admissions from both taking the last unit (one aborts
and reruns, seeing the other's reservation). Settlement reads the rollup
watermark in its transaction, so a rollup and a settlement are serialized
too: a row is either folded or above the watermark, never both.

Every call is bounded like the memory store's (see `jennah.adapters.spanner.store`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from google.cloud.spanner_v1 import COMMIT_TIMESTAMP, KeySet, param_types

from jennah.adapters.ledger_rows import RECORD_COLUMNS, record_of, record_values
from jennah.adapters.spanner.calls import CallBound, bounded, utc
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
    BillingSnapshot,
    RollupStep,
    SpanTotals,
    UsageFilters,
    UsageSpan,
    grouping_for,
    grouping_kept,
)

_T = TypeVar("_T")
_ROLLUP = "hourly"
_REPORTED = "(input_tokens > 0 OR output_tokens > 0)"
# Spanner refuses a commit of more than 80,000 mutations; an aggregate row
# written counts one per column (11), and each (scope, caller, model, region)
# group of an hour is written at up to 6 groupings. A fold reading more groups
# than this narrows its window until it fits (6 x 1,000 x 11 = 66,000).
MAX_GROUPS_PER_FOLD = 1_000
_BILLING_COLUMNS = (
    "enterprise_id", "plan", "billable", "overage_multiple", "trial_started_at",
    "trial_ends_at", "updated_at",
)  # fmt: skip
_DAY_COLUMNS = ("enterprise_id", "day", "formations", "units", "input_tokens", "output_tokens")
_HOUR_KEY = (
    "enterprise_id", "grouped_by", "hour", "spent_in_scope", "caller", "model", "region",
)  # fmt: skip
_HOUR_SUMS = ("formations", "input_tokens", "output_tokens", "units")
_RESERVATION_COLUMNS = (
    "enterprise_id", "formation_id", "reserved_at", "expires_at", "units", "output_tokens",
)  # fmt: skip
_COLUMNS: dict[UsageDimension, str] = {
    UsageDimension.SCOPE: "spent_in_scope",
    UsageDimension.CALLER: "caller",
    UsageDimension.MODEL: "model",
    UsageDimension.REGION: "region",
}
_TIMESTAMPS = param_types.Array(param_types.TIMESTAMP)  # type: ignore[no-untyped-call]
_BOOLS = param_types.Array(param_types.BOOL)  # type: ignore[no-untyped-call]
_STRINGS = param_types.Array(param_types.STRING)  # type: ignore[no-untyped-call]


class SpannerUsageLedger:
    """UsageLedger on a Cloud Spanner database created from `schema.sql`."""

    def __init__(
        self,
        database: Any,
        *,
        timeout_seconds: float = 30.0,
        max_groups_per_fold: int = MAX_GROUPS_PER_FOLD,
        default_plan: Plan = Plan.FREE,
    ) -> None:
        """`default_plan`: the plan of an enterprise with no settings stored."""
        self._database = database
        self._default_plan = billing.check_default_plan(default_plan)
        self._timeout = timeout_seconds
        self._max_groups = max_groups_per_fold
        self._bound = CallBound.of(timeout_seconds)

    # billing settings

    def get_billing(self, enterprise_id: str) -> EnterpriseBilling:
        return self._read_only("read billing settings", lambda r: r.billing(enterprise_id))

    def put_billing(self, settings: EnterpriseBilling) -> None:
        billing.check_billing(settings)
        self._write("write billing settings", lambda txn: _put_billing(txn, settings))

    def set_overage_multiple(self, enterprise_id: str, multiple: float) -> EnterpriseBilling:
        multiple = billing.check_overage_multiple(multiple)

        def change(txn: Any) -> EnterpriseBilling:
            current = _Reader(txn, self._bound, self._default_plan).billing(enterprise_id)
            settings = current.model_copy(update={"overage_multiple": multiple})
            _put_billing(txn, settings)
            return settings

        return self._write("set the overage multiple", change)

    # admission and settlement

    def admit(self, enterprise_id: str, formation_id: str, at: datetime) -> Admission:
        def decide(txn: Any) -> Admission:
            reader = _Reader(txn, self._bound, self._default_plan)
            expired = reader.expired_reservations(enterprise_id, at)
            if expired:
                txn.delete("formation_reservations", KeySet(keys=expired))  # type: ignore[no-untyped-call]
            settings = reader.billing(enterprise_id)
            period = billing.allowance_period(settings, at)
            used = reader.used(enterprise_id, period.start, period.end)
            in_progress = reader.in_progress(enterprise_id, at, formation_id)
            admission = billing.admit(settings, used, in_progress, at)
            _reserve(txn, enterprise_id, formation_id, at, admission)
            return admission

        return self._write("admit a formation", decide)

    def settle(self, enterprise_id: str, formation_id: str, record: UsageRecord | None) -> bool:
        def settle(txn: Any) -> bool:
            keys = KeySet(keys=[[enterprise_id, formation_id]])  # type: ignore[no-untyped-call]
            txn.delete("formation_reservations", keys)
            if record is None:
                return False
            return _record(txn, _Reader(txn, self._bound, self._default_plan), record)

        return self._write("settle a formation", settle)

    def recorded(self, enterprise_id: str, formation_ids: Sequence[str]) -> list[UsageRecord]:
        ids = sorted(set(formation_ids))
        if not ids:
            return []
        return self._read_only(
            "read a formation's usage", lambda reader: reader.records(enterprise_id, ids)
        )

    def snapshot(self, enterprise_id: str, at: datetime) -> BillingSnapshot:
        def read(reader: _Reader) -> BillingSnapshot:
            settings = reader.billing(enterprise_id)
            period = billing.allowance_period(settings, at)
            return BillingSnapshot(
                billing=settings,
                period=period,
                used=reader.used(enterprise_id, period.start, period.end),
                in_progress=reader.in_progress(enterprise_id, at, None),
            )

        return self._read_only("read the billing state", read)

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

        def read(reader: _Reader) -> list[SpanTotals]:
            query = _Query()
            query.bind("enterprise_id", enterprise_id, param_types.STRING)
            query.bind("starts", [s.start for s in spans], _TIMESTAMPS)
            query.bind("ends", [s.end for s in spans], _TIMESTAMPS)
            query.bind("hourly", [s.hourly for s in spans], _BOOLS)
            query.bind("watermark", reader.watermark(), param_types.TIMESTAMP)
            query.bind("grouped_by", grouping_for(group_by, filters), param_types.STRING)
            where = _filters(query, filters)
            key = _COLUMNS[group_by] if group_by is not None else "CAST(NULL AS STRING)"
            rows = reader.execute(query, _totals_sql(key, where))
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

        return self._read_only("read usage totals", read)

    def fold(self, until: datetime, window: timedelta) -> RollupStep:
        folder = _Folder(until, window, self._bound, self._max_groups)
        return self._write("roll usage up", folder.fold)

    # plumbing

    def _write(self, what: str, function: Callable[[Any], _T]) -> _T:
        def run() -> _T:
            result: _T = self._database.run_in_transaction(function, timeout_secs=self._timeout)
            return result

        return self._bounded(what, run)

    def _read_only(self, what: str, function: Callable[[_Reader], _T]) -> _T:
        def read() -> _T:
            with self._database.snapshot(multi_use=True) as snapshot:
                return function(_Reader(snapshot, self._bound, self._default_plan))

        return self._bounded(what, read)

    def _bounded(self, what: str, call: Callable[[], _T]) -> _T:
        """Run one Spanner call within the time bound, its errors mapped to ours."""
        return bounded(what, call, self._timeout)


@dataclass
class _Query:
    params: dict[str, Any] = field(default_factory=dict)
    types: dict[str, Any] = field(default_factory=dict)

    def bind(self, name: str, value: Any, type_: Any) -> str:
        self.params[name] = value
        self.types[name] = type_
        return "@" + name


class _Reader:
    """Reads through a transaction or a multi-use snapshot."""

    def __init__(self, reader: Any, bound: CallBound, default_plan: Plan) -> None:
        self._reader = reader
        self._bound = bound
        self._default_plan = default_plan

    def execute(self, query: _Query, sql: str) -> list[list[Any]]:
        rows = self._reader.execute_sql(
            sql, params=query.params, param_types=query.types, **self._bound.kwargs
        )
        return [list(row) for row in rows]

    def read(self, table: str, columns: Sequence[str], keys: Sequence[Sequence[Any]]) -> list[Any]:
        keyset = KeySet(keys=[list(k) for k in keys])  # type: ignore[no-untyped-call]
        return list(self._reader.read(table, columns, keyset, **self._bound.kwargs))

    def billing(self, enterprise_id: str) -> EnterpriseBilling:
        rows = self.read("billing_settings", _BILLING_COLUMNS[:-1], [[enterprise_id]])
        if not rows:
            return EnterpriseBilling(enterprise_id=enterprise_id, plan=self._default_plan)
        _, plan, billable, multiple, started, ends = rows[0]
        return EnterpriseBilling(
            enterprise_id=enterprise_id,
            plan=Plan(plan),
            billable=billable,
            overage_multiple=multiple,
            trial_started_at=None if started is None else utc(started),
            trial_ends_at=None if ends is None else utc(ends),
        )

    def used(self, enterprise_id: str, start: datetime, end: datetime) -> Consumption:
        query = _Query()
        sql = (
            "SELECT COUNT(*), SUM(formations), SUM(units), SUM(output_tokens) FROM usage_days "
            f"WHERE enterprise_id = {query.bind('e', enterprise_id, param_types.STRING)} "
            f"AND day >= {query.bind('start', start, param_types.TIMESTAMP)} "
            f"AND day < {query.bind('end', end, param_types.TIMESTAMP)}"
        )
        ((days, formations, units, tokens),) = self.execute(query, sql)
        if not days:
            return Consumption()
        return Consumption(formations=formations, units=units, output_tokens=tokens)

    def in_progress(self, enterprise_id: str, at: datetime, excluding: str | None) -> Consumption:
        query = _Query()
        sql = (
            "SELECT COUNT(*), SUM(units), SUM(output_tokens) FROM formation_reservations "
            f"WHERE enterprise_id = {query.bind('e', enterprise_id, param_types.STRING)} "
            f"AND expires_at > {query.bind('at', at, param_types.TIMESTAMP)} "
            f"AND formation_id != {query.bind('own', excluding or '', param_types.STRING)}"
        )
        ((count, units, tokens),) = self.execute(query, sql)
        return Consumption(formations=count, units=units or 0, output_tokens=tokens or 0)

    def expired_reservations(self, enterprise_id: str, at: datetime) -> list[list[str]]:
        query = _Query()
        sql = (
            "SELECT enterprise_id, formation_id FROM formation_reservations "
            f"WHERE enterprise_id = {query.bind('e', enterprise_id, param_types.STRING)} "
            f"AND expires_at <= {query.bind('at', at, param_types.TIMESTAMP)}"
        )
        return self.execute(query, sql)

    def watermark(self) -> datetime:
        rows = self.read("usage_rollup_state", ["watermark"], [[_ROLLUP]])
        return utc(rows[0][0]) if rows else _EPOCH

    def records(self, enterprise_id: str, formation_ids: Sequence[str]) -> list[UsageRecord]:
        query = _Query()
        sql = (
            f"SELECT {', '.join(RECORD_COLUMNS)} "
            "FROM usage_records@{FORCE_INDEX=usage_records_by_formation} "
            f"WHERE enterprise_id = {query.bind('e', enterprise_id, param_types.STRING)} "
            f"AND formation_id IN UNNEST({query.bind('ids', list(formation_ids), _STRINGS)})"
        )
        at = RECORD_COLUMNS.index("recorded_at")
        return [record_of(row, utc(row[at])) for row in self.execute(query, sql)]

    def recorded(self, enterprise_id: str, formation_id: str) -> bool:
        keyset = KeySet(keys=[[enterprise_id, formation_id]])  # type: ignore[no-untyped-call]
        rows = self._reader.read(
            "usage_records",
            ["formation_id"],
            keyset,
            index="usage_records_by_formation",
            **self._bound.kwargs,
        )
        return bool(list(rows))


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _reserve(
    txn: Any, enterprise_id: str, formation_id: str, at: datetime, admission: Admission
) -> None:
    row = [
        enterprise_id,
        formation_id,
        at,
        at + billing.RESERVATION_LIFETIME,
        admission.reserved.units,
        admission.reserved.output_tokens,
    ]
    txn.insert_or_update("formation_reservations", _RESERVATION_COLUMNS, [row])


def _put_billing(txn: Any, settings: EnterpriseBilling) -> None:
    txn.insert_or_update(
        "billing_settings",
        _BILLING_COLUMNS,
        [
            [
                settings.enterprise_id,
                settings.plan.value,
                settings.billable,
                settings.overage_multiple,
                settings.trial_started_at,
                settings.trial_ends_at,
                COMMIT_TIMESTAMP,
            ]
        ],
    )


def _record(txn: Any, reader: _Reader, record: UsageRecord) -> bool:
    """Insert the record (at the watermark if it is older) and add it to its day."""
    if reader.recorded(record.enterprise_id, record.formation_id):
        return False
    recorded_at = max(utc(record.recorded_at), reader.watermark())
    txn.insert(
        "usage_records",
        RECORD_COLUMNS,
        [list(record_values(record, recorded_at))],
    )
    day = billing.utc_day(recorded_at)
    rows = reader.read("usage_days", _DAY_COLUMNS[2:], [[record.enterprise_id, day]])
    before = rows[0] if rows else [0, 0, 0, 0]
    added = [1, record.units, record.input_tokens, record.output_tokens]
    txn.insert_or_update(
        "usage_days",
        _DAY_COLUMNS,
        [[record.enterprise_id, day, *(a + b for a, b in zip(before, added, strict=True))]],
    )
    return True


class _Folder:
    """One fold transaction (see UsageLedger.fold); `fold` only reads and buffers."""

    def __init__(
        self, until: datetime, window: timedelta, bound: CallBound, max_groups: int
    ) -> None:
        self._until = utc(until)
        self._window = window
        self._bound = bound
        self._max_groups = max_groups

    def fold(self, txn: Any) -> RollupStep:
        reader = _Reader(txn, self._bound, Plan.FREE)  # reads no settings
        start = reader.watermark()
        if start >= self._until:
            return RollupStep(watermark=start, rows_folded=0)
        first = self._first_row(reader, start)
        end = self._until if first is None else min(self._until, first + self._window)
        groups = self._groups(reader, start, end)
        while len(groups) > self._max_groups and first is not None and end - first > _SECOND:
            end = first + (end - first) / 2
            groups = self._groups(reader, start, end)
        self._add(txn, reader, _at_every_grouping(groups))
        txn.insert_or_update("usage_rollup_state", ["name", "watermark"], [[_ROLLUP, end]])
        return RollupStep(watermark=end, rows_folded=sum(int(g[6]) for g in groups))

    def _first_row(self, reader: _Reader, start: datetime) -> datetime | None:
        query = _Query()
        sql = (
            "SELECT MIN(recorded_at) FROM usage_records@{FORCE_INDEX=usage_records_by_time} "
            f"WHERE recorded_at >= {query.bind('start', start, param_types.TIMESTAMP)}"
        )
        ((first,),) = reader.execute(query, sql)
        return None if first is None else utc(first)

    def _groups(self, reader: _Reader, start: datetime, end: datetime) -> list[list[Any]]:
        query = _Query()
        sql = (
            "SELECT enterprise_id, TIMESTAMP_TRUNC(recorded_at, HOUR, 'UTC'), spent_in_scope, "
            "caller, model, region, COUNT(*), SUM(input_tokens), SUM(output_tokens), SUM(units) "
            "FROM usage_records@{FORCE_INDEX=usage_records_by_time} "
            f"WHERE recorded_at >= {query.bind('start', start, param_types.TIMESTAMP)} "
            f"AND recorded_at < {query.bind('end', end, param_types.TIMESTAMP)} AND {_REPORTED} "
            "GROUP BY 1, 2, 3, 4, 5, 6"
        )
        return reader.execute(query, sql)

    def _add(self, txn: Any, reader: _Reader, sums: dict[tuple[Any, ...], list[int]]) -> None:
        if not sums:
            return
        existing = {
            (*row[:2], utc(row[2]), *row[3:7]): row[7:]
            for row in reader.read("usage_hours", (*_HOUR_KEY, *_HOUR_SUMS), list(sums))
        }
        rows = []
        for key, added in sums.items():
            before = existing.get(key, [0, 0, 0, 0])
            rows.append([*key, *(a + b for a, b in zip(before, added, strict=True))])
        txn.insert_or_update("usage_hours", (*_HOUR_KEY, *_HOUR_SUMS), rows)


def _at_every_grouping(groups: list[list[Any]]) -> dict[tuple[Any, ...], list[int]]:
    """Rows of (enterprise, hour, scope, caller, model, region, sums...) summed at every
    grouping of ROLLUP_GROUPINGS: aggregate key -> [formations, input, output, units]."""
    sums: dict[tuple[Any, ...], list[int]] = {}
    for enterprise_id, hour, *dimensions, formations, inputs, outputs, units in groups:
        for grouping in ROLLUP_GROUPINGS:
            kept = grouping_kept(grouping)
            values = [v if d in kept else "" for d, v in zip(_COLUMNS, dimensions, strict=True)]
            entry = sums.setdefault((enterprise_id, grouping, utc(hour), *values), [0, 0, 0, 0])
            for index, value in enumerate((formations, inputs, outputs, units)):
                entry[index] += int(value)
    return sums


_SECOND = timedelta(seconds=1)


def _check_hourly(spans: Sequence[UsageSpan]) -> None:
    for span in spans:
        if span.hourly and (_off_hour(span.start) or _off_hour(span.end)):
            raise ValueError(f"an hourly span must start and end on whole hours: {span}")


def _off_hour(at: datetime) -> bool:
    return bool((at - _EPOCH) % timedelta(hours=1))


def _filters(query: _Query, filters: UsageFilters) -> str:
    conditions = []
    for dimension, column in _COLUMNS.items():
        value = filters.value(dimension)
        if value is not None:
            conditions.append(f" AND {column} = {query.bind(column, value, param_types.STRING)}")
    return "".join(conditions)


def _totals_sql(key: str, where: str) -> str:
    """Aggregates of the hourly spans' whole hours, plus rows at or above the watermark
    in hourly spans, plus every row of the other spans; summed per span and key."""
    return f"""
WITH spans AS (
  SELECT idx, s, @ends[OFFSET(idx)] AS e, @hourly[OFFSET(idx)] AS hourly
  FROM UNNEST(@starts) AS s WITH OFFSET AS idx
),
parts AS (
  SELECT spans.idx AS idx, {key} AS k, SUM(formations) AS formations,
    SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens, SUM(units) AS units
  FROM spans JOIN usage_hours
    ON enterprise_id = @enterprise_id AND grouped_by = @grouped_by
    AND hour >= spans.s AND hour < spans.e
  WHERE spans.hourly{where}
  GROUP BY idx, k
  UNION ALL
  SELECT spans.idx, {key}, COUNT(*), SUM(input_tokens), SUM(output_tokens), SUM(units)
  FROM spans JOIN usage_records
    ON enterprise_id = @enterprise_id
    AND recorded_at >= IF(spans.hourly, GREATEST(spans.s, @watermark), spans.s)
    AND recorded_at < spans.e
  WHERE {_REPORTED}{where}
  GROUP BY 1, 2
)
SELECT idx, k, SUM(formations), SUM(input_tokens), SUM(output_tokens), SUM(units)
FROM parts GROUP BY idx, k
"""
