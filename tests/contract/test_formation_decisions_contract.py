"""Contract: reconciliation decisions, the code's checks of the model's verdicts, and
candidates that touch the same memory."""

from __future__ import annotations

from datetime import datetime

from jennah.domain import rules
from jennah.domain.formation import Decision, FormationReceipt
from jennah.domain.models import ScopeRef
from jennah.ports.store import MemoryStore
from jennah.services.commands import ChunkInput, SupersessionInput
from jennah.services.formation.candidates import node_id
from tests.contract.conftest import commit_items
from tests.contract.formation_support import (
    RECEIVED,
    at,
    chunk,
    decisions,
    extraction,
    fact,
    relationship,
    run,
    scripted,
    user,
    verdicts,
    written_rows,
)

TOKYO = "The user lives in Tokyo."
OSAKA = "The user lives in Osaka."
TOKYO_ID = rules.chunk_id(TOKYO, None)
FIRST = at(2026, 8, 1)


def _form_tokyo(store: MemoryStore, scope: ScopeRef, *extra: dict[str, object]) -> None:
    model = scripted(extraction(fact(TOKYO, [0], "I live in Tokyo"), *extra))
    run(store, scope, [user("I live in Tokyo.")], model, received=FIRST)


def _revise(
    store: MemoryStore,
    scope: ScopeRef,
    candidates: list[dict[str, object]],
    *choices: tuple[str | int, str, str | None],
    content: str = "I moved to Osaka, Tokyo was too loud.",
    observed_at: datetime | None = None,
) -> FormationReceipt:
    model = scripted(extraction(*candidates), verdicts(*choices))
    receipt = run(store, scope, [user(content)], model, observed_at=observed_at)
    assert len(model.calls) == 2
    return receipt


def test_identical_content_is_known_without_a_reconciliation_call(
    store: MemoryStore, scope: ScopeRef
) -> None:
    _form_tokyo(store, scope, relationship("the user", "LIVES_IN", "Tokyo", [0], "live in Tokyo"))
    before = written_rows(store, scope)
    model = scripted(
        extraction(
            fact(TOKYO, [0], "I'm in Tokyo"),
            relationship("The User", "LIVES_IN", "tokyo", [0], "I'm in Tokyo"),
        )
    )
    receipt = run(store, scope, [user("As I said, I'm in Tokyo.")], model)

    assert len(model.calls) == 1
    assert decisions(receipt) == ["KNOWN", "KNOWN"]
    edge = rules.edge_id(node_id("the user"), "LIVES_IN", node_id("Tokyo"), FIRST)
    assert [c.matched_id for c in receipt.candidates] == [TOKYO_ID, edge]
    # known writes no new memory: it reinforces the fact it restates (issue 16), with one
    # evidence line naming this conversation's step (written, so the line resolves) and a
    # "reinforced" change-log line; an edge is not a claim and is not reinforced
    assert receipt.execution_log_rows == 1
    after = written_rows(store, scope)
    grown = {"evidence": 1, "execution_log_steps": 1, "change_log": 1}
    assert after == {t: n + grown.get(t, 0) for t, n in before.items()} | {
        t: n for t, n in grown.items() if t not in before
    }
    (tokyo,) = store.get_chunks(scope, [TOKYO_ID])
    assert (tokyo.reinforcement_count, tokyo.revision, tokyo.last_reinforced_at) == (
        1, 2, RECEIVED,
    )  # fmt: skip
    # the same conversation formed again changes nothing
    again = scripted(extraction(fact(TOKYO, [0], "I'm in Tokyo")))
    assert decisions(run(store, scope, [user("As I said, I'm in Tokyo.")], again)) == ["KNOWN"]
    assert written_rows(store, scope) == after
    assert store.get_chunks(scope, [TOKYO_ID]) == [tokyo]


def test_nothing_similar_skips_the_reconciliation_call(store: MemoryStore, scope: ScopeRef) -> None:
    _form_tokyo(store, scope)
    model = scripted(extraction(fact("Alphaus was founded in 2015.", [0], "founded in 2015")))
    receipt = run(store, scope, [user("Alphaus was founded in 2015.")], model)

    assert len(model.calls) == 1
    assert decisions(receipt) == ["NEW"]


