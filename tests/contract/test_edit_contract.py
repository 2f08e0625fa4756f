"""Contract: edit = supersede (issue 17, design §10 "Correcting one claim") on both stores.

The person's words become a new claim (authority user_explicit, confidence 1, the old
claim's type, subject, links and weight) and the old claim is superseded: lineage both
ways, the old window closed where the new one opens, the old revision + 1, one evidence
line under the new claim's own memory:// reference. A stale revision (a concurrent change
between the read and the write) is refused with nothing of the edit written; only an
active claim can be edited; a missing one is NOT_FOUND. After the edit the brief and
memory:query use the new words, and the old claim stays readable by id with its evidence.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from jennah.domain import edit as edit_rules
from jennah.domain import rules
from jennah.domain.formation import SOURCE_STEP
from jennah.domain.models import (
    Authority,
    BriefVariant,
    ClaimUpdate,
    CommitPlan,
    Durability,
    Evidence,
    MemoryRecord,
    MemoryType,
    ScopeRecord,
    ScopeRef,
    Sensitivity,
    Status,
    Strength,
)
from jennah.errors import Aborted, FailedPrecondition, InvalidArgument, NotFound
from jennah.ports.store import MemoryStore
from jennah.services import lifecycle
from jennah.services.brief import read_brief
from jennah.services.edit import EditCommand, Edited, edit
from tests.contract.conftest import EMBEDDER, NOW, new_scope, one_chunk, row_counts, search_ids

STEP = "frm_" + "e" * 32
OLD_TEXT = "Soccer practice is on Tuesdays at the park"
NEW_TEXT = "Soccer practice moved to Thursdays at the school gym"


def claim(scope: ScopeRef, text: str, **fields: Any) -> MemoryRecord:
    return MemoryRecord(
        id=rules.chunk_id(text, None),
        scope=scope,
        text=text,
        summary=fields.pop("summary", text),
        content_hash=rules.content_hash(text),
        embedding=EMBEDDER.embed(text),
        **fields,
    )


def seed(store: MemoryStore, scope: ScopeRef, *claims: MemoryRecord, **plan: Any) -> None:
    registration = ScopeRecord(scope=scope, kind="agent")
    store.apply(CommitPlan(scope=scope, registration=registration, chunks=list(claims), **plan))


def practice(scope: ScopeRef) -> MemoryRecord:
    """A claim with every field an edit carries over set away from its default."""
    return claim(
        scope, OLD_TEXT, summary="Practice: Tuesdays, the park", type=MemoryType.DIRECTIVE,
        about="Soccer team", when_to_use="When planning the week", applies_to=["maya", "team"],
        strength=Strength.HARD, pin=True, authority=Authority.INFERRED, confidence=0.7,
        durability=Durability.SEASONAL, valid_until=NOW + timedelta(days=90),
        related=["chk_other"], metadata={"team": "u10", SOURCE_STEP: STEP},
        extensions={"colour": '"blue"', "jennah_formed_at": '"2029-01-01T00:00:00Z"'},
    )  # fmt: skip


def run_edit(
    store: MemoryStore,
    scope: ScopeRef,
    memory_id: str,
    text: str = NEW_TEXT,
    summary: str | None = None,
) -> Edited:
    command = EditCommand(scope=scope, memory_id=memory_id, text=text, summary=summary)
    return edit(command, store, EMBEDDER, lambda: NOW, passes=lifecycle.INLINE)


def test_an_edit_supersedes_with_lineage_both_ways(store: MemoryStore) -> None:
    scope = new_scope()
    old = practice(scope)
    quote = Evidence(
        memory_id=old.id,
        ref=f"conv://{scope.scope_id}/{STEP}#turn=1-2",
        quote="practice is on Tuesdays",
        recorded_at=NOW - timedelta(days=1),
    )
    seed(store, scope, old, evidence=[quote])
    edited = run_edit(store, scope, old.id, summary="Practice: Thursdays, the gym")
    new, before = edited.memory, edited.superseded
    assert new.id == rules.chunk_id(NEW_TEXT, NOW) != old.id
    assert (new.supersedes, before.superseded_by) == (old.id, new.id)
    assert (new.status, before.status) == (Status.ACTIVE, Status.SUPERSEDED)
    assert (new.valid_at, before.invalid_at) == (NOW, NOW)
    assert (new.revision, before.revision) == (1, 2)
    assert (new.text, new.summary) == (NEW_TEXT, "Practice: Thursdays, the gym")
    assert (new.authority, new.confidence) == (Authority.USER_EXPLICIT, 1.0)
    kept = ("type", "about", "when_to_use", "applies_to", "strength", "pin", "durability",
            "valid_until", "sensitivity", "related")  # fmt: skip
    assert {f: getattr(new, f) for f in kept} == {f: getattr(old, f) for f in kept}
    # the service's own keys stay behind: the edit is no part of the old conversation
    assert new.metadata == {"team": "u10"} and new.extensions == {"colour": '"blue"'}
    assert new.created_at is not None and new.reinforcement_count == 0
    assert new.embedding is not None and new.embedding == pytest.approx(EMBEDDER.embed(NEW_TEXT))
    # stored as answered, both ways, and each claim's evidence its own
    assert one_chunk(store, scope, new.id).supersedes == old.id
    assert one_chunk(store, scope, old.id).superseded_by == new.id
    (line,) = store.list_evidence(scope, [new.id])
    assert (line.ref, line.quote) == (f"memory://{scope.scope_id}/{new.id}", NEW_TEXT)
    assert store.list_evidence(scope, [old.id]) == [quote]


def test_a_summary_left_out_is_derived_from_the_text(store: MemoryStore) -> None:
    scope = new_scope()
    old = claim(scope, "Likes tea")
    seed(store, scope, old)
    long_line = "Prefers green tea " + "x" * 300 + "\nsecond line"
    new = run_edit(store, scope, old.id, long_line, summary="  ").memory
    assert new.summary == long_line.split("\n")[0][:199].rstrip() + "…"
    assert len(new.summary) == 200


def test_edits_chain_and_a_superseded_claim_names_its_successor(store: MemoryStore) -> None:
    scope = new_scope()
    first = claim(scope, "Coach is Ana")
    seed(store, scope, first)
    second = run_edit(store, scope, first.id, "Coach is Ana Ruiz").memory
    later = lambda: NOW + timedelta(minutes=1)  # noqa: E731
    third = edit(EditCommand(scope=scope, memory_id=second.id, text="Coach is Bea Ruiz"),
                 store, EMBEDDER, later).memory  # fmt: skip
    chain = {c.id: c for c in store.get_chunks(scope, [first.id, second.id, third.id])}
    assert chain[first.id].superseded_by == second.id and chain[second.id].supersedes == first.id
    assert chain[second.id].superseded_by == third.id and third.supersedes == second.id
    assert chain[second.id].invalid_at == third.valid_at == NOW + timedelta(minutes=1)
    with pytest.raises(FailedPrecondition) as refused:
        run_edit(store, scope, first.id, "Coach is Cy")
    assert refused.value.reason == edit_rules.CLAIM_NOT_ACTIVE
    assert refused.value.metadata == {"memoryId": first.id, "status": "superseded",
                                      "supersededBy": second.id}  # fmt: skip
    assert "superseded" in refused.value.message and second.id in refused.value.message


class ConcurrentStore:
    """The store, with another writer's change of one claim landing just before the edit's
    transaction (after the edit read the claim)."""

    def __init__(self, store: MemoryStore, change: Callable[[], None]) -> None:
        self._store, self._change = store, change

    def apply(self, plan: CommitPlan) -> Any:
        self._change()
        return self._store.apply(plan)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_a_stale_revision_is_refused_and_nothing_is_written(store: MemoryStore) -> None:
    scope = new_scope()
    old = claim(scope, OLD_TEXT)
    seed(store, scope, old)
    reinforce = ClaimUpdate(memory_id=old.id, expected_revision=1, reinforcement_count=1,
                            last_reinforced_at=NOW)  # fmt: skip
    racing = ConcurrentStore(
        store, lambda: store.apply(CommitPlan(scope=scope, claim_updates=[reinforce]))
    )
    counts = row_counts(store, scope)
    with pytest.raises(Aborted) as refused:
        edit(EditCommand(scope=scope, memory_id=old.id, text=NEW_TEXT), racing,  # type: ignore[arg-type]
             EMBEDDER, lambda: NOW)  # fmt: skip
    assert refused.value.reason == rules.REVISION_CHANGED
    assert row_counts(store, scope) == counts  # the concurrent change updated a row in place
    after = one_chunk(store, scope, old.id)
    assert (after.status, after.superseded_by, after.invalid_at) == (Status.ACTIVE, None, None)
    assert (after.revision, after.reinforcement_count) == (2, 1)
    assert store.get_chunks(scope, [rules.chunk_id(NEW_TEXT, NOW)]) == []
    assert store.list_evidence(scope, [rules.chunk_id(NEW_TEXT, NOW)]) == []


@pytest.mark.parametrize(
    ("fields", "status"),
    [
        ({"status": Status.RETRACTED}, "retracted"),
        ({"status": Status.DORMANT}, "dormant"),
        ({"status": Status.EXPIRED}, "expired"),
        ({"valid_until": NOW - timedelta(seconds=1)}, "expired"),  # not yet marked by a pass
    ],
)
def test_only_an_active_claim_can_be_edited(
    store: MemoryStore, fields: dict[str, Any], status: str
) -> None:
    scope = new_scope()
    old = claim(scope, OLD_TEXT, **fields)
    seed(store, scope, old)
    counts = row_counts(store, scope)
    with pytest.raises(FailedPrecondition) as refused:
        run_edit(store, scope, old.id)
    assert refused.value.reason == edit_rules.CLAIM_NOT_ACTIVE
    assert refused.value.metadata == {"memoryId": old.id, "status": status}
    assert f"is {status}" in refused.value.message
    assert row_counts(store, scope) == counts


def test_a_missing_claim_and_bad_words_change_nothing(store: MemoryStore) -> None:
    scope = new_scope()
    old = claim(scope, OLD_TEXT)
    seed(store, scope, old)
    counts = row_counts(store, scope)
    with pytest.raises(NotFound) as missing:
        run_edit(store, scope, "chk_missing")
    assert missing.value.metadata == {"memoryId": "chk_missing"}
    for text, summary, field in (("  ", None, "text"), ("x" * (rules.MAX_TEXT_LENGTH + 1), None,
                                 "text"), ("ok", "s" * 1025, "summary")):  # fmt: skip
        with pytest.raises(InvalidArgument) as bad:
            run_edit(store, scope, old.id, text, summary=summary)
        assert bad.value.metadata["field"] == field
    assert row_counts(store, scope) == counts


def test_the_brief_and_query_use_the_new_words_and_the_old_stays_readable(
    store: MemoryStore,
) -> None:
    scope = new_scope()
    old = claim(scope, OLD_TEXT, type=MemoryType.DIRECTIVE, about="Soccer team")
    seed(store, scope, old, claim(scope, "Sam is the dad", type=MemoryType.IDENTITY))
    lifecycle.pass_inline(store, scope, NOW)
    assert OLD_TEXT in read_brief(store, scope, BriefVariant.FULL, NOW).text
    new = run_edit(store, scope, old.id).memory
    for variant in BriefVariant:
        text = read_brief(store, scope, variant, NOW).text
        assert store.get_brief(scope, variant) is not None
        assert f'"{NEW_TEXT}" memory://{scope.scope_id}/{new.id}' in text
        assert OLD_TEXT not in text and old.id not in text
    found = search_ids(store, scope, "soccer practice day")
    assert new.id in found and old.id not in found
    assert one_chunk(store, scope, old.id).text == OLD_TEXT  # history stays readable


def test_an_edit_into_sensitive_words_keeps_the_claim_out_of_the_brief(
    store: MemoryStore,
) -> None:
    scope = new_scope()
    old = claim(scope, "Maya has practice on Tuesday", type=MemoryType.FACT, pin=True)
    seed(store, scope, old)
    new = run_edit(store, scope, old.id, "Maya takes her asthma medication before practice").memory
    assert new.sensitivity is Sensitivity.HEALTH
    brief = read_brief(store, scope, BriefVariant.FULL, NOW).text
    assert "asthma" not in brief and new.id not in brief and old.id not in brief
    sensitive = claim(scope, "Savings: 4000 in the bank", sensitivity=Sensitivity.FINANCES)
    seed(store, scope, sensitive)
    again = run_edit(store, scope, sensitive.id, "The bank account is in Sam's name").memory
    assert again.sensitivity is Sensitivity.FINANCES  # a label never loosens
