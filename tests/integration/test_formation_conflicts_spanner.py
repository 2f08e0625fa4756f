"""Formation conflicts raced for real on the Spanner emulator.

Each test runs formations on their own threads against one database and lets
them reach their commits together (a barrier in front of `apply`, after every
read the formation makes), so Spanner itself decides who commits first. The
loser must answer ABORTED with the spec's reason and must have written nothing.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import pytest
from google.cloud.spanner_v1 import param_types

from jennah.adapters.spanner.store import SpannerStore
from jennah.domain import rules
from jennah.domain.formation import FormationReceipt
from jennah.domain.models import CommitPlan, CommitResult, ScopeRef
from jennah.errors import Aborted, JennahError
from jennah.ports.store import MemoryStore
from jennah.services.formation import KEY_CLAIMED, SUPERSEDED_FIRST, WRITE_CONFLICT
from tests.contract.formation_support import (
    at,
    extraction,
    fact,
    run,
    scripted,
    user,
    verdicts,
)
from tests.support.spanner_emulator import spanner_test_database

pytestmark = [pytest.mark.spanner]

TOKYO = "The user lives in Tokyo."
TOKYO_ID = rules.chunk_id(TOKYO, None)
Outcome = FormationReceipt | JennahError


class _AtCommit:
    """The store, except that `before_commit` runs just before the formation's commit (a
    plan with its formation key or step; not the lifecycle pass's plan after it)."""

    def __init__(self, store: MemoryStore, before_commit: Callable[[], object]) -> None:
        self._store = store
        self._before_commit = before_commit

    def apply(self, plan: CommitPlan) -> CommitResult:
        if plan.formation_key is not None or plan.steps:
            self._before_commit()
        return self._store.apply(plan)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


@pytest.fixture
def store() -> SpannerStore:
    return SpannerStore(spanner_test_database())


@pytest.fixture
def scope() -> ScopeRef:
    return ScopeRef(enterprise_id=f"ent-{uuid.uuid4().hex}", scope_id=f"agent-{uuid.uuid4().hex}")


def _race(
    *formations: Callable[[MemoryStore], FormationReceipt], store: MemoryStore
) -> list[Outcome]:
    """Run the formations at once, each held at its commit until all have reached it."""
    barrier = threading.Barrier(len(formations), timeout=60)
    racing = cast(MemoryStore, _AtCommit(store, barrier.wait))

    def outcome(formation: Callable[[MemoryStore], FormationReceipt]) -> Outcome:
        try:
            return formation(racing)
        except JennahError as exc:
            return exc

    with ThreadPoolExecutor(len(formations)) as pool:
        return list(pool.map(outcome, formations))


def _winner_and_loser(outcomes: list[Outcome], reason: str) -> tuple[int, Aborted]:
    receipts = [i for i, o in enumerate(outcomes) if isinstance(o, FormationReceipt)]
    errors = [o for o in outcomes if isinstance(o, JennahError)]
    assert len(receipts) == 1 and len(errors) == 1, outcomes
    (loser,) = errors
    assert isinstance(loser, Aborted) and loser.reason == reason, loser
    assert loser.http_status == 409
    return receipts[0], loser


def _form_tokyo(store: MemoryStore, scope: ScopeRef) -> None:
    model = scripted(extraction(fact(TOKYO, [0], "I live in Tokyo")))
    run(store, scope, [user("I live in Tokyo.")], model, received=at(2026, 8, 1))


def _revision(scope: ScopeRef, city: str) -> Callable[[MemoryStore], FormationReceipt]:
    text = f"The user lives in {city}."

    def formation(store: MemoryStore) -> FormationReceipt:
        model = scripted(
            extraction(fact(text, [0], f"I moved to {city}")),
            verdicts((text, "revised", TOKYO_ID)),
        )
        return run(store, scope, [user(f"I moved to {city}.")], model)

    return formation


def test_two_formations_racing_with_one_key(store: SpannerStore, scope: ScopeRef) -> None:
    turns = [user("I live in Tokyo. Tokyo is home.")]
    texts = [TOKYO, "Tokyo is home."]
    quotes = {TOKYO: "I live in Tokyo", "Tokyo is home.": "Tokyo is home"}

    def formation(text: str) -> Callable[[MemoryStore], FormationReceipt]:
        def form_with_key(racing: MemoryStore) -> FormationReceipt:
            model = scripted(extraction(fact(text, [0], quotes[text])))
            return run(racing, scope, turns, model, formation_key="conversation-1")

        return form_with_key

    outcomes = _race(*(formation(text) for text in texts), store=store)
    winner, _ = _winner_and_loser(outcomes, KEY_CLAIMED)

    stored = [r.text for r in store.list_chunks(scope, None, 10, 0)]
    assert stored == [texts[winner]]  # the loser wrote nothing
    resent = run(store, scope, turns, scripted(), formation_key="conversation-1")
    assert resent.replay and resent.candidates[0].text == texts[winner]


