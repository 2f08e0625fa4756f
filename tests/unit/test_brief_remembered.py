"""The brief's compile reuses a remembered result only when the claims it shows are equal
(jennah.domain.brief._Compiled): never on a claim's (id, revision) alone, never for records
that can change in place."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from jennah.domain import brief
from jennah.domain.brief import LastConversation, compile_variants
from jennah.domain.claim_state import ClaimState
from jennah.domain.models import BriefVariant, MemoryRecord, MemoryType, ScopeRef, Sensitivity

SCOPE = ScopeRef(enterprise_id="local", scope_id="team.x")
NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
BOTH = (BriefVariant.FULL, BriefVariant.SHARED)


def state(memory_id: str, summary: str = "", **fields: object) -> ClaimState:
    """An identity claim (a line of the brief quoting its summary)."""
    record = MemoryRecord(
        id=memory_id, scope=SCOPE, text=f"claim {memory_id}", type=MemoryType.IDENTITY, **fields
    )
    return ClaimState.of(record)._replace(summary=summary)


@pytest.fixture(autouse=True)
def compiles(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many compiles really ran (a remembered answer runs none)."""
    brief._COMPILED.clear()
    ran: list[int] = []
    real = brief._compile_shown

    def counted(*args: object, **kwargs: object) -> object:
        ran.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(brief, "_compile_shown", counted)
    yield ran
    brief._COMPILED.clear()


def test_the_same_claims_compile_once_and_answer_equal_briefs(compiles: list[int]) -> None:
    claims = [state("a", "Sam is the dad"), state("b", "Practice is on Tuesdays")]
    last = LastConversation(step_id="frm_1", formed=frozenset({"b"}))
    first = compile_variants("team.x", claims, last, BOTH, NOW)
    again = compile_variants("team.x", list(claims), last, BOTH, NOW)
    assert again == first and len(compiles) == 1
    compile_variants("team.x", claims, None, BOTH, NOW)  # another last conversation
    compile_variants("team.y", claims, last, BOTH, NOW)  # another scope
    assert len(compiles) == 3


def test_a_claim_changed_under_the_same_id_and_revision_is_compiled_again() -> None:
    before = compile_variants("team.x", [state("a", "Practice is on Tuesdays")], None, BOTH)
    after = compile_variants("team.x", [state("a", "Practice is on Fridays")], None, BOTH)
    assert "Fridays" in after[0].text and "Fridays" not in before[0].text


def test_a_claim_that_expired_since_leaves_the_next_brief() -> None:
    until = NOW + timedelta(hours=1)
    claims = [state("a", "Pizza night is tonight", valid_until=until), state("b", "Sam")]
    (valid,) = compile_variants("team.x", claims, None, BOTH[:1], NOW)
    (later,) = compile_variants("team.x", claims, None, BOTH[:1], until)
    assert "Pizza" in valid.text and "Pizza" not in later.text


def test_a_claim_the_brief_never_shows_compiles_nothing(compiles: list[int]) -> None:
    claims = [state("a", "Sam is the dad")]
    first = compile_variants("team.x", claims, None, BOTH, NOW)
    secret = state("z", "Maya is allergic to peanuts", sensitivity=Sensitivity.HEALTH)
    again = compile_variants("team.x", [*claims, secret], None, BOTH, NOW)
    assert again == first and len(compiles) == 1


def test_a_remembered_answer_is_the_caller_s_own() -> None:
    claims = [state("a", "Pizza night is tonight", valid_until=NOW + timedelta(days=1))]
    (first,) = compile_variants("team.x", claims, None, BOTH[:1], NOW)
    first.expiries.clear()
    (again,) = compile_variants("team.x", claims, None, BOTH[:1], NOW)
    assert list(again.expiries) == ["a"]


def test_records_are_never_remembered(compiles: list[int]) -> None:
    record = MemoryRecord(
        id="a", scope=SCOPE, text="x", type=MemoryType.IDENTITY, summary="Practice is on Tuesdays"
    )
    compile_variants("team.x", [record], None, BOTH, NOW)
    record.summary = "Practice is on Fridays"  # changed in place: equal to itself
    (full, _) = compile_variants("team.x", [record], None, BOTH, NOW)
    assert "Fridays" in full.text and len(compiles) == 2
