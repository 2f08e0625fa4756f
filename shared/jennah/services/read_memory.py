"""read_memory (family-memory-design.md §9): one whole claim of a scope, whatever its status.

A claim is read with its memory:// reference, its lineage both ways (the claims it
supersedes, oldest last, and those that superseded it, newest last: each chain followed
one link at a time, at most MAX_LINEAGE claims each way) and its OKF file as memory:export
writes it (front matter and body). Superseded, expired, dormant and retracted claims read
like active ones: history stays readable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from jennah.domain import okf
from jennah.domain.models import MemoryRecord, ScopeRef
from jennah.domain.references import memory_ref
from jennah.errors import NotFound
from jennah.ports.store import MemoryStore

MAX_LINEAGE = 32  # claims followed in each direction


@dataclass(frozen=True)
class ClaimView:
    claim: MemoryRecord
    ref: str
    supersedes: list[MemoryRecord]  # nearest first: the claim this one replaced, then its own
    superseded_by: list[MemoryRecord]  # nearest first: the claim that replaced this one, ...
    okf: str


def read_claim(store: MemoryStore, scope: ScopeRef, memory_id: str) -> ClaimView:
    """The claim `memory_id` of the scope; NotFound naming it when the scope holds none."""
    claim = get_claim(store, scope, memory_id)
    return ClaimView(
        claim=claim,
        ref=memory_ref(scope.scope_id, claim.id),
        supersedes=_chain(store, scope, claim, lambda r: r.supersedes),
        superseded_by=_chain(store, scope, claim, lambda r: r.superseded_by),
        okf=okf.render_claim(claim).decode("utf-8"),
    )


def get_claim(store: MemoryStore, scope: ScopeRef, memory_id: str) -> MemoryRecord:
    found = store.get_chunks(scope, [memory_id])
    if not found:
        raise NotFound(
            f"memory {memory_id!r} was not found in scope {scope.scope_id!r}",
            metadata={"memoryId": memory_id},
        )
    return found[0].model_copy(update={"embedding": None})


def _chain(
    store: MemoryStore,
    scope: ScopeRef,
    claim: MemoryRecord,
    link: Callable[[MemoryRecord], str | None],
) -> list[MemoryRecord]:
    """The claims reached by following `link` from `claim`, stopping at a missing claim,
    a loop or MAX_LINEAGE."""
    chain: list[MemoryRecord] = []
    seen = {claim.id}
    following = link(claim)
    while following is not None and following not in seen and len(chain) < MAX_LINEAGE:
        found = store.get_chunks(scope, [following])
        if not found:
            break
        seen.add(following)
        chain.append(found[0].model_copy(update={"embedding": None}))
        following = link(found[0])
    return chain
