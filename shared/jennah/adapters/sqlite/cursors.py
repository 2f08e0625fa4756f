"""The walk cursors of the embedded default: a table in the memory store's file.

`walk_cursors` holds one row per cursor name; `cursor` is the JSON of the
WalkCursor (`model_dump_json`). The table is created idempotently on open; each
`put` is one statement in a BEGIN IMMEDIATE transaction.
"""

from __future__ import annotations

from pathlib import Path

from jennah.adapters.sqlite.connection import ControlFile
from jennah.domain.lifecycle import WalkCursor

_TABLE = """
CREATE TABLE IF NOT EXISTS walk_cursors (
  name TEXT NOT NULL PRIMARY KEY,
  cursor TEXT NOT NULL CHECK (json_valid(cursor))
) WITHOUT ROWID
"""


class SqliteCursorStore:
    """CursorStore on a SQLite file (its table created if missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file = ControlFile(self.path, "cursor store", _TABLE)

    def close(self) -> None:
        self._file.close()

    def get(self, name: str) -> WalkCursor | None:
        with self._file.reader() as conn:
            row = conn.execute("SELECT cursor FROM walk_cursors WHERE name = ?", (name,)).fetchone()
        return None if row is None else WalkCursor.model_validate_json(row["cursor"])

    def put(self, name: str, cursor: WalkCursor) -> None:
        with self._file.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO walk_cursors (name, cursor) VALUES (?, ?)",
                (name, cursor.model_dump_json()),
            )
