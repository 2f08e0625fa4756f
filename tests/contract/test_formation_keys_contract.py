"""Contract: formationKey replay and reuse, and the conflicts a formation can lose
when another write commits while it is reconciling (interleaved through the model
call, so they run on both stores; the Spanner integration suite races them for real)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, cast

import pytest

from jennah.domain import rules
from jennah.domain.formation import FormationReceipt
from jennah.domain.models import CommitPlan, CommitResult, ScopeRef
from jennah.errors import Aborted, InvalidArgument
from jennah.ports.store import MemoryStore
from jennah.services.formation import KEY_CLAIMED, SUPERSEDED_FIRST, WRITE_CONFLICT
from tests.contract.formation_support import (
    at,
    decisions,
    extraction,
    fact,
    run,
    scripted,
    user,
    verdicts,
    written_rows,
)

KEY = "conversation-8817-turn-42"
TOKYO = "The user lives in Tokyo."
OSAKA = "The user lives in Osaka."
TOKYO_ID = rules.chunk_id(TOKYO, None)
TURNS = [user("I live in Tokyo.")]


def _form_tokyo(store: MemoryStore, scope: ScopeRef, **extra: Any) -> FormationReceipt:
    model = scripted(extraction(fact(TOKYO, [0], "I live in Tokyo")))
    return run(store, scope, TURNS, model, received=at(2026, 8, 1), **extra)


def test_a_committed_key_replays_its_receipt_without_a_model_call(
    store: MemoryStore, scope: ScopeRef
) -> None:
    original = _form_tokyo(store, scope, formation_key=KEY)
    rows = written_rows(store, scope)
    assert rows["formation_keys"] == 1  # committed with the memory

    silent = scripted()  # any call would fail: it has no answers
    replayed = run(store, scope, TURNS, silent, formation_key=KEY)
    assert silent.calls == []
    assert replayed.replay and not original.replay
    assert replayed.commit_timestamp == original.commit_timestamp
    assert replayed.model_dump(exclude={"replay"}) == original.model_dump(exclude={"replay"})
    assert replayed.formation_units == original.formation_units  # the original's units
    assert written_rows(store, scope) == rows


def test_reusing_a_key_for_other_turns_or_another_observed_at_is_refused(
    store: MemoryStore, scope: ScopeRef
) -> None:
    _form_tokyo(store, scope, formation_key=KEY)
    for turns, observed_at in ([user("I live in Kyoto.")], None), (TURNS, at(2024)):
        silent = scripted()
        with pytest.raises(InvalidArgument) as refused:
            run(store, scope, turns, silent, formation_key=KEY, observed_at=observed_at)
        assert refused.value.reason == "FORMATION_KEY_REUSED" and KEY in refused.value.message
        assert silent.calls == []


def test_a_formation_that_writes_nothing_still_records_its_key(
    store: MemoryStore, scope: ScopeRef
) -> None:
    first = run(store, scope, [user("Bye!")], scripted(extraction()), formation_key=KEY)
    assert written_rows(store, scope) == {"formation_keys": 1, "scopes": 1}  # no step
    replayed = run(store, scope, [user("Bye!")], scripted(), formation_key=KEY)
    assert replayed.replay and replayed.candidates == [] and replayed.execution_log_rows == 0
    assert replayed.commit_timestamp == first.commit_timestamp


def test_keys_are_per_scope(store: MemoryStore, scope: ScopeRef) -> None:
    _form_tokyo(store, scope, formation_key=KEY)
    other = ScopeRef(enterprise_id=scope.enterprise_id, scope_id=scope.scope_id + "-b")
    receipt = run(store, other, [user("Bye!")], scripted(extraction()), formation_key=KEY)
    assert not receipt.replay


def test_without_a_key_the_same_conversation_forms_again(
    store: MemoryStore, scope: ScopeRef
) -> None:
    _form_tokyo(store, scope)
    model = scripted(extraction(fact(TOKYO, [0], "I live in Tokyo")))
    receipt = run(store, scope, TURNS, model)
    assert not receipt.replay and decisions(receipt) == ["KNOWN"] and len(model.calls) == 1


# Conflicts: another write commits while this formation is between its reads and its commit.


def _meanwhile(action: Any, answer: Any) -> Any:
    """A scripted answer that first lets another write commit."""

    def answer_after(prompt: str, schema: dict[str, Any]) -> Any:
        action()
        return answer(prompt, schema) if callable(answer) else answer

    return answer_after


def test_losing_the_race_for_a_key_writes_nothing(store: MemoryStore, scope: ScopeRef) -> None:
    winner: list[FormationReceipt] = []
    loser = scripted(
        _meanwhile(
            lambda: winner.append(_form_tokyo(store, scope, formation_key=KEY)),
            extraction(fact("Tokyo is home.", [0], "Tokyo")),
        )
    )
    with pytest.raises(Aborted) as lost:
        run(store, scope, TURNS, loser, formation_key=KEY)
    assert lost.value.reason == KEY_CLAIMED and lost.value.http_status == 409
    assert store.get_chunks(scope, [rules.chunk_id("Tokyo is home.", None)]) == []
    resent = run(store, scope, TURNS, scripted(), formation_key=KEY)
    assert resent.replay and resent.commit_timestamp == winner[0].commit_timestamp


class _CommitsFirst:
    """The store, except that another write commits just before this formation's commit
    (after every read the formation made)."""

    def __init__(self, store: MemoryStore, other_write: Callable[[], object]) -> None:
        self._store = store
        self._other_write = other_write

    def apply(self, plan: CommitPlan) -> CommitResult:
        self._other_write()
        return self._store.apply(plan)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _revise_tokyo(store: MemoryStore, scope: ScopeRef, to: str, received: datetime) -> None:
    run(
        store,
        scope,
        [user(f"I moved to {to}.")],
        scripted(
            extraction(fact(f"The user lives in {to}.", [0], f"I moved to {to}")),
            verdicts((f"The user lives in {to}.", "revised", TOKYO_ID)),
        ),
        received=received,
    )


def test_losing_a_supersession_race_writes_nothing(store: MemoryStore, scope: ScopeRef) -> None:
    _form_tokyo(store, scope)
    before: dict[str, int] = {}

    def other_formation() -> None:
        _revise_tokyo(store, scope, "Kyoto", at(2026, 8, 20))
        before.update(written_rows(store, scope))

    racing = cast(MemoryStore, _CommitsFirst(store, other_formation))
    with pytest.raises(Aborted) as lost:
        _revise_tokyo(racing, scope, "Osaka", at(2026, 8, 25))
    assert lost.value.reason == SUPERSEDED_FIRST and TOKYO_ID in lost.value.message
    assert written_rows(store, scope) == before
    kyoto = rules.chunk_id("The user lives in Kyoto.", at(2026, 8, 20))
    assert store.get_chunks(scope, [TOKYO_ID])[0].superseded_by == kyoto


def test_losing_to_an_erasure_is_a_write_conflict(store: MemoryStore, scope: ScopeRef) -> None:
    _form_tokyo(store, scope)
    racing = cast(MemoryStore, _CommitsFirst(store, lambda: store.destroy_scope(scope)))
    with pytest.raises(Aborted) as lost:
        _revise_tokyo(racing, scope, "Osaka", at(2026, 8, 25))
    assert lost.value.reason == WRITE_CONFLICT and lost.value.http_status == 409
    assert written_rows(store, scope) == {}


def test_a_memory_erased_during_reconciliation_does_not_exist(
    store: MemoryStore, scope: ScopeRef
) -> None:
    _form_tokyo(store, scope)
    model = scripted(
        extraction(fact(OSAKA, [0], "I moved to Osaka")),
        _meanwhile(lambda: store.destroy_scope(scope), verdicts((OSAKA, "revised", TOKYO_ID))),
    )
    receipt = run(store, scope, [user("I moved to Osaka.")], model)
    assert decisions(receipt) == ["REJECTED"]
    assert "does not exist" in (receipt.candidates[0].rejection_reason or "")
    assert written_rows(store, scope) == {}
