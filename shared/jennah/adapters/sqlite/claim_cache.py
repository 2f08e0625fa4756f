"""The in-process cache of scopes' claims that `SqliteStore.list_claim_states` answers from.

Why: the brief compiles from, and the lifecycle pass walks, every claim of a scope after
every write that changed claims, and reading 5,000 rows and building their states costs
tens of milliseconds, over what a brief compile may spend reading them. So a scope's
claims are kept as ClaimStates (immutable: handed out as they are, never copied), by
id, once read.

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
from collections import OrderedDict
from collections.abc import Iterable, Sequence

from jennah.domain.claim_state import ClaimState
from jennah.domain.models import ScopeRef, Status


class ScopeClaims:
    """One scope's claims at one generation: states by id, and the ids in order."""

    def __init__(self, generation: int, states: Iterable[ClaimState]) -> None:
        self.generation = generation
        self._states = {state.id: state for state in states}
        self._ids = sorted(self._states)

    @property
    def size(self) -> int:
        return len(self._ids)

    def select(self, statuses: Sequence[Status] | None) -> list[ClaimState]:
        """The claims of those statuses (all when None), by id (the cached objects)."""
        states = self._states
        if statuses is None:
            return [states[state_id] for state_id in self._ids]
        wanted = frozenset(statuses)
        return [state for state_id in self._ids if (state := states[state_id]).status in wanted]

    def apply(self, states: Iterable[ClaimState], generation: int) -> None:
        """Insert or replace states (by id); the entry then reflects `generation`."""
        for state in states:
            if state.id not in self._states:
                bisect.insort(self._ids, state.id)
            self._states[state.id] = state
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
        states: Sequence[ClaimState] | None,
    ) -> None:
        """Apply a commit that moved the scope from generation `before` to `after`:
        `states` are its rows as committed, or None when they were not read back (then
        an entry is dropped)."""
        claims = self._scopes.get(scope)
        if claims is None or after == before:
            return
        if claims.generation != before or states is None:
            del self._scopes[scope]
            return
        claims.apply(states, after)
        self._evict()

    def _evict(self) -> None:
        total = sum(claims.size for claims in self._scopes.values())
        while total > self.budget_rows and self._scopes:
            _, evicted = self._scopes.popitem(last=False)
            total -= evicted.size
