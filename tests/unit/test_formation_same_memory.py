"""Candidates touching the same memory, and verdict checks, on plain objects (no store)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from jennah.domain import rules
from jennah.domain.formation import CandidateKind, Decision, ExtractedCandidate
from jennah.domain.models import MemoryRecord, MemoryType, ScopeRef
from jennah.ports.prompts import ReconcileChoice
from jennah.services.formation.candidates import Candidate, Memory, node_id, normalize_text
from jennah.services.formation.same_memory import reject_clashes
from jennah.services.formation.verdicts import VerdictContext, check

SCOPE = ScopeRef(enterprise_id="e", scope_id="s")
NOW = datetime(2026, 8, 25, tzinfo=UTC)


def _memory(text: str, valid_at: datetime | None = None, **extra: object) -> Memory:
    record = MemoryRecord(
        id=rules.chunk_id(text, valid_at),
        scope=SCOPE,
        text=text,
        content_hash=rules.content_hash(text),
        valid_at=valid_at,
        **extra,
    )
    return Memory.of_chunk(record)


def _candidate(index: int, text: str, memory_type: str = "fact") -> Candidate:
    extracted = ExtractedCandidate(kind=CandidateKind.FACT, text=text, memory_type=memory_type)
    return Candidate(index=index, extracted=extracted, memory_type=MemoryType(memory_type))


TOKYO = _memory("The user lives in Tokyo.")
KYOTO = _memory("The user lives in Kyoto.")


def test_a_revision_whose_replacement_is_a_memory_another_retires_is_rejected() -> None:
    retires_kyoto = _candidate(0, "The user lives in Osaka.")
    retires_kyoto.decide(Decision.REVISED, KYOTO)
    becomes_kyoto = _candidate(1, "The user lives in Kyoto.")
    becomes_kyoto.decide(Decision.REVISED, TOKYO)
    reject_clashes([retires_kyoto, becomes_kyoto])
    assert retires_kyoto.decision is Decision.REVISED
    assert becomes_kyoto.decision is Decision.REJECTED and becomes_kyoto.matched_id is None
    reason = becomes_kyoto.rejection_reason or ""
    assert KYOTO.id in reason and "candidate 0 retires" in reason and TOKYO.id in reason


def test_a_new_candidate_stating_a_retired_memory_is_rejected() -> None:
    revision = _candidate(0, "The user lives in Osaka.")
    revision.decide(Decision.REVISED, TOKYO)
    restated = _candidate(1, "The user lives in Tokyo.")
    restated.decide(Decision.NEW)
    reject_clashes([revision, restated])
    assert restated.decision is Decision.REJECTED


def test_a_rejected_candidate_is_never_decided_again() -> None:
    candidate = _candidate(0, "x")
    candidate.reject("no")
    with pytest.raises(AssertionError):
        candidate.decide(Decision.NEW)
    candidate.reject("again")
    assert candidate.rejection_reason == "no"


def _checked(
    candidate: Candidate, choice: ReconcileChoice, memory: Memory, boundary: datetime = NOW
) -> Candidate:
    check(candidate, choice, {memory.id: memory}, VerdictContext(SCOPE, NOW, boundary))
    return candidate


def test_chronological_supersession() -> None:
    newer = _memory("The user lives in Tokyo.", datetime(2026, 1, 1, tzinfo=UTC))
    choice = ReconcileChoice(candidate_index=0, decision="revised", matched_id=newer.id)
    old = datetime(2023, 5, 20, tzinfo=UTC)
    assert _checked(_candidate(0, "Osaka"), choice, newer, old).decision is Decision.REJECTED
    later = datetime(2026, 2, 1, tzinfo=UTC)
    assert _checked(_candidate(0, "Osaka"), choice, newer, later).decision is Decision.REVISED
    unbounded = ReconcileChoice(candidate_index=0, decision="REVISED", matched_id=TOKYO.id)
    assert _checked(_candidate(0, "Osaka"), unbounded, TOKYO, old).decision is Decision.REVISED


def test_known_must_name_a_current_memory_of_the_same_type_family() -> None:
    closed = _memory("The user lives in Tokyo.", invalid_at=datetime(2026, 3, 1, tzinfo=UTC))
    known = ReconcileChoice(candidate_index=0, decision="known", matched_id=closed.id)
    assert _checked(_candidate(0, "Tokyo!"), known, closed).decision is Decision.REJECTED
    directive = _memory("Ask before booking", type=MemoryType.DIRECTIVE)
    choice = ReconcileChoice(candidate_index=0, decision="known", matched_id=directive.id)
    assert _checked(_candidate(0, "ask"), choice, directive).decision is Decision.REJECTED
    choice = ReconcileChoice(candidate_index=0, decision="known", matched_id=directive.id)
    kept = _checked(_candidate(0, "ask", "directive"), choice, directive)
    assert (kept.decision, kept.matched_id) == (Decision.KNOWN, directive.id)
    # fact, identity, preference and constraint are one family: code refines them by
    # their words, so a restatement may land on another of them
    preference = _memory("Dark mode", type=MemoryType.PREFERENCE)
    choice = ReconcileChoice(candidate_index=0, decision="known", matched_id=preference.id)
    kept = _checked(_candidate(0, "dark"), choice, preference)
    assert (kept.decision, kept.matched_id) == (Decision.KNOWN, preference.id)


def test_normalization_of_names_and_text() -> None:
    assert node_id("The  User") == node_id("the user") != node_id("the users")
    assert normalize_text("The user lives in Tokyo.") == normalize_text("the USER lives in tokyo")
