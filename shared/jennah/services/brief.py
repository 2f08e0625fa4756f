"""The brief's use cases: compile both variants for the store, and serve one.

`compile_briefs` is what the lifecycle ("dream") pass calls after it has worked out a
scope's active claims; it puts the result in its CommitPlan.briefs, so the stored brief
is always a function of the claims that plan commits (design §5). `read_brief` serves
the stored brief with the lines whose validUntil has passed filtered out (design §6),
and when no brief was ever stored compiles one in memory from the store, writing
nothing (a GET never writes).

Last conversation (design §6, "a short summary of the most recent session"): the
claims the most recent formation formed or reinforced. A formation writes an evidence
line `conv://{scope}/{stepId}#turn=a-b` for each claim it forms or reinforces, recorded at
its receipt time, and every formed claim carries its step in `jennah.source_step` (its
ClaimState's `source_step`).
So: the LAST_CANDIDATES most recently formed claims (by formedAt) and most recently
reinforced ones (by lastReinforcedAt) are read with their evidence (one bounded read);
the step of the newest of those lines (recordedAt, then ref) is the last conversation
(without any such line, the step of the most recently formed claim). It formed the
claims whose `jennah.source_step` names it and reinforced the others with an evidence
line from it. Claims written by memory:commit name no step and are never part of it.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import NamedTuple

from jennah.domain.brief import (
    LastConversation,
    compile_variants,
    count_tokens,
    etag,
    without_expired,
)
from jennah.domain.claim_state import ClaimState
from jennah.domain.models import (
    BriefVariant,
    Evidence,
    ScopeRef,
    Status,
    StoredBrief,
)
from jennah.ports.store import MemoryStore

LAST_CANDIDATES = 64  # recent claims whose evidence is read to find the last conversation
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class ServedBrief(NamedTuple):
    text: str
    token_count: int
    etag: str  # strong: a hash of `text`, the bytes served


def compile_briefs(
    store: MemoryStore,
    scope: ScopeRef,
    active: Sequence[ClaimState],
    now: datetime | None = None,
    variants: Sequence[BriefVariant] = tuple(BriefVariant),
) -> list[StoredBrief]:
    """The scope's briefs (both variants by default) compiled from `active`: the scope's
    active claims as the caller will have committed them. Reads only the evidence that
    finds the last conversation. With `now`, claims not valid then are left out too."""
    last = last_conversation(store, scope, active)
    compiled = compile_variants(scope.scope_id, active, last, variants, now)
    return [
        StoredBrief(variant=variant, text=text, token_count=tokens, expiries=expiries)
        for variant, (text, tokens, expiries) in zip(variants, compiled, strict=True)
    ]


def read_brief(
    store: MemoryStore, scope: ScopeRef, variant: BriefVariant, now: datetime
) -> ServedBrief:
    """The brief as served at `now`: the stored one without its expired lines, or, when
    none was ever stored, one compiled from the store's active claims (nothing written)."""
    stored = store.get_brief(scope, variant)
    if stored is None:
        stored = compile_briefs(store, scope, active_claims(store, scope), now, (variant,))[0]
    text = without_expired(scope.scope_id, stored.text, stored.expiries, now)
    tokens = stored.token_count if text == stored.text else count_tokens(text)
    return ServedBrief(text, tokens, etag(text))


def active_claims(store: MemoryStore, scope: ScopeRef) -> list[ClaimState]:
    """Every active claim of the scope, in id order (one read of their states)."""
    return store.list_claim_states(scope, [Status.ACTIVE])


def last_conversation(
    store: MemoryStore, scope: ScopeRef, claims: Sequence[ClaimState]
) -> LastConversation | None:
    """The most recent formation and what it formed or reinforced (see the module doc)."""
    formed_by_step = [c for c in claims if c.source_step]
    formed = heapq.nlargest(
        LAST_CANDIDATES, formed_by_step, key=lambda c: (c.created_at or _EPOCH, c.id)
    )
    reinforced = heapq.nlargest(
        LAST_CANDIDATES,
        [c for c in claims if c.last_reinforced_at is not None],
        key=lambda c: (c.last_reinforced_at or _EPOCH, c.id),
    )
    ids = sorted({c.id for c in (*formed, *reinforced)})
    if not ids:
        return None
    prefix = f"conv://{scope.scope_id}/"
    lines = [e for e in store.list_evidence(scope, ids) if e.ref.startswith(prefix)]
    step = _newest_step(lines, prefix) or (formed[0].source_step if formed else None)
    if step is None:
        return None
    made = frozenset(c.id for c in formed_by_step if c.source_step == step)
    again = frozenset(e.memory_id for e in lines if _step(e.ref, prefix) == step) - made
    return LastConversation(step_id=step, formed=made, reinforced=again)


def _newest_step(lines: Sequence[Evidence], prefix: str) -> str | None:
    if not lines:
        return None
    newest = max(lines, key=lambda e: (e.recorded_at, e.ref))
    return _step(newest.ref, prefix)


def _step(ref: str, prefix: str) -> str:
    """The step id of `conv://{scope}/{stepId}#turn=a-b`."""
    return ref[len(prefix) :].partition("#")[0]
