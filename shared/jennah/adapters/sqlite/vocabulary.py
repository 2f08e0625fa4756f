"""The vocabulary store of the embedded default: a table in the memory store's file.

`vocabularies` holds one row per declared level, keyed (enterprise_id,
scope_id), where scope_id '' is the enterprise level (no scope id is empty).
The declaration is a JSON document (`Vocabulary.model_dump_json`); an empty
declaration is a row with no classes, so it stays distinct from absence (no
row). `update_time` is INTEGER microseconds since the Unix epoch (UTC), from
the store's clock. The table is created idempotently on open.

Thread-safe: each write is one statement in a BEGIN IMMEDIATE transaction on
one connection under a lock; reads use pooled connections (WAL).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from jennah.adapters.sqlite.codec import from_micros, required_micros
from jennah.adapters.sqlite.connection import ControlFile
from jennah.domain.vocabulary import Declaration, Vocabulary

_TABLE = """
CREATE TABLE IF NOT EXISTS vocabularies (
  enterprise_id TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  vocabulary TEXT NOT NULL CHECK (json_valid(vocabulary)),
  update_time INTEGER NOT NULL,
  PRIMARY KEY (enterprise_id, scope_id)
) WITHOUT ROWID
"""

ENTERPRISE_LEVEL = ""


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _level(scope_id: str | None) -> str:
    """The row key of a level; a scope id is never empty, so '' is free for the enterprise."""
    if scope_id == ENTERPRISE_LEVEL:
        raise ValueError("a scope id is never empty; pass None for the enterprise level")
    return ENTERPRISE_LEVEL if scope_id is None else scope_id


class SqliteVocabularyStore:
    """VocabularyStore on a SQLite file (its table created if missing)."""

    def __init__(self, path: str | Path, *, clock: Callable[[], datetime] = _utc_now) -> None:
        self.path = Path(path)
        self._clock = clock
        self._file = ControlFile(self.path, "vocabulary store", _TABLE)

    def close(self) -> None:
        self._file.close()

    def get(self, enterprise_id: str, scope_id: str | None) -> Declaration | None:
        with self._file.reader() as conn:
            row = conn.execute(
                "SELECT vocabulary, update_time FROM vocabularies "
                "WHERE enterprise_id = ? AND scope_id = ?",
                (enterprise_id, _level(scope_id)),
            ).fetchone()
        if row is None:
            return None
        return Declaration(
            vocabulary=Vocabulary.model_validate_json(row["vocabulary"]),
            update_time=from_micros(row["update_time"]),
        )

    def put(self, enterprise_id: str, scope_id: str | None, vocabulary: Vocabulary) -> Declaration:
        level = _level(scope_id)
        stamp = self._clock().astimezone(UTC)
        with self._file.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO vocabularies "
                "(enterprise_id, scope_id, vocabulary, update_time) VALUES (?, ?, ?, ?)",
                (
                    enterprise_id,
                    level,
                    vocabulary.model_dump_json(),
                    required_micros(stamp),
                ),
            )
        return Declaration(vocabulary=vocabulary, update_time=stamp)

    def delete(self, enterprise_id: str, scope_id: str | None) -> bool:
        with self._file.transaction() as conn:
            deleted = conn.execute(
                "DELETE FROM vocabularies WHERE enterprise_id = ? AND scope_id = ?",
                (enterprise_id, _level(scope_id)),
            ).rowcount
        return bool(deleted)

    def delete_scope(self, enterprise_id: str, scope_id: str) -> None:
        self.delete(enterprise_id, scope_id)
