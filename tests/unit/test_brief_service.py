"""The brief's service (jennah.services.brief) on the FakeStore: both variants, the last
conversation from formations' provenance, serving with expired lines filtered."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from jennah.domain.brief import count_tokens, etag
from jennah.domain.formation import SOURCE_STEP
from jennah.domain.models import (
    BriefVariant,
    ClaimUpdate,
    CommitPlan,
    Evidence,
    MemoryRecord,
    MemoryType,
    ScopeRef,
    Status,
)
from jennah.services import brief
from tests.unit.fakes import FakeStore

SCOPE = ScopeRef(enterprise_id="local", scope_id="team.x")
T0 = datetime(2026, 11, 1, tzinfo=UTC)


def record(memory_id: str, step: str | None = None, **fields: object) -> MemoryRecord:
    metadata = {SOURCE_STEP: step} if step else {}
    return MemoryRecord(
        id=memory_id, scope=SCOPE, text=f"text of {memory_id}", metadata=metadata, **fields
    )


def evidence(memory_id: str, step: str, at: datetime) -> Evidence:
    return Evidence(
        memory_id=memory_id, ref=f"conv://team.x/{step}#turn=1-1", quote="q", recorded_at=at
    )


def form(store: FakeStore, step: str, ids: list[str], at: datetime, **fields: object) -> None:
    """What a formation writes: the claims with their step, and an evidence line each."""
    store.apply(
        CommitPlan(
            scope=SCOPE,
            chunks=[record(i, step, **fields) for i in ids],
            evidence=[evidence(i, step, at) for i in ids],
        )
    )


def reinforce(store: FakeStore, step: str, ids: list[str], at: datetime) -> None:
    claims = {c.id: c for c in store.get_chunks(SCOPE, ids)}
    store.apply(
        CommitPlan(
            scope=SCOPE,
            claim_updates=[
                ClaimUpdate(
                    memory_id=i,
                    expected_revision=claims[i].revision,
                    reinforcement_count=claims[i].reinforcement_count + 1,
                    last_reinforced_at=at,
                )
                for i in ids
            ],
            evidence=[evidence(i, step, at) for i in ids],
        )
    )


def active(store: FakeStore) -> list[MemoryRecord]:
    return brief.active_claims(store, SCOPE)


def test_compile_briefs_answers_both_variants_from_the_claims_given() -> None:
    store = FakeStore()
    form(store, "frm_1", ["a", "b"], T0)
    briefs = brief.compile_briefs(store, SCOPE, active(store))
    assert [b.variant for b in briefs] == [BriefVariant.FULL, BriefVariant.SHARED]
    full, shared = briefs
    assert "## Last conversation conv://team.x/frm_1" in full.text
    assert "Last conversation" not in shared.text
    assert full.token_count == count_tokens(full.text)
    # only the claims given: a claim the caller has retired is not read back from the store
    only_b = brief.compile_briefs(store, SCOPE, [c for c in active(store) if c.id == "b"])
    assert "team.x/a" not in only_b[0].text and "team.x/b" in only_b[0].text


def test_the_last_conversation_is_the_newest_formation_with_what_it_formed() -> None:
    store = FakeStore()
    form(store, "frm_1", ["a", "b"], T0)
    form(store, "frm_2", ["c"], T0 + timedelta(days=1))
    store.apply(CommitPlan(scope=SCOPE, chunks=[record("committed")]))  # no conversation
    last = brief.last_conversation(store, SCOPE, active(store))
    assert last is not None
    assert (last.step_id, last.formed, last.reinforced) == ("frm_2", {"c"}, set())


def test_a_formation_that_only_reinforced_is_the_last_conversation() -> None:
    store = FakeStore()
    form(store, "frm_1", ["a", "b"], T0)
    form(store, "frm_2", ["c"], T0 + timedelta(days=1))
    reinforce(store, "frm_3", ["a"], T0 + timedelta(days=2))
    last = brief.last_conversation(store, SCOPE, active(store))
    assert last is not None
    assert (last.step_id, last.formed, last.reinforced) == ("frm_3", set(), {"a"})
    full = brief.compile_briefs(store, SCOPE, active(store))[0].text
    assert '- (reinforced) "text of a" memory://team.x/a' in full


def test_a_formation_that_formed_and_reinforced_lists_both() -> None:
    store = FakeStore()
    form(store, "frm_1", ["a", "b"], T0)
    later = T0 + timedelta(days=1)
    form(store, "frm_2", ["c"], later)
    reinforce(store, "frm_2", ["b"], later)
    last = brief.last_conversation(store, SCOPE, active(store))
    assert last is not None
    assert (last.step_id, last.formed, last.reinforced) == ("frm_2", {"c"}, {"b"})


def test_no_formation_no_last_conversation() -> None:
    store = FakeStore()
    store.apply(CommitPlan(scope=SCOPE, chunks=[record("x")]))
    assert brief.last_conversation(store, SCOPE, active(store)) is None
    full = brief.compile_briefs(store, SCOPE, active(store))[0].text
    assert "## Last conversation\n- (none)\n" in full


def test_read_brief_without_a_stored_brief_compiles_one_and_writes_nothing() -> None:
    store = FakeStore()
    form(store, "frm_1", ["a"], T0, type=MemoryType.DIRECTIVE)
    store.apply(CommitPlan(scope=SCOPE, chunks=[record("old", status=Status.DORMANT)]))
    plans = len(store.plans)
    served = brief.read_brief(store, SCOPE, BriefVariant.FULL, T0)
    assert len(store.plans) == plans and store.get_brief(SCOPE, BriefVariant.FULL) is None
    assert "memory://team.x/a" in served.text and "team.x/old" not in served.text
    assert served.etag == etag(served.text) and served.token_count == count_tokens(served.text)
    again = brief.read_brief(store, SCOPE, BriefVariant.FULL, T0)
    assert again == served


def test_read_brief_serves_the_stored_brief_without_lines_whose_expiry_passed() -> None:
    store = FakeStore()
    until = T0 + timedelta(hours=3)
    form(store, "frm_1", ["pizza"], T0, type=MemoryType.DIRECTIVE, valid_until=until)
    form(store, "frm_0", ["call"], T0 - timedelta(days=1), type=MemoryType.DIRECTIVE)
    store.apply(
        CommitPlan(scope=SCOPE, briefs=brief.compile_briefs(store, SCOPE, active(store), T0))
    )
    before = brief.read_brief(store, SCOPE, BriefVariant.FULL, until - timedelta(seconds=1))
    stored = store.get_brief(SCOPE, BriefVariant.FULL)
    assert stored is not None and before.text == stored.text
    assert before.token_count == stored.token_count
    after = brief.read_brief(store, SCOPE, BriefVariant.FULL, until)
    assert "team.x/pizza" in before.text and "team.x/pizza" not in after.text
    assert "team.x/call" in after.text
    assert after.etag != before.etag and after.token_count == count_tokens(after.text)
    assert after.token_count < before.token_count


def test_the_stored_brief_is_served_as_stored_even_when_claims_changed_since() -> None:
    """The dream pass recompiles after every change; serving never recompiles a stored one."""
    store = FakeStore()
    form(store, "frm_1", ["a"], T0)
    store.apply(CommitPlan(scope=SCOPE, briefs=brief.compile_briefs(store, SCOPE, active(store))))
    form(store, "frm_2", ["b"], T0 + timedelta(days=1))
    served = brief.read_brief(store, SCOPE, BriefVariant.FULL, T0)
    assert "team.x/a" in served.text and "team.x/b" not in served.text
    assert "- fact: 1\n" in served.text


def test_active_claims_are_every_active_claim_by_id() -> None:
    store = FakeStore()
    ids = [f"m{i:04}" for i in range(2501)]
    store.apply(CommitPlan(scope=SCOPE, chunks=[record(i) for i in ids]))
    store.apply(CommitPlan(scope=SCOPE, chunks=[record("zz", status=Status.EXPIRED)]))
    assert [c.id for c in active(store)] == ids
