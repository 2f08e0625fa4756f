"""A claim's evidence ledger: the quotes and turn references behind one claim.

Any claim of the scope has its ledger read, whatever its status or validity: an
expired, superseded, dormant or retracted claim keeps its history readable.
"""

from __future__ import annotations

from jennah.domain.models import Evidence, ScopeRef
from jennah.errors import NotFound
from jennah.ports.store import MemoryStore


def list_evidence(store: MemoryStore, scope: ScopeRef, memory_id: str) -> list[Evidence]:
    """The evidence lines of claim `memory_id`, oldest first (then by ref); NotFound
    naming the memory when the scope holds no such claim."""
    if not store.get_chunks(scope, [memory_id]):
        raise NotFound(
            f"memory {memory_id!r} was not found in scope {scope.scope_id!r}",
            metadata={"memoryId": memory_id},
        )
    return store.list_evidence(scope, [memory_id])
