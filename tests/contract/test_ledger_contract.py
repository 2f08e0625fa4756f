"""Contract: execution-log steps, evidence, links and formation keys commit with the plan."""

from __future__ import annotations

import pytest

from jennah.domain.models import (
    CommitPlan,
    Evidence,
    ExecutionLogStep,
    FormationKeyRecord,
    MemoryLink,
    MemoryRecord,
    ScopeRef,
)
from jennah.errors import Aborted, NotFound
from jennah.ports.store import MemoryStore
from tests.contract.conftest import EMBEDDER, at, chunk_id

STEP = ExecutionLogStep(
    step_id="step-1",
    tool_input="[0] user: I moved to Lisbon\n[1] agent: noted",
    metadata={"jennah.turn_offsets": "0,29"},
)


def _chunk(scope: ScopeRef, text: str) -> MemoryRecord:
    return MemoryRecord(
        id=chunk_id(text),
        scope=scope,
        text=text,
        metadata={"jennah.source_step": STEP.step_id},
        embedding=EMBEDDER.embed(text),
    )


def formation_plan(scope: ScopeRef, key: str = "conversation-1") -> CommitPlan:
    """A formation's whole write: memory, step, evidence, links and formation key."""
    first, second = _chunk(scope, "Ana moved to Lisbon"), _chunk(scope, "Ana lives in Lisbon")
    return CommitPlan(
        scope=scope,
        chunks=[first, second],
        steps=[STEP],
        evidence=[
            Evidence(
                memory_id=first.id,
                ref="step-1#0",
                quote="I moved to Lisbon",
                recorded_at=at(2026, 3, 4),
            ),
        ],
        links=[MemoryLink(source_id=first.id, target_id=second.id)],
        formation_key=FormationKeyRecord(
            formation_key=key, fingerprint="fp-1", receipt_json='{"ok": true}'
        ),
    )


def test_step_round_trips(store: MemoryStore, scope: ScopeRef) -> None:
    result = store.apply(CommitPlan(scope=scope, steps=[STEP]))
    stored = store.get_step(scope, "step-1")
    assert stored == STEP.model_copy(update={"created_at": result.commit_timestamp})


def test_missing_step_is_none(store: MemoryStore, scope: ScopeRef) -> None:
    assert store.get_step(scope, "step-404") is None


def test_formation_plan_applies_whole(store: MemoryStore, scope: ScopeRef) -> None:
    result = store.apply(formation_plan(scope))
    assert result.chunks_written == 2
    assert store.get_step(scope, "step-1") is not None
    assert len(store.get_chunks(scope, [chunk_id("Ana moved to Lisbon")])) == 1


def test_rewriting_a_step_keeps_its_creation_time(store: MemoryStore, scope: ScopeRef) -> None:
    first = store.apply(CommitPlan(scope=scope, steps=[STEP]))
    store.apply(CommitPlan(scope=scope, steps=[STEP.model_copy(update={"tool_input": "v2"})]))
    stored = store.get_step(scope, "step-1")
    assert stored is not None
    assert (stored.tool_input, stored.created_at) == ("v2", first.commit_timestamp)


def test_a_claimed_formation_key_aborts_the_second_commit(
    store: MemoryStore, scope: ScopeRef
) -> None:
    store.apply(formation_plan(scope))
    again = formation_plan(scope)
    again.chunks = [_chunk(scope, "something else entirely")]
    with pytest.raises(Aborted) as raised:
        store.apply(again)
    assert raised.value.reason == "FORMATION_KEY_CLAIMED"
    assert store.get_chunks(scope, [chunk_id("something else entirely")]) == []


def test_evidence_for_a_missing_memory_fails_the_whole_plan(
    store: MemoryStore, scope: ScopeRef
) -> None:
    kept = _chunk(scope, "Ana has a cat")
    orphan = Evidence(
        memory_id=chunk_id("never written"), ref="conv://x", quote="q", recorded_at=at(1)
    )
    with pytest.raises(NotFound):
        store.apply(CommitPlan(scope=scope, chunks=[kept], evidence=[orphan]))
    assert store.get_chunks(scope, [kept.id]) == []
