"""Keyed memory on the SQLite file: the KeyedMemoryStore half of `SqliteStore`.

Three tables of their own (domain.keyed says why entries are not memory records),
created on open by `ensure_tables` (CREATE ... IF NOT EXISTS, so files of any schema
version gain them without a version bump), and emptied with the scope by
`schema.SCOPED_TABLES`:

- `keyed_memories`: one row per (scope, key); `version`, `token_count`, times in
  microseconds like every other table; an index by update time for the newest-first list.
- `keyed_memory_terms`: the entry's words (domain.keyed.terms) with the entry's update
  time, keyed by (key, term) so a write replaces them with one range delete; an index by
  (term, update time, key) answers recall from the index alone: how many entries hold a
  word (up to a cap), and the best entries by matched words, then most recent update.
- `keyed_memory_links`: one row per linked pair, (lesser key, greater key).

Writes run on the store's writer connection under its lock and BEGIN IMMEDIATE, so the
version check and the write are one serialized transaction: of two writers with the same
expectedVersion exactly one wins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from jennah.adapters.sqlite import codec, writer
from jennah.domain import keyed
from jennah.domain.keyed import KeyedMemory, Match
from jennah.domain.models import CommitPlan, ScopeRecord, ScopeRef
from jennah.errors import NotFound

if TYPE_CHECKING:
    from sqlite3 import Connection

    from jennah.adapters.sqlite.connection import ConnectionPool, WriteLock

TABLES = ("keyed_memory_links", "keyed_memory_terms", "keyed_memories")

_DDL = """
CREATE TABLE IF NOT EXISTS keyed_memories (
  enterprise_id TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  key TEXT NOT NULL,
  content TEXT NOT NULL,
  version INTEGER NOT NULL,
  token_count INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (enterprise_id, scope_id, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS keyed_memories_by_update
  ON keyed_memories (enterprise_id, scope_id, updated_at DESC, key);
CREATE TABLE IF NOT EXISTS keyed_memory_terms (
  enterprise_id TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  key TEXT NOT NULL,
  term TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (enterprise_id, scope_id, key, term)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS keyed_memory_terms_by_term
  ON keyed_memory_terms (enterprise_id, scope_id, term, updated_at DESC, key);
CREATE TABLE IF NOT EXISTS keyed_memory_links (
  enterprise_id TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  source_key TEXT NOT NULL,
  target_key TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (enterprise_id, scope_id, source_key, target_key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS keyed_memory_links_by_target
  ON keyed_memory_links (enterprise_id, scope_id, target_key)
"""

_ENTRY_COLUMNS = "key, content, version, token_count, created_at, updated_at"
_SCOPE = "enterprise_id = ? AND scope_id = ?"


def ensure_tables(conn: Connection) -> None:
    for statement in _DDL.split(";"):
        conn.execute(statement)


class SqliteKeyedMemories:
    """KeyedMemoryStore over the store's connections (mixed into SqliteStore)."""

    _pool: ConnectionPool
    _write_lock: WriteLock
    _transaction: Callable[[], AbstractContextManager[Connection]]
    _commit_micros: Callable[[Connection], int]

    def put_keyed(
        self,
        scope: ScopeRef,
        entry: KeyedMemory,
        terms: Sequence[str],
        expected_version: int,
        registration: ScopeRecord | None,
    ) -> KeyedMemory:
        with self._write_lock, self._transaction() as conn:
            row = conn.execute(
                f"SELECT version, created_at FROM keyed_memories WHERE {_SCOPE} AND key = ?",
                (*_ids(scope), entry.key),
            ).fetchone()
            keyed.check_write(entry.key, expected_version, int(row[0]) if row else 0)
            now = self._commit_micros(conn)
            writer.write_plan(conn, CommitPlan(scope=scope, registration=registration), now)
            created = int(row[1]) if row else now
            conn.execute(
                "INSERT OR REPLACE INTO keyed_memories (enterprise_id, scope_id, "
                f"{_ENTRY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    *_ids(scope),
                    entry.key,
                    entry.content,
                    expected_version + 1,
                    entry.token_count,
                    created,
                    now,
                ),
            )
            _replace_terms(conn, scope, entry.key, terms, now)
            stored = _entry(conn, scope, entry.key)
            conn.execute("COMMIT")
        assert stored is not None
        return stored

    def get_keyed(self, scope: ScopeRef, key: str) -> KeyedMemory | None:
        with self._pool.connection() as conn:
            return _entry(conn, scope, key)

    def list_keyed(self, scope: ScopeRef, offset: int, limit: int) -> list[KeyedMemory]:
        with self._pool.connection() as conn:
            rows = conn.execute(
                f"SELECT {_ENTRY_COLUMNS} FROM keyed_memories WHERE {_SCOPE}"
                " ORDER BY updated_at DESC, key LIMIT ? OFFSET ?",
                (*_ids(scope), limit, offset),
            ).fetchall()
            links = _links_of(conn, scope, [row[0] for row in rows])
        return [_from_row(row, links.get(row[0], [])) for row in rows]

    def forget_keyed(self, scope: ScopeRef, key: str) -> bool:
        with self._write_lock, self._transaction() as conn:
            deleted = conn.execute(
                f"DELETE FROM keyed_memories WHERE {_SCOPE} AND key = ?", (*_ids(scope), key)
            ).rowcount
            conn.execute(
                f"DELETE FROM keyed_memory_terms WHERE {_SCOPE} AND key = ?", (*_ids(scope), key)
            )
            conn.execute(
                f"DELETE FROM keyed_memory_links WHERE {_SCOPE}"
                " AND (source_key = ? OR target_key = ?)",
                (*_ids(scope), key, key),
            )
            conn.execute("COMMIT")
        return bool(deleted)

    def link_keyed(self, scope: ScopeRef, key: str, target: str) -> KeyedMemory:
        with self._write_lock, self._transaction() as conn:
            _require(conn, scope, key, "key")
            _require(conn, scope, target, "target")
            pair = keyed.link_pair(key, target)
            linked = conn.execute(
                f"SELECT 1 FROM keyed_memory_links WHERE {_SCOPE}"
                " AND source_key = ? AND target_key = ?",
                (*_ids(scope), *pair),
            ).fetchone()
            if linked is None:
                counts = _link_counts(conn, scope, [key, target])
                for name in (key, target):
                    if counts.get(name, 0) >= keyed.MAX_LINKS:
                        raise keyed.too_many_links(name)
                conn.execute(
                    "INSERT INTO keyed_memory_links (enterprise_id, scope_id, source_key,"
                    " target_key, created_at) VALUES (?, ?, ?, ?, ?)",
                    (*_ids(scope), *pair, self._commit_micros(conn)),
                )
            stored = _entry(conn, scope, key)
            conn.execute("COMMIT")
        assert stored is not None
        return stored

    def unlink_keyed(self, scope: ScopeRef, key: str, target: str) -> KeyedMemory:
        with self._write_lock, self._transaction() as conn:
            _require(conn, scope, key, "key")
            conn.execute(
                f"DELETE FROM keyed_memory_links WHERE {_SCOPE}"
                " AND source_key = ? AND target_key = ?",
                (*_ids(scope), *keyed.link_pair(key, target)),
            )
            stored = _entry(conn, scope, key)
            conn.execute("COMMIT")
        assert stored is not None
        return stored

    def count_terms(self, scope: ScopeRef, words: Sequence[str], cap: int) -> dict[str, int]:
        sql = (
            "SELECT count(*) FROM (SELECT 1 FROM keyed_memory_terms"
            f" WHERE {_SCOPE} AND term = ? LIMIT ?)"
        )
        with self._pool.connection() as conn:
            return {
                word: int(conn.execute(sql, (*_ids(scope), word, cap + 1)).fetchone()[0])
                for word in words
            }

    def match_keyed(
        self, scope: ScopeRef, words: Sequence[str], offset: int, limit: int
    ) -> list[Match]:
        if not words:
            return []
        if len(words) == 1:  # every holder scores 1: the index's own order is the answer
            sql = (
                "SELECT key, 1, updated_at FROM keyed_memory_terms"
                f" WHERE {_SCOPE} AND term = ? ORDER BY updated_at DESC, key LIMIT ? OFFSET ?"
            )
        else:
            sql = (
                "SELECT key, count(*) AS score, max(updated_at) AS updated FROM"
                # without statistics SQLite would scan the scope by key to spare a sort
                f" keyed_memory_terms INDEXED BY keyed_memory_terms_by_term WHERE {_SCOPE}"
                f" AND term IN ({', '.join('?' for _ in words)}) GROUP BY key"
                " ORDER BY score DESC, updated DESC, key LIMIT ? OFFSET ?"
            )
        with self._pool.connection() as conn:
            ranked = conn.execute(sql, (*_ids(scope), *words, limit, offset)).fetchall()
            found = _entries(conn, scope, [row[0] for row in ranked], links=False)
        entries = {entry.key: entry for entry in found}
        return [
            Match(entry=entries[row[0]], score=int(row[1])) for row in ranked if row[0] in entries
        ]

    def linked_keyed(self, scope: ScopeRef, keys: Sequence[str]) -> dict[str, list[KeyedMemory]]:
        with self._pool.connection() as conn:
            links = _links_of(conn, scope, keys)
            wanted = sorted({k for ks in links.values() for k in ks})
            entries = {e.key: e for e in _entries(conn, scope, wanted)}
        return {
            key: keyed.by_recency([entries[k] for k in links.get(key, []) if k in entries])
            for key in keys
        }


def _ids(scope: ScopeRef) -> tuple[str, str]:
    return scope.enterprise_id, scope.scope_id


def _replace_terms(
    conn: Connection, scope: ScopeRef, key: str, terms: Sequence[str], now: int
) -> None:
    conn.execute(f"DELETE FROM keyed_memory_terms WHERE {_SCOPE} AND key = ?", (*_ids(scope), key))
    conn.executemany(
        "INSERT INTO keyed_memory_terms (enterprise_id, scope_id, key, term, updated_at)"
        " VALUES (?, ?, ?, ?, ?)",
        [(*_ids(scope), key, term, now) for term in terms],
    )


def _require(conn: Connection, scope: ScopeRef, key: str, field: str) -> None:
    found = conn.execute(
        f"SELECT 1 FROM keyed_memories WHERE {_SCOPE} AND key = ?", (*_ids(scope), key)
    ).fetchone()
    if found is None:
        raise NotFound(
            f"keyed memory {key!r} does not exist",
            reason="KEYED_MEMORY_NOT_FOUND",
            field=field,
            metadata={"key": key},
        )


def _entry(conn: Connection, scope: ScopeRef, key: str) -> KeyedMemory | None:
    found = _entries(conn, scope, [key])
    return found[0] if found else None


def _entries(
    conn: Connection, scope: ScopeRef, keys: Sequence[str], *, links: bool = True
) -> list[KeyedMemory]:
    if not keys:
        return []
    marks = ", ".join("?" for _ in keys)
    rows = conn.execute(
        f"SELECT {_ENTRY_COLUMNS} FROM keyed_memories WHERE {_SCOPE} AND key IN ({marks})"
        " ORDER BY key",
        (*_ids(scope), *keys),
    ).fetchall()
    linked = _links_of(conn, scope, [row[0] for row in rows]) if links else {}
    return [_from_row(row, linked.get(row[0], [])) for row in rows]


def _link_rows(conn: Connection, scope: ScopeRef, keys: Sequence[str]) -> Iterator[Any]:
    marks = ", ".join("?" for _ in keys)
    yield from conn.execute(
        f"SELECT source_key, target_key FROM keyed_memory_links WHERE {_SCOPE}"
        f" AND (source_key IN ({marks}) OR target_key IN ({marks}))",
        (*_ids(scope), *keys, *keys),
    )


def _links_of(conn: Connection, scope: ScopeRef, keys: Sequence[str]) -> dict[str, list[str]]:
    """Each key's linked keys, in key order."""
    if not keys:
        return {}
    wanted = set(keys)
    links: dict[str, set[str]] = {key: set() for key in keys}
    for source, target in _link_rows(conn, scope, keys):
        if source in wanted:
            links[source].add(target)
        if target in wanted:
            links[target].add(source)
    return {key: sorted(linked) for key, linked in links.items()}


def _link_counts(conn: Connection, scope: ScopeRef, keys: Sequence[str]) -> dict[str, int]:
    return {key: len(linked) for key, linked in _links_of(conn, scope, keys).items()}


def _from_row(row: Sequence[Any], links: list[str]) -> KeyedMemory:
    return KeyedMemory(
        key=row[0],
        content=row[1],
        version=int(row[2]),
        token_count=int(row[3]),
        create_time=codec.required_datetime(int(row[4])),
        update_time=codec.required_datetime(int(row[5])),
        links=links,
    )