def test_only_candidates_with_similar_memory_reach_the_model(
    store: MemoryStore, scope: ScopeRef
) -> None:
    _form_tokyo(store, scope)
    model = scripted(
        extraction(
            fact(OSAKA, [0], "I moved to Osaka"),
            fact("Alphaus was founded in 2015.", [0], "founded in 2015"),
        ),
        verdicts((OSAKA, "new", None)),
    )
    receipt = run(store, scope, [user("I moved to Osaka. Alphaus was founded in 2015.")], model)

    sent = model.calls[1].data
    assert [c["text"] for c in sent["candidates"]] == [OSAKA]
    assert [m["id"] for m in sent["existing"]] == [TOKYO_ID]
    assert sent["existing"][0]["memoryType"] == "fact" and sent["existing"][0]["validAt"] is None
    assert decisions(receipt) == ["NEW", "NEW"]


def test_the_model_may_decide_known(store: MemoryStore, scope: ScopeRef) -> None:
    _form_tokyo(store, scope)
    before = written_rows(store, scope)
    receipt = _revise(
        store,
        scope,
        [fact("The user lives in Tokyo, Japan.", [0], "I live in Tokyo, Japan")],
        ("The user lives in Tokyo, Japan.", "known", TOKYO_ID),
        content="I live in Tokyo, Japan.",
    )
    assert decisions(receipt) == ["KNOWN"] and receipt.candidates[0].matched_id == TOKYO_ID
    after = written_rows(store, scope)
    assert after["memory_records"] == before["memory_records"]  # reinforced, not written
    assert chunk(store, scope, TOKYO).reinforcement_count == 1


def test_a_revision_of_a_memory_that_does_not_exist_is_rejected(
    store: MemoryStore, scope: ScopeRef
) -> None:
    _form_tokyo(store, scope)
    receipt = _revise(
        store, scope, [fact(OSAKA, [0], "I moved to Osaka")], (OSAKA, "revised", "chk_missing")
    )
    (candidate,) = receipt.candidates
    assert candidate.decision is Decision.REJECTED and candidate.matched_id is None
    assert "chk_missing" in (candidate.rejection_reason or "")
    assert "does not exist" in (candidate.rejection_reason or "")
    assert chunk(store, scope, TOKYO).invalid_at is None


def test_a_memory_of_another_scope_does_not_exist_here(store: MemoryStore, scope: ScopeRef) -> None:
    other = ScopeRef(enterprise_id=scope.enterprise_id, scope_id=scope.scope_id + "-other")
    kyoto = "The user lives in Kyoto."
    commit_items(store, other, chunks=[ChunkInput(text=kyoto)])
    _form_tokyo(store, scope)
    receipt = _revise(
        store,
        scope,
        [fact(OSAKA, [0], "I moved to Osaka")],
        (OSAKA, "revised", rules.chunk_id(kyoto, None)),
    )
    assert decisions(receipt) == ["REJECTED"]
    assert "does not exist in this workspace" in (receipt.candidates[0].rejection_reason or "")
    assert store.get_chunks(other, [rules.chunk_id(kyoto, None)])[0].invalid_at is None


def test_a_revision_of_another_memory_type_is_rejected(store: MemoryStore, scope: ScopeRef) -> None:
    _form_tokyo(store, scope)
    receipt = _revise(
        store,
        scope,
        [fact(OSAKA, [0], "I moved to Osaka", memory_type="directive")],
        (OSAKA, "revised", TOKYO_ID),
    )
    reason = receipt.candidates[0].rejection_reason or ""
    assert decisions(receipt) == ["REJECTED"]
    assert "a fact memory" in reason and "directive" in reason
    assert chunk(store, scope, TOKYO).invalid_at is None


def test_a_fact_revising_a_relationship_is_rejected(store: MemoryStore, scope: ScopeRef) -> None:
    _form_tokyo(store, scope, relationship("the user", "LIVES_IN", "Tokyo", [0], "live in Tokyo"))
    edge = rules.edge_id(node_id("the user"), "LIVES_IN", node_id("Tokyo"), FIRST)
    receipt = _revise(
        store, scope, [fact(OSAKA, [0], "I moved to Osaka")], (OSAKA, "revised", edge)
    )
    assert decisions(receipt) == ["REJECTED"]
    assert "a relationship" in (receipt.candidates[0].rejection_reason or "")
    (kept,) = store.get_edges(scope, [edge])
    assert kept.invalid_at is None


