"""Contract: the brief (issue 16) on both stores, through jennah.services.brief.

Identical memory compiles to identical bytes whatever the order and the commits it was
written in; a stored brief reads back as stored (text, token count, expiries); a line
whose validUntil passed is filtered when served and the ETag changes; sensitive claims
never appear; the shared variant has no last conversation; the last conversation is
found from the store's evidence (formed and reinforced claims); serving a scope that
has no stored brief writes nothing.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from jennah.domain import rules
from jennah.domain.brief import count_tokens
from jennah.domain.formation import SOURCE_STEP
from jennah.domain.models import (
    Authority,
    BriefVariant,
    ClaimUpdate,
    CommitPlan,
    Evidence,
    MemoryRecord,
    MemoryType,
    ScopeRecord,
    ScopeRef,
    Sensitivity,
    Strength,
)
from jennah.ports.store import MemoryStore
from jennah.services.brief import active_claims, compile_briefs, read_brief
from tests.contract.conftest import EMBEDDER, NOW, new_scope, row_counts

FULL, SHARED = BriefVariant.FULL, BriefVariant.SHARED


def claim(scope: ScopeRef, text: str, step: str | None = None, **fields: Any) -> MemoryRecord:
    return MemoryRecord(
        id=rules.chunk_id(text, None),
        scope=scope,
        text=text,
        summary=text,
        content_hash=rules.content_hash(text),
        metadata={SOURCE_STEP: step} if step else {},
        embedding=EMBEDDER.embed(text),
        **fields,
    )


def write(store: MemoryStore, scope: ScopeRef, *claims: MemoryRecord, **plan: Any) -> None:
    registration = ScopeRecord(scope=scope, kind="agent")
    store.apply(CommitPlan(scope=scope, registration=registration, chunks=list(claims), **plan))


def evidence(scope: ScopeRef, memory_id: str, step: str, minutes: int) -> Evidence:
    return Evidence(
        memory_id=memory_id,
        ref=f"conv://{scope.scope_id}/{step}#turn=1-2",
        quote="a quote",
        recorded_at=NOW + timedelta(minutes=minutes),
    )


def household(scope: ScopeRef) -> list[MemoryRecord]:
    return [
        claim(scope, "Sam is the dad", type=MemoryType.IDENTITY, pin=True),
        claim(scope, "Maya is Sam's daughter", type=MemoryType.RELATIONSHIP),
        claim(scope, "Ask before posting to the soccer chat", type=MemoryType.DIRECTIVE,
              strength=Strength.HARD, authority=Authority.USER_EXPLICIT, about="Soccer team"),
        claim(scope, "Prefers texts to calls", type=MemoryType.PREFERENCE,
              authority=Authority.INFERRED, about="Contact"),
        claim(scope, "Pizza night is tonight", type=MemoryType.FACT, about="Dinner", pin=True,
              valid_until=NOW + timedelta(hours=6)),
        claim(scope, "No peanuts for Maya", type=MemoryType.CONSTRAINT, strength=Strength.HARD,
              sensitivity=Sensitivity.HEALTH),
        claim(scope, "Practice moved to Thursday", type=MemoryType.FACT, about="Soccer team",
              step="frm_" + "a" * 32),
    ]  # fmt: skip


def test_identical_memory_compiles_to_identical_bytes(store: MemoryStore) -> None:
    scope_id = f"brief-{uuid.uuid4().hex[:8]}"
    one = ScopeRef(enterprise_id=f"ent-{uuid.uuid4().hex[:8]}", scope_id=scope_id)
    two = ScopeRef(enterprise_id=f"ent-{uuid.uuid4().hex[:8]}", scope_id=scope_id)
    write(store, one, *household(one))
    for c in reversed(household(two)):  # another order, one commit each
        write(store, two, c)
    first = compile_briefs(store, one, active_claims(store, one), NOW)
    second = compile_briefs(store, two, active_claims(store, two), NOW)
    assert [b.text.encode() for b in first] == [b.text.encode() for b in second]
    assert first == second
    assert first[0].token_count == count_tokens(first[0].text) <= 2000


def test_a_stored_brief_reads_back_as_stored(store: MemoryStore) -> None:
    scope = new_scope()
    write(store, scope, *household(scope))
    briefs = compile_briefs(store, scope, active_claims(store, scope), NOW)
    store.apply(CommitPlan(scope=scope, briefs=briefs))
    for compiled in briefs:
        stored = store.get_brief(scope, compiled.variant)
        assert stored is not None
        assert (stored.text, stored.token_count) == (compiled.text, compiled.token_count)
        assert stored.expiries == compiled.expiries != {}
        served = read_brief(store, scope, compiled.variant, NOW)
        assert served.text == compiled.text and served.token_count == compiled.token_count


def test_an_expired_line_is_filtered_when_served_and_the_etag_changes(
    store: MemoryStore,
) -> None:
    scope = new_scope()
    write(store, scope, *household(scope))
    store.apply(
        CommitPlan(scope=scope, briefs=compile_briefs(store, scope, active_claims(store, scope)))
    )
    before = read_brief(store, scope, FULL, NOW + timedelta(hours=6) - timedelta(seconds=1))
    after = read_brief(store, scope, FULL, NOW + timedelta(hours=6))
    assert "Pizza night" in before.text and '"Dinner"' in before.text
    assert "Pizza night" not in after.text and '"Dinner"' not in after.text
    assert "Ask before posting" in after.text
    assert after.etag != before.etag and after.token_count == count_tokens(after.text)
    assert read_brief(store, scope, FULL, NOW + timedelta(hours=7)).etag == after.etag


def test_sensitive_claims_never_appear_and_shared_has_no_last_conversation(
    store: MemoryStore,
) -> None:
    scope = new_scope()
    write(store, scope, *household(scope))
    full, shared = compile_briefs(store, scope, active_claims(store, scope), NOW)
    assert "peanuts" not in full.text and "peanuts" not in shared.text
    assert f"## Last conversation conv://{scope.scope_id}/frm_" in full.text
    assert "Last conversation" not in shared.text and "Practice moved" not in shared.text
    assert "Practice moved" in full.text  # it is in the topic index's subject count only
    assert '- about "Soccer team": 2\n' in shared.text


def test_the_last_conversation_comes_from_the_stores_evidence(store: MemoryStore) -> None:
    scope = new_scope()
    old, new = "frm_" + "1" * 32, "frm_" + "2" * 32
    formed = [claim(scope, f"Fact {i} from the first chat", step=old) for i in range(3)]
    write(store, scope, *formed, evidence=[evidence(scope, c.id, old, 0) for c in formed])
    again = store.get_chunks(scope, [formed[0].id])[0]
    added = claim(scope, "Fact from the second chat", step=new)
    write(
        store, scope, added,
        evidence=[evidence(scope, added.id, new, 10), evidence(scope, again.id, new, 10)],
        claim_updates=[ClaimUpdate(memory_id=again.id, expected_revision=again.revision,
                                   reinforcement_count=1,
                                   last_reinforced_at=NOW + timedelta(minutes=10))],
    )  # fmt: skip
    full = compile_briefs(store, scope, active_claims(store, scope), NOW)[0].text
    section = full.split(f"## Last conversation conv://{scope.scope_id}/{new}\n")[1]
    assert section.startswith("- (")
    assert f'- (formed) "Fact from the second chat" memory://{scope.scope_id}/{added.id}' in full
    assert f'- (reinforced) "Fact 0 from the first chat" memory://{scope.scope_id}/' in full
    assert "Fact 1 from the first chat" not in section


def test_serving_a_scope_without_a_stored_brief_writes_nothing(store: MemoryStore) -> None:
    scope = new_scope()
    write(store, scope, *household(scope))
    counts = row_counts(store, scope)
    served = read_brief(store, scope, FULL, NOW)
    assert "Ask before posting" in served.text
    assert store.get_brief(scope, FULL) is None and row_counts(store, scope) == counts
