"""Keyed memory on Cloud Spanner: the KeyedMemoryStore half of `SpannerStore`.

The tables are in `keyed.sql` (appended DDL). Every write is one read-write transaction
whose function only reads and buffers mutations: the version check reads the entry inside
the transaction, so of two writers with the same expectedVersion Spanner aborts and reruns
one, whose rerun then finds the new version and fails with KEYED_MEMORY_VERSION_MISMATCH
(or ALREADY_EXISTS for two creates). The 12-link bound is checked the same way. Create
and update times are the commit timestamp.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from google.cloud.spanner_v1 import COMMIT_TIMESTAMP, KeyRange, KeySet, param_types

from jennah.adapters.spanner.calls import CallBound, utc
from jennah.domain import keyed
from jennah.domain.keyed import KeyedMemory, Match
from jennah.domain.models import ScopeRecord, ScopeRef
from jennah.errors import NotFound

_T = TypeVar("_T")
_COLUMNS = ("key", "content", "version", "token_count", "created_at", "updated_at")
_SELECT = "`key`, content, version, token_count, created_at, updated_at"
_SCOPE = "enterprise_id = @enterprise_id AND scope_id = @scope_id"
_STRINGS = param_types.Array(param_types.STRING)  # type: ignore[no-untyped-call]


class SpannerKeyedMemories:
    """KeyedMemoryStore over the store's database (mixed into SpannerStore)."""

    _database: Any
    _timeout: float
    _bound: CallBound
    _bounded: Callable[[str, Callable[[], Any]], Any]

    def put_keyed(
        self,
        scope: ScopeRef,
        entry: KeyedMemory,
        terms: Sequence[str],
        expected_version: int,
        registration: ScopeRecord | None,
    ) -> KeyedMemory:
        bound = self._bound

        def write(txn: Any) -> tuple[Any, datetime | None, list[str]]:
            rows = list(
                txn.read("keyed_memories", ["version", "created_at"], _keys(scope, [entry.key]),
                         **bound.kwargs)
            )  # fmt: skip
            keyed.check_write(entry.key, expected_version, int(rows[0][0]) if rows else 0)
            if registration is not None:
                _register(txn, scope, registration, bound)
            txn.delete("keyed_memory_terms", _prefix(scope, entry.key))
            txn.insert_or_update(
                "keyed_memories",
                ["enterprise_id", "scope_id", *_COLUMNS],
                [[*_ids(scope), entry.key, entry.content, expected_version + 1,
                  entry.token_count, rows[0][1] if rows else COMMIT_TIMESTAMP,
                  COMMIT_TIMESTAMP]],
            )  # fmt: skip
            txn.insert_or_update(
                "keyed_memory_terms",
                ["enterprise_id", "scope_id", "key", "term", "updated_at"],
                [[*_ids(scope), entry.key, term, COMMIT_TIMESTAMP] for term in terms],
            )
            links = _links_of(txn, scope, [entry.key], bound)[entry.key]
            return txn, (utc(rows[0][1]) if rows else None), links

        txn, created, links = self._write("remember", write)
        committed = utc(txn.committed)
        return entry.model_copy(
            update={
                "version": expected_version + 1,
                "links": links,
                "create_time": created or committed,
                "update_time": committed,
            }
        )

    def get_keyed(self, scope: ScopeRef, key: str) -> KeyedMemory | None:
        found = self._snapshot(
            lambda snap: _entries(snap, scope, [key], self._bound), multi_use=True
        )
        return found[0] if found else None

    def list_keyed(self, scope: ScopeRef, offset: int, limit: int) -> list[KeyedMemory]:
        sql = (
            f"SELECT {_SELECT} FROM keyed_memories WHERE {_SCOPE}"
            " ORDER BY updated_at DESC, `key` LIMIT @limit OFFSET @offset"
        )
        params = {**_scope_params(scope), "limit": limit, "offset": offset}
        types = {**_SCOPE_TYPES, "limit": param_types.INT64, "offset": param_types.INT64}

        def read(snap: Any) -> list[KeyedMemory]:
            rows = list(snap.execute_sql(sql, params=params, param_types=types,
                                         **self._bound.kwargs))  # fmt: skip
            links = _links_of(snap, scope, [row[0] for row in rows], self._bound)
            return [_from_row(row, links.get(row[0], [])) for row in rows]

        result: list[KeyedMemory] = self._snapshot(read, multi_use=True)
        return result

    def forget_keyed(self, scope: ScopeRef, key: str) -> bool:
        bound = self._bound

        def write(txn: Any) -> bool:
            found = list(txn.read("keyed_memories", ["version"], _keys(scope, [key]),
                                  **bound.kwargs))  # fmt: skip
            linked = _link_rows(txn, scope, [key], bound)
            txn.delete("keyed_memories", _keys(scope, [key]))
            txn.delete("keyed_memory_terms", _prefix(scope, key))
            if linked:
                txn.delete("keyed_memory_links", _keys(scope, linked))
            return bool(found)

        deleted: bool = self._write("forget", write)
        return deleted

    def link_keyed(self, scope: ScopeRef, key: str, target: str) -> KeyedMemory:
        bound = self._bound
        pair = keyed.link_pair(key, target)

        def write(txn: Any) -> KeyedMemory:
            found = {e.key: e for e in _entries(txn, scope, [key, target], bound)}
            for name, field in ((key, "key"), (target, "target")):
                if name not in found:
                    raise _not_found(name, field)
            entry = found[key]
            if target in entry.links:
                return entry
            for name in (key, target):
                if len(found[name].links) >= keyed.MAX_LINKS:
                    raise keyed.too_many_links(name)
            txn.insert(
                "keyed_memory_links",
                ["enterprise_id", "scope_id", "source_key", "target_key", "created_at"],
                [[*_ids(scope), *pair, COMMIT_TIMESTAMP]],
            )
            return entry.model_copy(update={"links": sorted([*entry.links, target])})

        linked: KeyedMemory = self._write("link", write)
        return linked

    def unlink_keyed(self, scope: ScopeRef, key: str, target: str) -> KeyedMemory:
        bound = self._bound

        def write(txn: Any) -> KeyedMemory:
            found = _entries(txn, scope, [key], bound)
            if not found:
                raise _not_found(key, "key")
            txn.delete("keyed_memory_links", _keys(scope, [keyed.link_pair(key, target)]))
            entry = found[0]
            return entry.model_copy(update={"links": [k for k in entry.links if k != target]})

        unlinked: KeyedMemory = self._write("unlink", write)
        return unlinked

    def count_terms(self, scope: ScopeRef, words: Sequence[str], cap: int) -> dict[str, int]:
        if not words:
            return {}
        sql = " UNION ALL ".join(
            f"SELECT {i}, (SELECT COUNT(*) FROM (SELECT 1 FROM keyed_memory_terms"
            "@{FORCE_INDEX=keyed_memory_terms_by_term}"
            f" WHERE {_SCOPE} AND term = @w{i} LIMIT @cap))"
            for i in range(len(words))
        )
        params = {**_scope_params(scope), "cap": cap + 1,
                  **{f"w{i}": word for i, word in enumerate(words)}}  # fmt: skip
        types = {**_SCOPE_TYPES, "cap": param_types.INT64,
                 **{f"w{i}": param_types.STRING for i in range(len(words))}}  # fmt: skip

        def read(snap: Any) -> dict[str, int]:
            rows = snap.execute_sql(sql, params=params, param_types=types, **self._bound.kwargs)
            return {words[int(row[0])]: int(row[1]) for row in rows}

        counts: dict[str, int] = self._snapshot(read)
        return counts

    def match_keyed(
        self, scope: ScopeRef, words: Sequence[str], offset: int, limit: int
    ) -> list[Match]:
        if not words:
            return []
        sql = (
            "SELECT m.`key`, m.content, m.version, m.token_count, m.created_at, m.updated_at,"
            " COUNT(*) AS score"
            " FROM keyed_memory_terms@{FORCE_INDEX=keyed_memory_terms_by_term} AS t"
            " JOIN keyed_memories AS m ON m.enterprise_id = t.enterprise_id"
            " AND m.scope_id = t.scope_id AND m.`key` = t.`key`"
            " WHERE t.enterprise_id = @enterprise_id AND t.scope_id = @scope_id"
            " AND t.term IN UNNEST(@words)"
            " GROUP BY m.`key`, m.content, m.version, m.token_count, m.created_at, m.updated_at"
            " ORDER BY score DESC, m.updated_at DESC, m.`key` LIMIT @limit OFFSET @offset"
        )
        params = {**_scope_params(scope), "words": list(words), "limit": limit, "offset": offset}
        types = {
            **_SCOPE_TYPES,
            "words": _STRINGS,
            "limit": param_types.INT64,
            "offset": param_types.INT64,
        }

        def read(snap: Any) -> list[Match]:
            rows = snap.execute_sql(sql, params=params, param_types=types, **self._bound.kwargs)
            return [Match(entry=_from_row(row[:6], []), score=int(row[6])) for row in rows]

        matches: list[Match] = self._snapshot(read)
        return matches

    def linked_keyed(self, scope: ScopeRef, keys: Sequence[str]) -> dict[str, list[KeyedMemory]]:
        def read(snap: Any) -> dict[str, list[KeyedMemory]]:
            links = _links_of(snap, scope, keys, self._bound)
            wanted = sorted({k for ks in links.values() for k in ks})
            entries = {e.key: e for e in _entries(snap, scope, wanted, self._bound)}
            return {
                key: keyed.by_recency([entries[k] for k in links.get(key, []) if k in entries])
                for key in keys
            }

        result: dict[str, list[KeyedMemory]] = self._snapshot(read, multi_use=True)
        return result

    # plumbing

    def _write(self, what: str, function: Callable[[Any], _T]) -> _T:
        result: _T = self._bounded(
            f"keyed memory {what}",
            lambda: self._database.run_in_transaction(function, timeout_secs=self._timeout),
        )
        return result

    def _snapshot(self, read: Callable[[Any], _T], *, multi_use: bool = False) -> _T:
        def run() -> _T:
            with self._database.snapshot(multi_use=multi_use) as snap:
                return read(snap)

        result: _T = self._bounded("keyed memory read", run)
        return result


