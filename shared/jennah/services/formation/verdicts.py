"""Code checks every verdict the reconciliation model gives.

- "new": NEW.
- "known": KNOWN, when it names a current memory of the candidate's kind.
- "revised": REVISED, unless the named memory
  - does not exist in this workspace,
  - is of another kind (a fact revising an edge) or another memory type family
    (`claims.type_family`: directive, relationship, or a statement),
  - is already superseded (its validity window is closed),
  - is identical to the candidate (same wording up to case, spacing and final
    punctuation; for relationships the same source, relation and target),
  - became valid at or after the revision boundary (observedAt, or the receipt
    time): an older conversation cannot retire newer memory (chronological
    supersession). A memory with no validAt can be revised at any date.
  Each of these REJECTS the candidate with a reason; it is never turned into
  another decision.
- no verdict, or an unknown one: REJECTED.
- contradiction: an accepted "revised" whose candidate is an inference (authority
  inferred) and whose memory the user stated (user_stated or user_explicit) is not a
  supersession: the candidate is REJECTED with a reason naming the contradiction and
  the kept memory as matchedId, and planning writes a "contradicted" change-log line
  on the kept memory. A stated or explicit candidate supersedes an inferred claim
  (REVISED).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from jennah.domain.formation import CandidateKind, Decision
from jennah.domain.models import Authority, ScopeRef
from jennah.ports.prompts import ReconcileChoice
from jennah.services.formation.candidates import Candidate, Memory, normalize_text
from jennah.services.formation.claims import type_family

_KIND_NOUNS = {CandidateKind.FACT: "fact", CandidateKind.RELATIONSHIP: "relationship"}


@dataclass(frozen=True)
class VerdictContext:
    scope: ScopeRef
    received_at: datetime  # what "current" means
    boundary: datetime  # where a revision closes the prior window


class _Refused(Exception):
    """A verdict code does not accept; the message is the rejection reason."""


def check(
    candidate: Candidate,
    choice: ReconcileChoice | None,
    memories: dict[str, Memory],
    context: VerdictContext,
) -> None:
    """Decide `candidate` from the model's verdict, or reject it with a reason."""
    try:
        decision, matched = _accepted(candidate, choice, memories, context)
    except _Refused as refused:
        candidate.reject(str(refused))
        return
    if decision is Decision.REVISED and matched is not None and _outranks(matched, candidate):
        candidate.contradict(
            matched,
            f"it contradicts {matched.id}, which the user stated ({matched.authority}); "
            "an inference does not supersede what the user said: the contradiction is "
            "recorded in the change log and the memory is kept",
        )
        return
    candidate.decide(decision, matched)


def _outranks(memory: Memory, candidate: Candidate) -> bool:
    """An explicit or stated claim outranks an inference: an inferred candidate never
    supersedes it. (A system-written claim keeps formation's earlier rule: revisable.)"""
    claim = candidate.claim
    inferred = claim is not None and claim.authority is Authority.INFERRED
    return inferred and memory.authority in (Authority.USER_EXPLICIT, Authority.USER_STATED)


def _accepted(
    candidate: Candidate,
    choice: ReconcileChoice | None,
    memories: dict[str, Memory],
    context: VerdictContext,
) -> tuple[Decision, Memory | None]:
    if choice is None:
        raise _Refused("reconciliation gave no decision for this candidate")
    verdict = choice.decision.strip().lower()
    if verdict == "new":
        return Decision.NEW, None
    if verdict == "known":
        return Decision.KNOWN, _known(candidate, choice.matched_id, memories, context)
    if verdict == "revised":
        return Decision.REVISED, _revised(candidate, choice.matched_id, memories, context)
    raise _Refused(f"reconciliation answered {choice.decision[:40]!r}, not new, known or revised")


def _named(
    candidate: Candidate, matched_id: str | None, memories: dict[str, Memory], verb: str
) -> Memory:
    if not matched_id:
        raise _Refused(f"reconciliation {verb} no memory by id")
    memory = memories.get(matched_id)
    if memory is None:
        raise _Refused(f"it {verb} {matched_id[:140]}, which does not exist in this workspace")
    if memory.kind is not candidate.kind:
        raise _Refused(
            f"it {verb} {memory.id}, a {_KIND_NOUNS[memory.kind]}; this candidate is a "
            f"{_KIND_NOUNS[candidate.kind]}"
        )
    if candidate.is_fact and type_family(memory.memory_type) != type_family(candidate.memory_type):
        raise _Refused(
            f"it {verb} {memory.id}, a {memory.memory_type} memory; this candidate is a "
            f"{candidate.memory_type.value} memory"
        )
    return memory


def _known(
    candidate: Candidate,
    matched_id: str | None,
    memories: dict[str, Memory],
    context: VerdictContext,
) -> Memory:
    memory = _named(candidate, matched_id, memories, "names")
    if not memory.is_current(context.received_at):
        raise _Refused(f"it names {memory.id} as known, but {memory.id} is not current memory")
    return memory


def _revised(
    candidate: Candidate,
    matched_id: str | None,
    memories: dict[str, Memory],
    context: VerdictContext,
) -> Memory:
    memory = _named(candidate, matched_id, memories, "revises")
    if not memory.is_open():
        closed = memory.invalid_at.isoformat() if memory.invalid_at else "its retirement"
        raise _Refused(f"it revises {memory.id}, which was already superseded at {closed}")
    if _identical(candidate, memory):
        raise _Refused(f"it is identical to {memory.id}, the memory it would revise")
    if memory.valid_at is not None and memory.valid_at >= context.boundary:
        raise _Refused(
            f"it would retire {memory.id}, which became valid at {memory.valid_at.isoformat()}, "
            f"after this conversation took place ({context.boundary.isoformat()}): an older "
            "statement cannot supersede newer memory"
        )
    return memory


def _identical(candidate: Candidate, memory: Memory) -> bool:
    if candidate.edge is not None:
        return candidate.content_key == memory.content_key
    return (
        candidate.content_key == memory.content_key
        or normalize_text(candidate.text) == memory.normalized_text
    )
