"""Contract: formation fills the claims (issue 16) on every store: the claim fields it
decides survive the store, reinforcement (see test_formation_decisions_contract), a
contradiction recorded in the change log, and a stale revision planned again."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from jennah.domain.formation import Decision, Turn
from jennah.domain.models import (
    Authority,
    ClaimUpdate,
    CommitPlan,
    CommitResult,
    Durability,
    MemoryType,
    ScopeRecord,
    ScopeRef,
    Status,
    Strength,
)
from jennah.ports.store import MemoryStore
from jennah.services.formation import FormationCommand
from tests.contract.conftest import EMBEDDER
from tests.contract.formation_support import (
    assistant,
    chunk,
    decisions,
    extraction,
    fact,
    run,
    scripted,
    user,
    verdicts,
)
from tests.support.formation import form

OBSERVED = datetime(2026, 3, 5, 3, 0, tzinfo=UTC)  # 19:00 on 4 March in Los Angeles
TOKYO = "The user lives in Tokyo."


def _form_in(store: MemoryStore, scope: ScopeRef, zone: str, turns: list[Turn], model: Any) -> None:
    command = FormationCommand(
        scope=scope,
        registration=ScopeRecord(scope=scope, kind="agent", time_zone=zone),
        caller="user:tester",
        turns=turns,
        observed_at=OBSERVED,
    )
    form(command, store, EMBEDDER, model, lambda: datetime(2026, 3, 6, tzinfo=UTC))


def test_formed_claim_fields_survive_the_store(store: MemoryStore, scope: ScopeRef) -> None:
    said = "Pizza night is tonight! Remember that I'm allergic to peanuts."
    model = scripted(
        extraction(
            fact("Pizza night is tonight.", [0], "Pizza night is tonight!"),
            fact("The user is allergic to peanuts.", [0], "Remember that I'm allergic to peanuts"),
        )
    )
    _form_in(store, scope, "America/Los_Angeles", [user(said)], model)
    pizza = chunk(store, scope, "Pizza night is tonight.", OBSERVED)
    assert pizza.valid_until == datetime(2026, 3, 5, 8, 0, tzinfo=UTC)  # local midnight
    assert (pizza.durability, pizza.authority) == (Durability.PASSING, Authority.USER_STATED)
    peanuts = chunk(store, scope, "The user is allergic to peanuts.", OBSERVED)
    assert (peanuts.type, peanuts.strength, peanuts.authority) == (
        MemoryType.CONSTRAINT, Strength.HARD, Authority.USER_EXPLICIT,
    )  # fmt: skip
    assert peanuts.summary == "The user is allergic to peanuts."
    assert peanuts.when_to_use and peanuts.about == "the user"
    assert (peanuts.confidence, peanuts.valid_until) == (1.0, None)


def test_an_inference_contradicting_a_stated_claim_is_recorded_not_superseded(
    store: MemoryStore, scope: ScopeRef
) -> None:
    run(store, scope, [user("I live in Tokyo.")], scripted(extraction(fact(TOKYO, [0], "Tokyo"))))
    said = "The assistant said that the user lives in Osaka."
    turns = [user("Where should I eat?"), assistant("Since you live in Osaka, try Dotonbori.")]
    model = scripted(
        extraction(fact(said, [1], "Since you live in Osaka")),
        verdicts((said, "revised", chunk(store, scope, TOKYO).id)),
    )
    receipt = run(store, scope, turns, model)
    assert decisions(receipt) == ["REJECTED"]
    assert "contradicts" in (receipt.candidates[0].rejection_reason or "")
    kept = chunk(store, scope, TOKYO)
    assert (kept.status, kept.invalid_at) == (Status.ACTIVE, None)
    (logged,) = store.list_change_log(scope, 10)
    assert (logged.memory_id, logged.change, logged.from_value) == (kept.id, "contradicted", said)


class RacingStore:
    """The store, but another writer changes each claim a plan updates just before the
    plan commits, `races` times."""

    def __init__(self, store: MemoryStore, races: int) -> None:
        self._store = store
        self.races = races

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def apply(self, plan: CommitPlan) -> CommitResult:
        if plan.claim_updates and self.races > 0:
            self.races -= 1
            for change in plan.claim_updates:
                (record,) = self._store.get_chunks(plan.scope, [change.memory_id])
                edit = ClaimUpdate(
                    memory_id=record.id, expected_revision=record.revision, status=Status.ACTIVE
                )
                self._store.apply(CommitPlan(scope=plan.scope, claim_updates=[edit]))
        return self._store.apply(plan)


def test_a_stale_revision_is_read_again_and_planned_again(
    store: MemoryStore, scope: ScopeRef
) -> None:
    run(store, scope, [user("I live in Tokyo.")], scripted(extraction(fact(TOKYO, [0], "Tokyo"))))
    racing: Any = RacingStore(store, races=1)
    model = scripted(extraction(fact(TOKYO, [0], "still in Tokyo")))
    receipt = run(racing, scope, [user("Yes, still in Tokyo.")], model)
    assert receipt.candidates[0].decision is Decision.KNOWN
    tokyo = chunk(store, scope, TOKYO)
    assert (tokyo.reinforcement_count, tokyo.revision) == (1, 3)
