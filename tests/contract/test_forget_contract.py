"""Contract: forget = retract + suppress (issue 17), on SQLite and the Spanner emulator.

Formation runs with the scripted model and the contract's bag-of-words embedder (a
paraphrase here shares most words, which scores above the bound for that embedder; the
bound itself is measured for MiniLM by bench/suppression.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from jennah.domain import okf, rules, suppression
from jennah.domain.models import ScopeRef, Status
from jennah.domain.suppression import GROUP_CHANGED, suppression_id
from jennah.errors import FailedPrecondition, InvalidArgument, InvalidFields, NotFound
from jennah.ports.store import MemoryStore
from jennah.services import forgetting, paging
from jennah.services import okf as okf_service
from tests.contract.conftest import EMBEDDER, new_scope, row_counts
from tests.contract.formation_support import (
    decisions,
    extraction,
    fact,
    run,
    scripted,
    user,
    written_rows,
)

PEANUTS = "The user is allergic to peanuts."
PARAPHRASE = "The user is badly allergic to peanuts."
CHESS = "The user plays chess on Sundays."
FORGOT_AT = datetime(2026, 8, 26, 9, 0, tzinfo=UTC)
LATER = datetime(2026, 9, 1, 9, 0, tzinfo=UTC)


def _ctx(store: MemoryStore, scope: ScopeRef) -> forgetting.Forgetting:
    return forgetting.Forgetting(store, EMBEDDER, scope, "user:ana", lambda: FORGOT_AT)


def _form(
    store: MemoryStore, scope: ScopeRef, *texts: str, received: datetime = LATER
) -> list[str]:
    said = " ".join(texts)
    model = scripted(extraction(*(fact(text, [0]) for text in texts)))
    receipt = run(store, scope, [user(said)], model, received=received)
    return decisions(receipt)


def _formed(store: MemoryStore, scope: ScopeRef, *texts: str) -> list[str]:
    """Form the texts in a first conversation; their claim ids."""
    assert _form(store, scope, *texts, received=datetime(2026, 8, 25, tzinfo=UTC)) == ["NEW"] * len(
        texts
    )
    return [rules.chunk_id(text, None) for text in texts]


def test_forget_retracts_the_claim_and_records_one_suppression(
    store: MemoryStore, scope: ScopeRef
) -> None:
    (peanuts,) = _formed(store, scope, PEANUTS)
    done = forgetting.forget(_ctx(store, scope), peanuts)

    assert done.memory.status is Status.RETRACTED
    assert done.memory.invalid_at == FORGOT_AT  # its window closed: history kept
    assert done.suppression.id == suppression_id(peanuts)
    assert (done.suppression.memory_id, done.suppression.text) == (peanuts, PEANUTS)
    assert done.suppression.created_by == "user:ana"
    (stored,) = store.list_suppressions(scope, None, 10)
    assert stored.id == done.suppression.id and stored.embedding is not None
    assert stored.created_at is not None
    assert store.get_chunks(scope, [peanuts])[0].status is Status.RETRACTED  # never deleted
    assert store.list_change_log(scope, 10)[0].change == "retracted"


def test_forgetting_a_retracted_claim_is_refused_and_changes_nothing(
    store: MemoryStore, scope: ScopeRef
) -> None:
    (peanuts,) = _formed(store, scope, PEANUTS)
    forgetting.forget(_ctx(store, scope), peanuts)
    before = row_counts(store, scope)
    with pytest.raises(FailedPrecondition) as refused:
        forgetting.forget(_ctx(store, scope), peanuts)
    assert refused.value.reason == "ALREADY_RETRACTED"
    assert row_counts(store, scope) == before
    with pytest.raises(NotFound):
        forgetting.forget(_ctx(store, scope), "chk_missing")


def test_forget_then_form_the_same_fact_again_is_rejected_and_writes_nothing(
    store: MemoryStore, scope: ScopeRef
) -> None:
    (peanuts,) = _formed(store, scope, PEANUTS)
    forgetting.forget(_ctx(store, scope), peanuts)
    before = written_rows(store, scope)

    model = scripted(extraction(fact(PEANUTS, [0])))
    receipt = run(store, scope, [user(PEANUTS)], model, received=LATER)

    (outcome,) = receipt.candidates
    assert outcome.decision.value == "MEMORY_DECISION_REJECTED"
    assert outcome.rejection_reason is not None
    assert f"suppressed by {suppression_id(peanuts)}" in outcome.rejection_reason
    assert f"(forgotten memory {peanuts})" in outcome.rejection_reason
    # no claim, no evidence line, no reinforcement, no step: only the scope as it was
    assert written_rows(store, scope) == before
    assert store.get_chunks(scope, [peanuts])[0].reinforcement_count == 0


def test_forget_then_form_a_paraphrase_is_rejected(store: MemoryStore, scope: ScopeRef) -> None:
    (peanuts,) = _formed(store, scope, PEANUTS)
    forgetting.forget(_ctx(store, scope), peanuts)
    before = written_rows(store, scope)

    assert _form(store, scope, PARAPHRASE, CHESS) == ["REJECTED", "NEW"]
    after = written_rows(store, scope)
    assert after["memory_records"] == before["memory_records"] + 1  # chess only
    assert store.get_chunks(scope, [rules.chunk_id(PARAPHRASE, None)]) == []


def test_forget_then_form_a_near_fact_with_another_day_or_person_forms_it(
    store: MemoryStore, scope: ScopeRef
) -> None:
    """Close in embedding but another weekday, another person: different facts, formed
    (the guard of domain.distinguishing; without it both score above the bound)."""
    (chess,) = _formed(store, scope, CHESS)
    forgetting.forget(_ctx(store, scope), chess)
    other_day = "The user plays chess on Mondays."
    other_person = "The user's brother plays chess on Sundays."
    rule = store.list_suppressions(scope, None, 10)[0]
    for text in (other_day, other_person):
        assert suppression.cosine(EMBEDDER.embed(text), rule.embedding or []) >= (
            suppression.SUPPRESSION_SIMILARITY
        )

    assert _form(store, scope, other_day, other_person) == ["NEW", "NEW"]
    assert len(store.get_chunks(scope, [rules.chunk_id(other_day, None)])) == 1


def test_deleting_the_suppression_lets_the_fact_form_again(
    store: MemoryStore, scope: ScopeRef
) -> None:
    (peanuts,) = _formed(store, scope, PEANUTS)
    done = forgetting.forget(_ctx(store, scope), peanuts)
    forgetting.delete_suppression(store, scope, done.suppression.id)
    assert store.list_suppressions(scope, None, 10) == []

    assert _form(store, scope, PEANUTS) == ["NEW"]
    current = [r for r in store.list_claims(scope, [Status.ACTIVE], None, 10) if r.text == PEANUTS]
    assert len(current) == 1 and current[0].id != peanuts  # a new claim
    assert store.get_chunks(scope, [peanuts])[0].status is Status.RETRACTED  # stays retracted
    with pytest.raises(NotFound):
        forgetting.delete_suppression(store, scope, done.suppression.id)


def test_a_suppression_of_one_scope_never_affects_another(store: MemoryStore) -> None:
    scope_a = new_scope()
    scope_b = ScopeRef(enterprise_id=scope_a.enterprise_id, scope_id=scope_a.scope_id + "-b")
    (peanuts,) = _formed(store, scope_a, PEANUTS)
    _formed(store, scope_b, CHESS)
    done = forgetting.forget(_ctx(store, scope_a), peanuts)

    assert store.list_suppressions(scope_b, None, 10) == []
    assert _form(store, scope_b, PEANUTS) == ["NEW"]
    with pytest.raises(NotFound):
        forgetting.delete_suppression(store, scope_b, done.suppression.id)
    assert len(store.list_suppressions(scope_a, None, 10)) == 1


def test_group_forget_counts_then_retracts_all_with_a_suppression_each(
    store: MemoryStore, scope: ScopeRef
) -> None:
    ids = _formed(store, scope, PEANUTS, CHESS)
    about = {claim.about for claim in store.get_chunks(scope, ids)}
    assert len(about) == 1
    selector = forgetting.GroupSelector(about=about.pop().upper())  # any case
    before = row_counts(store, scope)

    counted = forgetting.forget_group(
        _ctx(store, scope), selector, validate_only=True, expected_count=None
    )
    assert (counted.count, counted.memory_ids, counted.suppressions) == (2, sorted(ids), [])
    assert row_counts(store, scope) == before  # validateOnly writes nothing

    done = forgetting.forget_group(_ctx(store, scope), selector, validate_only=False,
                                   expected_count=2)  # fmt: skip
    assert done.count == 2
    assert sorted(s.memory_id for s in done.suppressions) == sorted(ids)
    assert {r.status for r in store.get_chunks(scope, ids)} == {Status.RETRACTED}
    assert len(store.list_suppressions(scope, None, 10)) == 2
    again = forgetting.forget_group(_ctx(store, scope), selector, validate_only=True,
                                    expected_count=None)  # fmt: skip
    assert again.count == 0  # retracted claims are not forgotten twice


def test_group_forget_with_a_stale_count_is_refused_and_writes_nothing(
    store: MemoryStore, scope: ScopeRef
) -> None:
    ids = _formed(store, scope, PEANUTS, CHESS)
    selector = forgetting.GroupSelector(about=store.get_chunks(scope, ids)[0].about)
    before = row_counts(store, scope)
    with pytest.raises(FailedPrecondition) as refused:
        forgetting.forget_group(_ctx(store, scope), selector, validate_only=False,
                                expected_count=1)  # fmt: skip
    assert refused.value.reason == GROUP_CHANGED
    assert refused.value.metadata["expectedCount"] == "1"
    assert refused.value.metadata["actualCount"] == "2"
    assert row_counts(store, scope) == before
    with pytest.raises(InvalidArgument) as missing:
        forgetting.forget_group(_ctx(store, scope), selector, validate_only=False,
                                expected_count=None)  # fmt: skip
    assert missing.value.metadata["field"] == "expectedCount"


def test_destroying_a_scope_erases_its_suppressions(store: MemoryStore, scope: ScopeRef) -> None:
    (peanuts,) = _formed(store, scope, PEANUTS)
    forgetting.forget(_ctx(store, scope), peanuts)
    assert row_counts(store, scope)["suppressions"] == 1
    store.destroy_scope(scope)
    assert store.list_suppressions(scope, None, 10) == []
    assert not any(row_counts(store, scope).values())


def test_suppressions_list_page_by_page(store: MemoryStore, scope: ScopeRef) -> None:
    ids = _formed(store, scope, PEANUTS, CHESS, "The user reads poetry at night.")
    for memory_id in ids:
        forgetting.forget(_ctx(store, scope), memory_id)
    first = forgetting.list_suppressions(store, scope, paging.Paging(2), "user:ana")
    assert len(first.items) == 2 and first.next_page_token
    second = forgetting.list_suppressions(
        store, scope, paging.Paging(2, first.next_page_token), "user:ana"
    )
    listed = [rule.memory_id for rule in first.items + second.items]
    assert sorted(listed) == sorted(ids) and second.next_page_token is None
    assert all(rule.embedding is None for rule in first.items)


# -- OKF export / import carries the suppression rules ---------------------------------


def test_a_forgotten_fact_stays_forgotten_after_export_and_import(
    store: MemoryStore, scope: ScopeRef
) -> None:
    (peanuts,) = _formed(store, scope, PEANUTS)
    rule = forgetting.forget(_ctx(store, scope), peanuts).suppression
    files = okf_service.export_files(store, scope)
    assert okf.SUPPRESSIONS_FILE in files

    copy = new_scope(scope.enterprise_id)
    result = okf_service.import_files(files, copy, store, EMBEDDER)
    assert result.suppressions == 1
    (imported,) = store.list_suppressions(copy, None, 10)
    assert (imported.id, imported.memory_id, imported.text) == (rule.id, peanuts, PEANUTS)
    assert imported.embedding is not None  # recomputed: the paraphrase check works
    assert okf_service.export_files(store, copy) == files  # createdAt kept: same bytes

    before = written_rows(store, copy)
    model = scripted(extraction(fact(PEANUTS, [0]), fact(PARAPHRASE, [0])))
    receipt = run(store, copy, [user(f"{PEANUTS} {PARAPHRASE}")], model, received=LATER)
    assert [c.decision.value for c in receipt.candidates] == ["MEMORY_DECISION_REJECTED"] * 2
    assert all(f"suppressed by {rule.id}" in (c.rejection_reason or "") for c in receipt.candidates)
    assert written_rows(store, copy) == before


def test_a_bad_suppression_line_names_file_line_and_field_and_writes_nothing(
    store: MemoryStore, scope: ScopeRef
) -> None:
    (peanuts,) = _formed(store, scope, PEANUTS)
    forgetting.forget(_ctx(store, scope), peanuts)
    files = okf_service.export_files(store, scope)
    good = files[okf.SUPPRESSIONS_FILE].decode()
    files[okf.SUPPRESSIONS_FILE] = (
        good
        + '{"id":"sup_x","memoryId":"has space","text":""}\n'
        + '{"id":"sup_y","memoryId":"chk_y","text":"t","createdAt":"soon"}\n'
        + good
    ).encode()
    copy = new_scope(scope.enterprise_id)
    with pytest.raises(InvalidFields) as refused:
        okf_service.import_files(files, copy, store, EMBEDDER)
    assert [field for field, _ in refused.value.violations] == [
        "suppressions.jsonl: line 2: memoryId",
        "suppressions.jsonl: line 2: text",
        "suppressions.jsonl: line 3: createdAt",
        "suppressions.jsonl: line 4: id",  # the first line's rule again
    ]
    assert store.list_suppressions(copy, None, 10) == []
    assert store.list_claims(copy, None, None, 10) == []


def test_an_import_into_a_scope_holding_only_suppressions_is_refused(
    store: MemoryStore, scope: ScopeRef
) -> None:
    (peanuts,) = _formed(store, scope, PEANUTS)
    forgetting.forget(_ctx(store, scope), peanuts)
    files = {okf.SUPPRESSIONS_FILE: okf_service.export_files(store, scope)[okf.SUPPRESSIONS_FILE]}
    copy = new_scope(scope.enterprise_id)
    okf_service.import_files(files, copy, store, EMBEDDER)
    with pytest.raises(FailedPrecondition) as refused:
        okf_service.import_files(files, copy, store, EMBEDDER)
    assert refused.value.reason == okf_service.SCOPE_NOT_EMPTY