def test_a_revision_identical_to_the_record_is_rejected(
    store: MemoryStore, scope: ScopeRef
) -> None:
    _form_tokyo(store, scope)
    receipt = _revise(
        store,
        scope,
        [fact("the user lives in tokyo", [0], "live in Tokyo")],
        ("the user lives in tokyo", "revised", TOKYO_ID),
        content="I live in Tokyo.",
    )
    assert decisions(receipt) == ["REJECTED"]
    assert "identical" in (receipt.candidates[0].rejection_reason or "")
    assert chunk(store, scope, TOKYO).invalid_at is None and receipt.chunk_supersessions == 0


def test_a_revision_of_a_superseded_memory_is_rejected(store: MemoryStore, scope: ScopeRef) -> None:
    _form_tokyo(store, scope)
    commit_items(
        store,
        scope,
        supersessions=[
            SupersessionInput(
                chunk_id=TOKYO_ID,
                replacement_chunk=ChunkInput(
                    text="The user lives in Kyoto.", valid_at=at(2026, 8, 2)
                ),
            )
        ],
    )
    receipt = _revise(
        store,
        scope,
        [fact(OSAKA, [0], "I moved to Osaka")],
        (OSAKA, "revised", TOKYO_ID),
    )
    assert decisions(receipt) == ["REJECTED"]
    assert "already superseded" in (receipt.candidates[0].rejection_reason or "")


def test_a_memory_with_no_valid_at_can_be_revised_at_any_date(
    store: MemoryStore, scope: ScopeRef
) -> None:
    _form_tokyo(store, scope)  # no observedAt: Tokyo has no validAt
    receipt = _revise(
        store,
        scope,
        [fact(OSAKA, [0], "I moved to Osaka")],
        (OSAKA, "revised", TOKYO_ID),
        observed_at=at(1999, 4, 1),
    )
    assert decisions(receipt) == ["REVISED"]
    assert chunk(store, scope, TOKYO).invalid_at == at(1999, 4, 1)
    assert chunk(store, scope, OSAKA, at(1999, 4, 1)).supersedes == TOKYO_ID


def test_observed_at_is_the_revision_boundary(store: MemoryStore, scope: ScopeRef) -> None:
    model = scripted(extraction(fact(TOKYO, [0], "I live in Tokyo")))
    run(store, scope, [user("I live in Tokyo.")], model, observed_at=at(2020))
    tokyo_2020 = rules.chunk_id(TOKYO, at(2020))
    receipt = _revise(
        store,
        scope,
        [fact(OSAKA, [0], "I moved to Osaka")],
        (OSAKA, "revised", tokyo_2020),
        observed_at=at(2024, 3, 1),
    )
    assert decisions(receipt) == ["REVISED"]
    assert chunk(store, scope, TOKYO, at(2020)).invalid_at == at(2024, 3, 1)
    assert chunk(store, scope, OSAKA, at(2024, 3, 1)).valid_at == at(2024, 3, 1)


def test_a_memory_valid_from_the_conversation_time_itself_is_not_revised(
    store: MemoryStore, scope: ScopeRef
) -> None:
    model = scripted(extraction(fact(TOKYO, [0], "I live in Tokyo")))
    run(store, scope, [user("I live in Tokyo.")], model, observed_at=at(2024))
    receipt = _revise(
        store,
        scope,
        [fact(OSAKA, [0], "I moved to Osaka")],
        (OSAKA, "revised", rules.chunk_id(TOKYO, at(2024))),
        observed_at=at(2024),
    )
    assert decisions(receipt) == ["REJECTED"]


