"""The operation store of the embedded default: a table in the memory store's file.

`formation_operations` holds one row per operation, keyed (enterprise_id,
operation_id), created idempotently on open and indexed by expire_time for
`sweep` and by creation for `list_newest`. Timestamps are INTEGER microseconds
since the Unix epoch (UTC); the error is a JSON object; request and receipt are
kept as given. An ordinary rowid table: rows carry requests of up to about 1 MiB,
which WITHOUT ROWID tables store poorly.

Each change reads the row and writes the transition (`jennah.domain.operations`)
in one BEGIN IMMEDIATE transaction, so concurrent claims, finishes and cancels
are serialized across threads (one writer connection under a lock) and across
processes (SQLite's write lock). Reads use pooled connections (WAL).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from jennah.adapters.sqlite.codec import from_micros, required_datetime, required_micros, to_micros
from jennah.adapters.sqlite.connection import ControlFile, IntegrityError
from jennah.domain.operations import (
    Claim,
    FormationOperation,
    OperationError,
    OperationState,
    after_cancel,
    after_claim,
    after_finish,
    after_release,
    check_outcome,
)
from jennah.errors import AlreadyExists

if TYPE_CHECKING:
    from sqlite3 import Connection, Row

_TABLE = """
CREATE TABLE IF NOT EXISTS formation_operations (
  enterprise_id TEXT NOT NULL,
  operation_id TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  caller TEXT NOT NULL,
  state TEXT NOT NULL,
  request_json TEXT NOT NULL,
  formation_id TEXT,
  formation_key TEXT,
  cancel_requested INTEGER NOT NULL,
  attempts INTEGER NOT NULL,
  lease_owner TEXT,
  lease_expires_at INTEGER,
  receipt_json TEXT,
  error TEXT CHECK (error IS NULL OR json_valid(error)),
  create_time INTEGER NOT NULL,
  update_time INTEGER NOT NULL,
  expire_time INTEGER NOT NULL,
  PRIMARY KEY (enterprise_id, operation_id)
);
CREATE INDEX IF NOT EXISTS formation_operations_by_expiry
  ON formation_operations (expire_time);
CREATE INDEX IF NOT EXISTS formation_operations_by_scope
  ON formation_operations (enterprise_id, scope_id);
CREATE INDEX IF NOT EXISTS formation_operations_by_creation
  ON formation_operations (enterprise_id, create_time DESC, operation_id DESC);
CREATE INDEX IF NOT EXISTS formation_operations_unfinished
  ON formation_operations (state, lease_expires_at) WHERE state IN ('QUEUED', 'RUNNING')
