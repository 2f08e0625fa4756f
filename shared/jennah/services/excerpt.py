"""read_conversation_excerpt (family-memory-design.md §9): the turns a conv:// reference
cites, from the execution-log step of the scope read through.

A reference naming another scope is answered exactly like a missing step (NOT_FOUND
naming the step in the scope read): another scope's steps are never revealed, not even
that they exist. See domain.excerpt for the turns (numbered from 0; no fragment: every
turn of the step, at most formation.MAX_TURNS).
"""

from __future__ import annotations

from dataclasses import dataclass

from jennah.domain.excerpt import ExcerptTurn, cited_turns, turn_offsets
from jennah.domain.models import ScopeRef
from jennah.domain.references import parse_conv_ref
from jennah.errors import NotFound
from jennah.ports.store import MemoryStore


@dataclass(frozen=True)
class Excerpt:
    ref: str
    step_id: str
    turns: list[ExcerptTurn]
    turn_count: int


def read_excerpt(store: MemoryStore, scope: ScopeRef, ref: str, field: str = "ref") -> Excerpt:
    """The cited turns; INVALID_ARGUMENT (INVALID_REFERENCE) for a malformed reference or
    TURN_OUT_OF_RANGE, NOT_FOUND (STEP_NOT_FOUND) for a step the scope does not hold."""
    parsed = parse_conv_ref(ref, field)
    step = None
    if parsed.scope_id == scope.scope_id:
        step = store.get_step(scope, parsed.step_id)
    if step is None:
        raise NotFound(
            f"execution-log step {parsed.step_id!r} was not found in scope {scope.scope_id!r}",
            reason="STEP_NOT_FOUND",
            metadata={"stepId": parsed.step_id},
        )
    turns = cited_turns(step, parsed, field)
    return Excerpt(ref, step.step_id, turns, len(turn_offsets(step)))