def test_two_formations_revising_one_memory(store: SpannerStore, scope: ScopeRef) -> None:
    _form_tokyo(store, scope)
    cities = ["Osaka", "Kyoto"]
    outcomes = _race(*(_revision(scope, city) for city in cities), store=store)
    winner, loser = _winner_and_loser(outcomes, SUPERSEDED_FIRST)

    assert TOKYO_ID in loser.message
    winning = outcomes[winner]
    assert isinstance(winning, FormationReceipt) and winning.chunk_supersessions == 1
    texts = sorted(r.text for r in store.list_chunks(scope, None, 10, 0))
    assert texts == sorted([TOKYO, f"The user lives in {cities[winner]}."])
    (tokyo,) = store.get_chunks(scope, [TOKYO_ID])
    assert tokyo.superseded_by == rules.chunk_id(
        f"The user lives in {cities[winner]}.", tokyo.invalid_at
    )
    assert _steps(scope) == 2  # Tokyo's conversation and the winner's; none for the loser


# The emulator runs one read-write transaction at a time and aborts the others; which
# of two overlapping transactions it aborts varies (about half the time it is the one
# that began first). A formation whose commit keeps being aborted past its store's
# time bound loses with FORMATION_WRITE_CONFLICT. The race is rerun until the
# formation has lost once (a formation that wins must have written everything).
CONTENTION_TRIALS = 12


@pytest.mark.slow
def test_a_formation_losing_to_a_concurrent_write() -> None:
    for _ in range(CONTENTION_TRIALS):
        scope = ScopeRef(enterprise_id=f"ent-{uuid.uuid4().hex}", scope_id="agent-contended")
        lost = _contend_with_another_writer(scope)
        if lost is not None:
            assert lost.reason == WRITE_CONFLICT and lost.http_status == 409
            return
    pytest.fail(f"the formation never lost its commit in {CONTENTION_TRIALS} races")


def _contend_with_another_writer(scope: ScopeRef) -> Aborted | None:
    """Race a revision of Tokyo against another client's slow write to Tokyo's row;
    the formation's ABORTED when it lost (after checking it wrote nothing), else None."""
    database = spanner_test_database()
    bounded = SpannerStore(database, timeout_seconds=1.0)
    _form_tokyo(bounded, scope)
    held = threading.Event()

    def other_writer(txn: Any) -> None:
        list(txn.read("memory_records", ("id",), _keyset(scope, TOKYO_ID)))
        txn.update(
            "memory_records",
            ("enterprise_id", "scope_id", "id", "summary"),
            [[scope.enterprise_id, scope.scope_id, TOKYO_ID, "touched by another writer"]],
        )
        held.set()
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline:  # stays active: keeps reading, slowly
            list(txn.read("memory_records", ("id",), _keyset(scope, TOKYO_ID)))
            time.sleep(0.1)

    writer = threading.Thread(target=lambda: database.run_in_transaction(other_writer))

    def start_other_writer() -> None:
        writer.start()
        assert held.wait(30)

    racing = cast(MemoryStore, _AtCommit(bounded, start_other_writer))
    try:
        receipt: FormationReceipt | None = _revision(scope, "Osaka")(racing)
        lost = None
    except Aborted as exc:
        receipt, lost = None, exc
    writer.join(60)
    (tokyo,) = bounded.get_chunks(scope, [TOKYO_ID])
    assert tokyo.summary == "touched by another writer"  # the other write always lands
    texts = sorted(r.text for r in bounded.list_chunks(scope, None, 10, 0))
    if lost is not None:  # the loser wrote nothing
        assert texts == [TOKYO] and tokyo.invalid_at is None and _steps(scope) == 1
    else:  # the winner wrote everything
        assert receipt is not None and receipt.chunk_supersessions == 1
        assert texts == sorted([TOKYO, "The user lives in Osaka."]) and _steps(scope) == 2
    return lost


def test_a_formation_losing_to_a_concurrent_erasure(store: SpannerStore, scope: ScopeRef) -> None:
    """A user erasure, on another client, commits while the formation is between its
    reads and its commit: the memory the formation revises is gone."""
    _form_tokyo(store, scope)
    erased = threading.Event()

    def erase() -> None:
        store.destroy_scope(scope)
        erased.set()

    eraser = threading.Thread(target=erase)

    def let_the_erasure_commit_first() -> None:
        eraser.start()
        assert erased.wait(60)

    racing = cast(MemoryStore, _AtCommit(store, let_the_erasure_commit_first))
    with pytest.raises(Aborted) as lost:
        _revision(scope, "Osaka")(racing)
    eraser.join(60)
    assert lost.value.reason == WRITE_CONFLICT
    assert store.list_chunks(scope, None, 10, 0) == [] and store.get_scope(scope) is None


def _keyset(scope: ScopeRef, record_id: str) -> Any:
    from google.cloud.spanner_v1 import KeySet

    return KeySet(keys=[[scope.enterprise_id, scope.scope_id, record_id]])  # type: ignore[no-untyped-call]


def _steps(scope: ScopeRef) -> int:
    with spanner_test_database().snapshot() as snapshot:
        rows = list(
            snapshot.execute_sql(
                "SELECT COUNT(*) FROM execution_log_steps"
                " WHERE enterprise_id = @e AND scope_id = @s",
                params={"e": scope.enterprise_id, "s": scope.scope_id},
                param_types={"e": param_types.STRING, "s": param_types.STRING},
                timeout=30,
            )
        )
    return int(rows[0][0])
