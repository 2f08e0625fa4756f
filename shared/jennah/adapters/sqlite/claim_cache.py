"""The in-process cache of scopes' claims that `SqliteStore.list_claims` answers from.

Why: the brief compiles from, and the lifecycle pass walks, every claim of a scope, and
reading 5,000 rows of ~30 columns and building their records costs tens of
milliseconds, over the 20 ms a brief compile may spend reading them. So a scope's
claims (without embeddings) are kept as records, by id, once read, and each
`list_claims` hands out copies of the ones it selects (a caller may change its copies;
the cached records never change).

Coherence, as for the vector index (`vector_index.py`): a cache entry remembers the
scope generation it reflects (`scope_generations`, bumped by a trigger on every write
of memory_records, by any process); a read first compares the scope's generation and
rebuilds a stale entry. The store's own commits update an entry in place from the
rows they wrote, read back inside the transaction, so a brief compiled after a
formation does not pay a rebuild.

Not thread-safe: the store serializes access with one lock.
"""

from __future__ import annotations

import bisect
import itertools
from collections import OrderedDict
from collections.abc import Iterable, Sequence

from jennah.adapters.sqlite.codec import copy_record
from jennah.domain.models import MemoryRecord, ScopeRef, Status


class ScopeClaims:
    """One scope's claims at one generation: records by id, and the ids in order."""

    def __init__(self, generation: int, records: Iterable[MemoryRecord]) -> None:
        self.generation = generation
        self._records = {record.id: record for record in records}
        self._ids = sorted(self._records)

    @property
    def size(self) -> int:
        return len(self._ids)

    def select(
        self, statuses: Sequence[Status] | None, after: str | None, limit: int
    ) -> list[MemoryRecord]:
        """Copies of the claims of those statuses (all when None) after `after`, by id."""
        wanted = None if statuses is None else frozenset(statuses)
        start = 0 if after is None else bisect.bisect_right(self._ids, after)
        chosen = (
            self._records[record_id]
            for record_id in itertools.islice(self._ids, start, None)
            if wanted is None or self._records[record_id].status in wanted
        )
        return [copy_record(record) for record in itertools.islice(chosen, max(limit, 0))]

    def apply(self, records: Iterable[MemoryRecord], generation: int) -> None:
        """Insert or replace records (by id); the entry then reflects `generation`."""
        for record in records:
            if record.id not in self._records:
                bisect.insort(self._ids, record.id)
            self._records[record.id] = record
        self.generation = generation


class ClaimCache:
    """Scopes' claims, least recently used evicted beyond `budget_rows` claims in all."""

    def __init__(self, budget_rows: int) -> None:
        self.budget_rows = budget_rows
        self._scopes: OrderedDict[ScopeRef, ScopeClaims] = OrderedDict()

    def current(self, scope: ScopeRef, generation: int) -> ScopeClaims | None:
        """The scope's entry if it reflects `generation`; a stale one is dropped."""
        claims = self._scopes.get(scope)
        if claims is None:
            return None
        if claims.generation != generation:
            del self._scopes[scope]
            return None
        self._scopes.move_to_end(scope)
        return claims

    def is_at(self, scope: ScopeRef, generation: int) -> bool:
        claims = self._scopes.get(scope)
        return claims is not None and claims.generation == generation

    def put(self, scope: ScopeRef, claims: ScopeClaims) -> None:
        self._scopes[scope] = claims
        self._scopes.move_to_end(scope)
        self._evict()

    def drop(self, scope: ScopeRef) -> None:
        self._scopes.pop(scope, None)

    def after_commit(
        self,
        scope: ScopeRef,
        before: int,
        after: int,
        records: Sequence[MemoryRecord] | None,
    ) -> None:
        """Apply a commit that moved the scope from generation `before` to `after`:
        `records` are its rows as committed, or None when they were not read back (then
        an entry is dropped)."""
        claims = self._scopes.get(scope)
        if claims is None or after == before:
            return
        if claims.generation != before or records is None:
            del self._scopes[scope]
            return
        claims.apply(records, after)
        self._evict()

    def _evict(self) -> None:
        total = sum(claims.size for claims in self._scopes.values())
        while total > self.budget_rows and self._scopes:
            _, evicted = self._scopes.popitem(last=False)
            total -= evicted.size
