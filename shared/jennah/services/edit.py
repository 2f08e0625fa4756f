"""Edit = supersede: a person corrects one claim (jennah.domain.edit has the rules).

`edit` reads the claim, checks it may be edited, plans ONE CommitPlan (the new claim with
its evidence line, and the old claim superseded by a ClaimUpdate under the revision it
was read at) and applies it in one store transaction: a concurrent change of the old
claim aborts it with REVISION_CHANGED (409) and nothing is written. The write is followed
by the scope's lifecycle pass (`passes`, as memory:commit does), so the brief replaces
the old line with the new one at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from jennah.domain import edit as edit_rules
from jennah.domain.models import CommitPlan, MemoryRecord, ScopeRef
from jennah.errors import Aborted, NotFound
from jennah.ports.embedder import Embedder
from jennah.ports.store import MemoryStore
from jennah.services import lifecycle
from jennah.services.formation.claims import sensitivity_of


@dataclass(frozen=True)
class EditCommand:
    scope: ScopeRef
    memory_id: str
    text: str
    summary: str | None = None


@dataclass(frozen=True)
class Edited:
    """The new claim and the one it superseded, as stored after the edit."""

    memory: MemoryRecord
    superseded: MemoryRecord


def edit(
    command: EditCommand,
    store: MemoryStore,
    embedder: Embedder,
    now: Callable[[], datetime],
    passes: lifecycle.Passes = lifecycle.INLINE,
) -> Edited:
    """Supersede claim `memory_id` with the person's words; NotFound when the scope holds
    no such claim, FailedPrecondition (CLAIM_NOT_ACTIVE) when it is not active."""
    received_at = now()
    edit_rules.check_text(command.text, command.summary)
    old = _claim(store, command.scope, command.memory_id)
    edit_rules.check_editable(old, received_at)
    new = _new_claim(store, old, command, received_at)
    new.embedding = embedder.embed(new.text)
    plan = CommitPlan(
        scope=command.scope,
        chunks=[new],
        claim_updates=[edit_rules.supersession(old, new)],
        evidence=[edit_rules.edit_evidence(new)],
    )
    store.apply(plan)
    passes(store, command.scope, received_at)
    stored = {c.id: c for c in store.get_chunks(command.scope, [new.id, old.id])}
    return Edited(memory=stored[new.id], superseded=stored[old.id])


def _claim(store: MemoryStore, scope: ScopeRef, memory_id: str) -> MemoryRecord:
    found = store.get_chunks(scope, [memory_id])
    if not found:
        raise NotFound(
            f"memory {memory_id!r} was not found in scope {scope.scope_id!r}",
            metadata={"memoryId": memory_id},
        )
    return found[0]


def _new_claim(
    store: MemoryStore, old: MemoryRecord, command: EditCommand, received_at: datetime
) -> MemoryRecord:
    """The new claim at the first boundary whose id no stored claim has (see
    jennah.domain.edit: ids derive from text and validAt)."""
    judged = sensitivity_of(command.text, old.type)
    options = [
        edit_rules.edited_claim(old, command.text, command.summary, boundary, judged)
        for boundary in edit_rules.boundaries(old, received_at)
    ]
    taken = {c.id for c in store.get_chunks(command.scope, [o.id for o in options])}
    for option in options:
        if option.id not in taken:
            return option
    raise Aborted(
        f"a claim with these words became valid at {received_at.isoformat()} already; "
        "retry the edit",
        metadata={"memoryId": old.id},
    )