_SCOPE_TYPES = {"enterprise_id": param_types.STRING, "scope_id": param_types.STRING}


def _ids(scope: ScopeRef) -> list[str]:
    return [scope.enterprise_id, scope.scope_id]


def _scope_params(scope: ScopeRef) -> dict[str, Any]:
    return {"enterprise_id": scope.enterprise_id, "scope_id": scope.scope_id}


def _keys(scope: ScopeRef, keys: Sequence[str | Sequence[str]]) -> Any:
    full = [[*_ids(scope), *([k] if isinstance(k, str) else k)] for k in keys]
    return KeySet(keys=full)  # type: ignore[no-untyped-call]


def _prefix(scope: ScopeRef, key: str) -> Any:
    """Every row whose primary key starts with (scope, key)."""
    start = [*_ids(scope), key]
    return KeySet(ranges=[KeyRange(start_closed=start, end_closed=start)])  # type: ignore[no-untyped-call]


def _register(txn: Any, scope: ScopeRef, record: ScopeRecord, bound: CallBound) -> None:
    """Insert the registration unless the scope is registered already."""
    if list(txn.read("scopes", ["scope_id"], _keys(scope, [()]), **bound.kwargs)):
        return
    txn.insert(
        "scopes",
        ["enterprise_id", "scope_id", "kind", "created_at", "created_by", "time_zone"],
        [[*_ids(scope), record.kind, COMMIT_TIMESTAMP, record.created_by, record.time_zone]],
    )