"""

_COLUMNS = (
    "enterprise_id, operation_id, scope_id, caller, state, request_json, formation_id, "
    "formation_key, cancel_requested, attempts, lease_owner, lease_expires_at, receipt_json, "
    "error, create_time, update_time, expire_time"
)
# What a transition may change; the rest is fixed when the operation is created.
_CHANGING = (
    "state",
    "cancel_requested",
    "attempts",
    "lease_owner",
    "lease_expires_at",
    "receipt_json",
    "error",
    "update_time",
)
_KEY = "WHERE enterprise_id = ? AND operation_id = ?"


class SqliteOperationStore:
    """OperationStore on a SQLite file (its table created if missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file = ControlFile(self.path, "operation store", _TABLE)

    def close(self) -> None:
        self._file.close()

    def create(self, operation: FormationOperation) -> None:
        placeholders = ", ".join("?" * len(_COLUMNS.split(", ")))
        try:
            with self._file.transaction() as conn:
                conn.execute(
                    f"INSERT INTO formation_operations ({_COLUMNS}) VALUES ({placeholders})",
                    _values(operation),
                )
        except IntegrityError as exc:
            raise AlreadyExists(
                f"operation {operation.operation_id!r} already exists",
                field="operationId",
            ) from exc

    def get(self, enterprise_id: str, operation_id: str) -> FormationOperation | None:
        with self._file.reader() as conn:
            return _read(conn, enterprise_id, operation_id)

    def claim(
        self, enterprise_id: str, operation_id: str, worker: str, now: datetime, lease: timedelta
    ) -> Claim:
        with self._file.transaction() as conn:
            operation = _read(conn, enterprise_id, operation_id)
            claim = after_claim(operation, worker, now, lease)
            _write(conn, operation, claim.operation)
        return claim

    def finish(
        self,
        enterprise_id: str,
        operation_id: str,
        now: datetime,
        *,
        receipt_json: str | None = None,
        error: OperationError | None = None,
    ) -> FormationOperation | None:
        check_outcome(receipt_json, error)
        with self._file.transaction() as conn:
            operation = _read(conn, enterprise_id, operation_id)
            if operation is None:
                return None
            finished = after_finish(operation, now, receipt_json, error)
            _write(conn, operation, finished)
        return finished

    def release(self, enterprise_id: str, operation_id: str, worker: str, now: datetime) -> None:
        with self._file.transaction() as conn:
            operation = _read(conn, enterprise_id, operation_id)
            if operation is not None:
                _write(conn, operation, after_release(operation, worker, now))

    def cancel(
        self, enterprise_id: str, operation_id: str, now: datetime
    ) -> FormationOperation | None:
        with self._file.transaction() as conn:
            operation = _read(conn, enterprise_id, operation_id)
            if operation is None:
                return None
            cancelled = after_cancel(operation, now)
            _write(conn, operation, cancelled)
        return cancelled

    def list_newest(
        self, enterprise_id: str, limit: int, before: tuple[datetime, str] | None = None
    ) -> list[FormationOperation]:
        page = ""
        params: tuple[object, ...] = (enterprise_id,)
        if before is not None:
            page = " AND (create_time, operation_id) < (?, ?)"
            params += (required_micros(before[0]), before[1])
        with self._file.reader() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM formation_operations WHERE enterprise_id = ?{page} "
                "ORDER BY create_time DESC, operation_id DESC LIMIT ?",
                (*params, limit),
            ).fetchall()
        return [_operation(row) for row in rows]

    def unfinished(self, now: datetime, limit: int = 500) -> list[FormationOperation]:
        at = required_micros(now)
        with self._file.reader() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM formation_operations WHERE state = 'QUEUED' "
                "OR (state = 'RUNNING' AND lease_expires_at <= ?) LIMIT ?",
                (at, limit),
            ).fetchall()
        return [_operation(row) for row in rows]

    def sweep(self, now: datetime, limit: int = 500) -> int:
        with self._file.transaction() as conn:
            deleted: int = conn.execute(
                "DELETE FROM formation_operations WHERE rowid IN ("
                "SELECT rowid FROM formation_operations WHERE expire_time <= ? LIMIT ?)",
                (required_micros(now), limit),
            ).rowcount
        return deleted

    def delete_scope(self, enterprise_id: str, scope_id: str) -> int:
        with self._file.transaction() as conn:
            deleted: int = conn.execute(
                "DELETE FROM formation_operations WHERE enterprise_id = ? AND scope_id = ?",
                (enterprise_id, scope_id),
            ).rowcount
        return deleted


def _read(conn: Connection, enterprise_id: str, operation_id: str) -> FormationOperation | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM formation_operations {_KEY}", (enterprise_id, operation_id)
    ).fetchone()
    return None if row is None else _operation(row)


def _write(
    conn: Connection, before: FormationOperation | None, after: FormationOperation | None
) -> None:
    """Store a transition's result, unless it changed nothing."""
    if after is None or after == before:
        return
    fields = _fields(after)
    conn.execute(
        f"UPDATE formation_operations SET {', '.join(f'{c} = ?' for c in _CHANGING)} {_KEY}",
        (*(fields[c] for c in _CHANGING), after.enterprise_id, after.operation_id),
    )


def _fields(operation: FormationOperation) -> dict[str, object]:
    return {
        "enterprise_id": operation.enterprise_id,
        "operation_id": operation.operation_id,
        "scope_id": operation.scope_id,
        "caller": operation.caller,
        "state": operation.state.value,
        "request_json": operation.request_json,
        "formation_id": operation.formation_id,
        "formation_key": operation.formation_key,
        "cancel_requested": int(operation.cancel_requested),
        "attempts": operation.attempts,
        "lease_owner": operation.lease_owner,
        "lease_expires_at": to_micros(operation.lease_expires_at),
        "receipt_json": operation.receipt_json,
        "error": None if operation.error is None else operation.error.model_dump_json(),
        "create_time": required_micros(operation.create_time),
        "update_time": required_micros(operation.update_time),
        "expire_time": required_micros(operation.expire_time),
    }


def _values(operation: FormationOperation) -> tuple[object, ...]:
    fields = _fields(operation)
    return tuple(fields[column] for column in _COLUMNS.split(", "))


def _operation(row: Row) -> FormationOperation:
    return FormationOperation(
        operation_id=row["operation_id"],
        enterprise_id=row["enterprise_id"],
        scope_id=row["scope_id"],
        caller=row["caller"],
        state=OperationState(row["state"]),
        request_json=row["request_json"],
        formation_id=row["formation_id"],
        formation_key=row["formation_key"],
        cancel_requested=bool(row["cancel_requested"]),
        attempts=row["attempts"],
        lease_owner=row["lease_owner"],
        lease_expires_at=from_micros(row["lease_expires_at"]),
        receipt_json=row["receipt_json"],
        error=None if row["error"] is None else OperationError.model_validate_json(row["error"]),
        create_time=required_datetime(row["create_time"]),
        update_time=required_datetime(row["update_time"]),
        expire_time=required_datetime(row["expire_time"]),
    )