def test_a_missing_or_unknown_verdict_rejects(store: MemoryStore, scope: ScopeRef) -> None:
    _form_tokyo(store, scope)
    receipt = _revise(
        store,
        scope,
        [fact(OSAKA, [0], "I moved to Osaka"), fact("The user lives in Kyoto.", [0], "Tokyo")],
        (OSAKA, "maybe", TOKYO_ID),
    )
    assert decisions(receipt) == ["REJECTED", "REJECTED"]
    assert "'maybe'" in (receipt.candidates[0].rejection_reason or "")
    assert "no decision" in (receipt.candidates[1].rejection_reason or "")


# Candidates that touch the same memory


def test_two_revisions_of_one_fact_retire_it_once(store: MemoryStore, scope: ScopeRef) -> None:
    _form_tokyo(store, scope)
    away = "The user moved away from Tokyo."
    receipt = _revise(
        store,
        scope,
        [fact(OSAKA, [0], "I moved to Osaka"), fact(away, [0], "Tokyo was too loud")],
        (OSAKA, "revised", TOKYO_ID),
        (away, "revised", TOKYO_ID),
    )
    assert decisions(receipt) == ["REVISED", "REVISED"]
    assert [c.matched_id for c in receipt.candidates] == [TOKYO_ID, TOKYO_ID]
    assert receipt.chunk_supersessions == 1
    osaka, moved = chunk(store, scope, OSAKA, RECEIVED), chunk(store, scope, away, RECEIVED)
    assert osaka.valid_at == moved.valid_at == RECEIVED
    assert osaka.supersedes == moved.supersedes == TOKYO_ID
    tokyo = chunk(store, scope, TOKYO)
    assert (tokyo.invalid_at, tokyo.superseded_by) == (RECEIVED, osaka.id)


def test_a_new_candidate_identical_to_a_replacement_is_stored_once(
    store: MemoryStore, scope: ScopeRef
) -> None:
    _form_tokyo(store, scope)
    receipt = _revise(
        store,
        scope,
        [fact(OSAKA, [0], "I moved to Osaka"), fact(OSAKA, [0], "I moved to Osaka")],
        (0, "revised", TOKYO_ID),
        (1, "new", None),
    )
    assert decisions(receipt) == ["REVISED", "NEW"]
    assert receipt.candidates[0].matched_id == TOKYO_ID
    assert chunk(store, scope, OSAKA, RECEIVED).supersedes == TOKYO_ID
    assert store.get_chunks(scope, [rules.chunk_id(OSAKA, None)]) == []
    assert written_rows(store, scope)["memory_records"] == 2  # Tokyo and one Osaka


def test_keeping_a_memory_another_candidate_retires_is_rejected(
    store: MemoryStore, scope: ScopeRef
) -> None:
    _form_tokyo(store, scope)
    based = "The user is based in Tokyo."
    receipt = _revise(
        store,
        scope,
        [
            fact(OSAKA, [0], "I moved to Osaka"),
            fact(TOKYO, [0], "Tokyo"),  # identical: KNOWN in code
            fact(based, [0], "Tokyo"),
        ],
        (OSAKA, "revised", TOKYO_ID),
        (based, "known", TOKYO_ID),
    )
    assert decisions(receipt) == ["REVISED", "REJECTED", "REJECTED"]
    for rejected in receipt.candidates[1:]:
        assert "candidate 0 retires" in (rejected.rejection_reason or "")
    assert chunk(store, scope, TOKYO).invalid_at == RECEIVED
    assert receipt.chunk_supersessions == 1


def test_a_revision_whose_replacement_another_stores_is_rejected(
    store: MemoryStore, scope: ScopeRef
) -> None:
    home = "The user's home city is Tokyo."
    _form_tokyo(store, scope, fact(home, [0], "Tokyo"))
    home_id = rules.chunk_id(home, None)
    receipt = _revise(
        store,
        scope,
        [fact(OSAKA, [0], "I moved to Osaka"), fact(OSAKA, [0], "I moved to Osaka")],
        (0, "revised", TOKYO_ID),
        (1, "revised", home_id),
    )
    assert decisions(receipt) == ["REVISED", "REJECTED"]
    assert "already stored by candidate 0" in (receipt.candidates[1].rejection_reason or "")
    assert chunk(store, scope, home).invalid_at is None  # the memory it named stays current
    assert receipt.chunk_supersessions == 1