def _not_found(key: str, field: str) -> NotFound:
    return NotFound(
        f"keyed memory {key!r} does not exist",
        reason="KEYED_MEMORY_NOT_FOUND",
        field=field,
        metadata={"key": key},
    )


def _entries(
    reader: Any, scope: ScopeRef, keys: Sequence[str], bound: CallBound
) -> list[KeyedMemory]:
    if not keys:
        return []
    rows = sorted(
        reader.read("keyed_memories", list(_COLUMNS), _keys(scope, keys), **bound.kwargs),
        key=lambda row: row[0],
    )
    links = _links_of(reader, scope, [row[0] for row in rows], bound)
    return [_from_row(row, links.get(row[0], [])) for row in rows]


def _link_rows(
    reader: Any, scope: ScopeRef, keys: Sequence[str], bound: CallBound
) -> list[tuple[str, str]]:
    if not keys:
        return []
    sql = (
        f"SELECT source_key, target_key FROM keyed_memory_links WHERE {_SCOPE}"
        " AND (source_key IN UNNEST(@keys) OR target_key IN UNNEST(@keys))"
    )
    rows = reader.execute_sql(
        sql,
        params={**_scope_params(scope), "keys": list(keys)},
        param_types={**_SCOPE_TYPES, "keys": _STRINGS},
        **bound.kwargs,
    )
    return [(row[0], row[1]) for row in rows]


def _links_of(
    reader: Any, scope: ScopeRef, keys: Sequence[str], bound: CallBound
) -> dict[str, list[str]]:
    wanted = set(keys)
    links: dict[str, set[str]] = {key: set() for key in keys}
    for source, target in _link_rows(reader, scope, keys, bound):
        if source in wanted:
            links[source].add(target)
        if target in wanted:
            links[target].add(source)
    return {key: sorted(linked) for key, linked in links.items()}


def _from_row(row: Sequence[Any], links: list[str]) -> KeyedMemory:
    return KeyedMemory(
        key=row[0],
        content=row[1],
        version=int(row[2]),
        token_count=int(row[3]),
        create_time=utc(row[4]),
        update_time=utc(row[5]),
        links=links,
    )
