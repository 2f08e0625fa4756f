"""Contract: claims (issue 16) on both stores.

Every claim field round-trips through apply -> get_chunks / list_claims / searches, and
list_claim_states answers the fields the lifecycle pass and the brief read;
claim updates apply under revision checks in the plan's one transaction; evidence is
deduplicated by (memory, ref); briefs are replaced whole; the change log is read newest
first; scopes have a time zone and are walked across enterprises; hidden claims (dormant,
retracted) are out of every default read but not of get_chunks and list_claims; destroying
a scope erases its evidence, briefs and change log.
"""

from __future__ import annotations

import threading
import uuid
from datetime import datetime
from typing import Any

import pytest

from jennah.domain import rules
from jennah.domain.claim_state import ClaimState
from jennah.domain.formation import SOURCE_STEP
from jennah.domain.models import (
    Authority,
    BriefVariant,
    ChangeLogEntry,
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
    StoredBrief,
    Strength,
)
from jennah.errors import Aborted, JennahError, NotFound
from jennah.ports.store import MemoryStore
from jennah.services.commands import ChunkInput, SupersessionInput
from tests.contract.conftest import (
    BOOKKEEPING_TABLES,
    EMBEDDER,
    NOW,
    at,
    commit_items,
    one_chunk,
    row_counts,
)

# Set by the store on every write: compared apart.
_STORE_STAMPED = {"created_at", "updated_at", "embedding"}


def claim(scope: ScopeRef, text: str, **fields: Any) -> MemoryRecord:
    return MemoryRecord(
        id=rules.chunk_id(text, None),
        scope=scope,
        text=text,
        content_hash=rules.content_hash(text),
        embedding=EMBEDDER.embed(text),
        **fields,
    )


def registered(scope: ScopeRef, *chunks: MemoryRecord, **plan: Any) -> CommitPlan:
    return CommitPlan(
        scope=scope,
        registration=ScopeRecord(scope=scope, kind="agent"),
        chunks=list(chunks),
        **plan,
    )


def fields(record: MemoryRecord) -> dict[str, Any]:
    return record.model_dump(exclude=_STORE_STAMPED)


def full_claim(scope: ScopeRef) -> MemoryRecord:
    """A claim with every field away from its default."""
    return claim(
        scope,
        "Ana prefers window seats on long flights",
        key="travel/seat",
        summary="Window seats",
        about="ana",
        when_to_use="booking flights for Ana",
        type=MemoryType.PREFERENCE,
        metadata={"topic": "travel"},
        strength=Strength.HARD,
        pin=True,
        authority=Authority.USER_EXPLICIT,
        confidence=0.75,
        sensitivity=Sensitivity.HEALTH,
        valid_at=at(2024, 5, 6),
        valid_until=at(2031, 2, 3),
        durability=Durability.SEASONAL,
        reinforcement_count=3,
        last_reinforced_at=at(2025, 7, 8),
        supersedes="c-older",
        applies_to=["person:ana", "topic:flights"],
        related=["c-aisle", "c-legroom"],
        needs_enrichment=True,
        extensions={"x-color": '"blue"', "x-nested": '{"a": [1, 2], "b": null}'},
        revision=4,
    )


def claims_plan(scope: ScopeRef) -> CommitPlan:
    """A brief of each variant and one change-log line (the scope must exist)."""
    return CommitPlan(
        scope=scope,
        briefs=[
            StoredBrief(variant=BriefVariant.FULL, text="# Brief\n- all", token_count=4),
            StoredBrief(variant=BriefVariant.SHARED, text="# Brief", token_count=2),
        ],
        change_log=[ChangeLogEntry(memory_id="c-1", day="2030-01-01", change="expired")],
    )


# -- fields ------------------------------------------------------------------------


def test_every_claim_field_round_trips(store: MemoryStore, scope: ScopeRef) -> None:
    written = full_claim(scope)
    result = store.apply(registered(scope, written))

    (got,) = store.get_chunks(scope, [written.id])
    assert fields(got) == fields(written)
    assert got.created_at == got.updated_at == result.commit_timestamp
    assert got.embedding == pytest.approx(written.embedding, abs=1e-6)
    (listed,) = store.list_claims(scope, None, None, 10)
    assert fields(listed) == fields(written) and listed.embedding is None
    as_of = at(2030)
    (semantic,) = store.search_chunks(scope, EMBEDDER.embed(written.text), 5, [], as_of)
    (words,) = store.search_words(scope, ["window"], 5, [], as_of)
    (fuzzy,) = store.search_words(scope, ["windw"], 5, [], as_of, fuzzy=True)
    for found in (semantic, words, fuzzy):
        assert fields(found.record) == fields(written)


def test_a_replace_rewrites_the_claim_fields(store: MemoryStore, scope: ScopeRef) -> None:
    """...as the stored claim's next revision, keeping its reinforcement (only claim updates
    change that), whatever revision and reinforcement the plan's record carries."""
    written = full_claim(scope)
    store.apply(registered(scope, written))
    plain = written.model_copy(
        update={
            "applies_to": [], "related": ["c-x"], "needs_enrichment": False, "extensions": {},
            "revision": 1, "reinforcement_count": 0, "last_reinforced_at": None,
        }
    )  # fmt: skip
    store.apply(CommitPlan(scope=scope, chunks=[plain]))
    got = one_chunk(store, scope, written.id)
    assert got.revision == written.revision + 1
    assert (got.reinforcement_count, got.last_reinforced_at) == (
        written.reinforcement_count,
        written.last_reinforced_at,
    )
    assert written.reinforcement_count > 0 and written.last_reinforced_at is not None
    kept = {"revision", "reinforcement_count", "last_reinforced_at"}
    assert got.model_dump(exclude=_STORE_STAMPED | kept) == plain.model_dump(
        exclude=_STORE_STAMPED | kept
    )


# -- claim updates -------------------------------------------------------------------


def test_a_claim_update_sets_its_fields_and_increments_the_revision(
    store: MemoryStore, scope: ScopeRef
) -> None:
    written = claim(scope, "Ana drinks green tea", durability=Durability.PASSING)
    store.apply(registered(scope, written))
    update = ClaimUpdate(
        memory_id=written.id,
        expected_revision=1,
        durability=Durability.DURABLE,
        reinforcement_count=2,
        last_reinforced_at=at(2029, 3, 4),
        related=["c-coffee"],
    )
    result = store.apply(CommitPlan(scope=scope, claim_updates=[update]))

    assert result.claims_updated == 1
    got = one_chunk(store, scope, written.id)
    assert got.revision == 2
    assert got.updated_at == result.commit_timestamp
    assert (got.durability, got.reinforcement_count) == (Durability.DURABLE, 2)
    assert got.last_reinforced_at == at(2029, 3, 4)
    assert got.related == ["c-coffee"]
    # fields left None are left as they are; the words never change
    unchanged = {"durability", "reinforcement_count", "last_reinforced_at", "related", "revision"}
    assert got.model_dump(exclude=unchanged | _STORE_STAMPED) == written.model_dump(
        exclude=unchanged | _STORE_STAMPED
    )
    assert got.created_at is not None and got.created_at < result.commit_timestamp


def test_a_stale_revision_aborts_the_whole_plan(store: MemoryStore, scope: ScopeRef) -> None:
    written = claim(scope, "Ana lives in Lisbon")
    store.apply(registered(scope, written))
    store.apply(
        CommitPlan(
            scope=scope,
            claim_updates=[ClaimUpdate(memory_id=written.id, expected_revision=1)],
        )
    )  # revision 2 now
    bystander = claim(scope, "Ana visits Porto")
    stale = ClaimUpdate(memory_id=written.id, expected_revision=1, status=Status.EXPIRED)

    with pytest.raises(Aborted) as raised:
        store.apply(
            CommitPlan(
                scope=scope,
                chunks=[bystander],
                claim_updates=[stale],
                change_log=[ChangeLogEntry(memory_id=written.id, day="2030-01-01", change="x")],
            )
        )

    assert raised.value.reason == rules.REVISION_CHANGED
    assert raised.value.metadata == {"id": written.id}
    assert store.get_chunks(scope, [bystander.id]) == []
    got = one_chunk(store, scope, written.id)
    assert (got.revision, got.status) == (2, Status.ACTIVE)
    assert store.list_change_log(scope, 10) == []


def test_an_update_of_a_missing_claim_is_not_found_and_writes_nothing(
    store: MemoryStore, scope: ScopeRef
) -> None:
    bystander = claim(scope, "Ana visits Porto")
    missing = ClaimUpdate(memory_id="c-missing", expected_revision=1, status=Status.DORMANT)
    with pytest.raises(NotFound) as raised:
        store.apply(registered(scope, bystander, claim_updates=[missing]))
    assert raised.value.metadata == {"id": "c-missing"}
    assert store.get_chunks(scope, [bystander.id]) == []
    assert store.get_scope(scope) is None


def test_updates_in_one_plan_apply_in_order_on_the_plan_s_own_chunks(
    store: MemoryStore, scope: ScopeRef
) -> None:
    written = claim(scope, "Ana learns Portuguese", revision=3)
    updates = [
        ClaimUpdate(memory_id=written.id, expected_revision=3, reinforcement_count=1),
        ClaimUpdate(memory_id=written.id, expected_revision=4, reinforcement_count=2),
    ]
    result = store.apply(registered(scope, written, claim_updates=updates))
    got = one_chunk(store, scope, written.id)
    assert (got.revision, got.reinforcement_count, result.claims_updated) == (5, 2, 2)


def test_invalid_at_closes_only_an_open_window(store: MemoryStore, scope: ScopeRef) -> None:
    written = claim(scope, "Ana is in Tokyo this week", valid_at=at(2029))
    store.apply(registered(scope, written))
    close = ClaimUpdate(
        memory_id=written.id, expected_revision=1, status=Status.EXPIRED, invalid_at=at(2029, 6)
    )
    store.apply(CommitPlan(scope=scope, claim_updates=[close]))
    reopen = ClaimUpdate(memory_id=written.id, expected_revision=2, invalid_at=at(2031))
    store.apply(CommitPlan(scope=scope, claim_updates=[reopen]))

    got = one_chunk(store, scope, written.id)
    assert (got.invalid_at, got.status, got.revision) == (at(2029, 6), Status.EXPIRED, 3)
    # the closed window still answers an as-of query for a time it was valid
    assert [r.id for r in store.list_chunks(scope, at(2029, 3), 10, 0)] == [written.id]
    assert store.list_chunks(scope, at(2030), 10, 0) == []


def test_a_chunk_supersession_increments_the_revision(store: MemoryStore, scope: ScopeRef) -> None:
    old = ChunkInput(text="Ana works at Acme", valid_at=at(2024))
    new = ChunkInput(text="Ana works at Initech", valid_at=at(2025))
    old_id = rules.chunk_id(old.text, old.valid_at)
    commit_items(store, scope, chunks=[old])
    commit_items(
        store, scope, supersessions=[SupersessionInput(chunk_id=old_id, replacement_chunk=new)]
    )
    got = one_chunk(store, scope, old_id)
    assert (got.status, got.revision) == (Status.SUPERSEDED, 2)
    # a retried supersession (already applied identically) changes nothing
    commit_items(
        store, scope, supersessions=[SupersessionInput(chunk_id=old_id, replacement_chunk=new)]
    )
    assert one_chunk(store, scope, old_id).revision == 2


def test_racing_updates_at_one_revision_let_one_win(store: MemoryStore, scope: ScopeRef) -> None:
    written = claim(scope, "Ana runs on Sundays")
    store.apply(registered(scope, written))
    start = threading.Barrier(2)
    outcomes: list[Any] = [None, None]

    def race(slot: int) -> None:
        update = ClaimUpdate(memory_id=written.id, expected_revision=1, reinforcement_count=slot)
        start.wait(timeout=30)
        try:
            outcomes[slot] = store.apply(CommitPlan(scope=scope, claim_updates=[update]))
        except JennahError as exc:
            outcomes[slot] = exc

    threads = [threading.Thread(target=race, args=(slot,)) for slot in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    won = [slot for slot, outcome in enumerate(outcomes) if not isinstance(outcome, Exception)]
    lost = [outcome for outcome in outcomes if isinstance(outcome, Exception)]
    assert len(won) == 1, outcomes
    assert [(type(e), e.reason) for e in lost] == [(Aborted, rules.REVISION_CHANGED)]
    got = one_chunk(store, scope, written.id)
    assert (got.revision, got.reinforcement_count) == (2, won[0])


# -- evidence, briefs, change log ---------------------------------------------------------


def _evidence(memory_id: str, ref: str, quote: str, recorded_at: datetime) -> Evidence:
    return Evidence(memory_id=memory_id, ref=ref, quote=quote, recorded_at=recorded_at)


def test_evidence_is_added_once_per_memory_and_ref(store: MemoryStore, scope: ScopeRef) -> None:
    first, second = claim(scope, "Ana moved to Lisbon"), claim(scope, "Ana owns a bike")
    a, b = sorted([first.id, second.id])
    lines = [
        _evidence(b, "conv://s/2#turn=0-1", "bike", at(2026, 1, 1)),
        _evidence(a, "conv://s/9#turn=0-1", "moved", at(2026, 1, 1)),
        _evidence(a, "conv://s/1#turn=2-3", "moved again", at(2026, 2, 1)),
    ]
    store.apply(registered(scope, first, second, evidence=lines))
    replay = [
        _evidence(a, "conv://s/9#turn=0-1", "replayed", at(2027, 1, 1)),
        _evidence(a, "conv://s/3#turn=0-0", "new line", at(2026, 1, 1)),
    ]
    store.apply(CommitPlan(scope=scope, evidence=replay))

    assert store.list_evidence(scope, [b, a, "c-none"]) == [
        _evidence(a, "conv://s/3#turn=0-0", "new line", at(2026, 1, 1)),
        _evidence(a, "conv://s/9#turn=0-1", "moved", at(2026, 1, 1)),
        _evidence(a, "conv://s/1#turn=2-3", "moved again", at(2026, 2, 1)),
        _evidence(b, "conv://s/2#turn=0-1", "bike", at(2026, 1, 1)),
    ]
    assert store.list_evidence(scope, [b]) == [lines[0]]
    assert store.list_evidence(scope, []) == []


def test_a_brief_is_replaced_whole_per_variant(store: MemoryStore, scope: ScopeRef) -> None:
    assert store.get_brief(scope, BriefVariant.FULL) is None
    expiries = {"c-1": datetime(2030, 2, 3, 4, 5, 6, 789, tzinfo=NOW.tzinfo)}
    plan = claims_plan(scope)
    first = store.apply(registered(scope, briefs=plan.briefs, change_log=plan.change_log))
    full = StoredBrief(variant=BriefVariant.FULL, text="# New", token_count=9, expiries=expiries)
    second = store.apply(CommitPlan(scope=scope, briefs=[full]))

    assert store.get_brief(scope, BriefVariant.FULL) == full.model_copy(
        update={"compiled_at": second.commit_timestamp}
    )
    shared = store.get_brief(scope, BriefVariant.SHARED)
    assert shared is not None
    assert (shared.text, shared.expiries, shared.compiled_at) == (
        "# Brief",
        {},
        first.commit_timestamp,
    )
    # other writes leave briefs and the change log alone
    store.apply(CommitPlan(scope=scope, chunks=[claim(scope, "Ana naps")]))
    assert store.get_brief(scope, BriefVariant.FULL) is not None
    assert len(store.list_change_log(scope, 10)) == 1


def test_the_change_log_reads_newest_first_in_pages(store: MemoryStore, scope: ScopeRef) -> None:
    def line(memory_id: str, change: str, when: datetime | None) -> ChangeLogEntry:
        return ChangeLogEntry(
            memory_id=memory_id, day="2030-01-01", change=change, from_value="a", to_value="b",
            recorded_at=when,
        )  # fmt: skip

    store.apply(
        registered(
            scope,
            change_log=[
                line("c-2", "expired", at(2025, 1, 1)),
                line("c-1", "promoted", at(2025, 3, 1)),
                line("c-3", "decayed", at(2025, 2, 1)),
                line("c-1", "expired", at(2025, 2, 1)),
            ],
        )
    )
    stamped = store.apply(CommitPlan(scope=scope, change_log=[line("c-9", "reinforced", None)]))

    expected = [
        line("c-9", "reinforced", stamped.commit_timestamp),
        line("c-1", "promoted", at(2025, 3, 1)),
        line("c-1", "expired", at(2025, 2, 1)),
        line("c-3", "decayed", at(2025, 2, 1)),
        line("c-2", "expired", at(2025, 1, 1)),
    ]
    assert store.list_change_log(scope, 10) == expected
    assert store.list_change_log(scope, 2) == expected[:2]
    assert store.list_change_log(scope, 2, offset=2) == expected[2:4]
    assert store.list_change_log(scope, 2, offset=4) == expected[4:]


# -- scopes ----------------------------------------------------------------------------


def test_a_scope_has_a_time_zone(store: MemoryStore, scope: ScopeRef) -> None:
    store.apply(registered(scope))
    registration = store.get_scope(scope)
    assert registration is not None and registration.time_zone == "UTC"

    answered = store.set_time_zone(scope, "Europe/Lisbon")

    assert answered == registration.model_copy(update={"time_zone": "Europe/Lisbon"})
    assert store.get_scope(scope) == answered
    assert store.list_scopes(scope.enterprise_id) == [answered]
    with pytest.raises(NotFound):
        store.set_time_zone(ScopeRef(enterprise_id=scope.enterprise_id, scope_id="none"), "UTC")


def test_walk_scopes_crosses_enterprises_in_key_order(store: MemoryStore) -> None:
    prefix = f"walk-{uuid.uuid4().hex}"
    scopes = [
        ScopeRef(enterprise_id=f"{prefix}-a", scope_id="s-1"),
        ScopeRef(enterprise_id=f"{prefix}-a", scope_id="s-2"),
        ScopeRef(enterprise_id=f"{prefix}-b", scope_id="s-0"),
    ]
    for scope in reversed(scopes):
        store.apply(registered(scope))
    start = ScopeRef(enterprise_id=prefix, scope_id="")

    first = store.walk_scopes(start, 2)
    second = store.walk_scopes(first[-1].scope, 2)

    assert [r.scope for r in first] == scopes[:2]
    assert second[0].scope == scopes[2]
    assert second[0] == store.get_scope(scopes[2])
    assert all(not r.scope.enterprise_id.startswith(prefix) for r in second[1:])
    everything = store.walk_scopes(None, 100_000)
    keys = [(r.scope.enterprise_id, r.scope.scope_id) for r in everything]
    assert keys == sorted(keys) and set(scopes) <= {r.scope for r in everything}


# -- hidden statuses -------------------------------------------------------------------


def test_hidden_claims_are_out_of_default_reads_only(store: MemoryStore, scope: ScopeRef) -> None:
    shown = claim(scope, "Ana plays chess on Fridays")
    dormant = claim(scope, "Ana plays chess online")
    retracted = claim(scope, "Ana plays chess badly")
    expired = claim(scope, "Ana plays chess at school", valid_at=at(2020))
    store.apply(registered(scope, shown, dormant, retracted, expired))
    as_of, vector = at(2030), EMBEDDER.embed("Ana plays chess")
    everyone = sorted(r.id for r in (shown, dormant, retracted, expired))
    # read once first, so an index built before the change must follow it
    assert len(store.search_chunks(scope, vector, 10, [], as_of)) == 4
    assert len(store.search_words(scope, ["chess"], 10, [], as_of)) == 4
    assert len(store.search_words(scope, ["chesz"], 10, [], as_of, fuzzy=True)) == 4

    store.apply(
        CommitPlan(
            scope=scope,
            claim_updates=[
                ClaimUpdate(memory_id=dormant.id, expected_revision=1, status=Status.DORMANT),
                ClaimUpdate(memory_id=retracted.id, expected_revision=1, status=Status.RETRACTED),
                ClaimUpdate(
                    memory_id=expired.id,
                    expected_revision=1,
                    status=Status.EXPIRED,
                    invalid_at=at(2029),
                ),
            ],
        )
    )

    def ids(found: list[Any]) -> list[str]:
        return sorted(getattr(item, "record", item).id for item in found)

    assert ids(store.search_chunks(scope, vector, 10, [], as_of)) == [shown.id]
    assert ids(store.search_words(scope, ["chess"], 10, [], as_of)) == [shown.id]
    assert ids(store.search_words(scope, ["chesz"], 10, [], as_of, fuzzy=True)) == [shown.id]
    assert ids(store.list_chunks(scope, as_of, 10, 0)) == [shown.id]
    # the expired claim is still found as of when it was valid; hidden ones never are
    assert ids(store.search_chunks(scope, vector, 10, [], at(2028))) == sorted(
        [shown.id, expired.id]
    )
    assert ids(store.list_chunks(scope, None, 10, 0)) == everyone
    assert ids(store.get_chunks(scope, everyone)) == everyone
    assert ids(store.list_claims(scope, None, None, 10)) == everyone
    assert ids(store.list_claims(scope, [Status.DORMANT, Status.RETRACTED], None, 10)) == sorted(
        [dormant.id, retracted.id]
    )


def test_list_claims_pages_by_id(store: MemoryStore, scope: ScopeRef) -> None:
    records = [claim(scope, f"Ana fact number {n}") for n in range(5)]
    store.apply(registered(scope, *records))
    ids = sorted(r.id for r in records)
    assert [r.id for r in store.list_claims(scope, None, None, 2)] == ids[:2]
    assert [r.id for r in store.list_claims(scope, None, ids[1], 2)] == ids[2:4]
    assert [r.id for r in store.list_claims(scope, None, ids[3], 2)] == ids[4:]
    assert store.list_claims(scope, [Status.DORMANT], None, 10) == []


def test_claim_states_are_the_claims_as_stored(store: MemoryStore, scope: ScopeRef) -> None:
    assert store.list_claim_states(scope, None) == []
    full = full_claim(scope)
    formed = claim(scope, "Ana flies on Mondays", metadata={SOURCE_STEP: "frm_1", "a": "b"})
    quiet = claim(scope, "Ana reads", summary="  ", valid_at=at(2020), created_at=at(2021))
    hidden = claim(scope, "Ana naps")
    store.apply(registered(scope, full, formed, quiet, hidden))
    update = ClaimUpdate(memory_id=hidden.id, expected_revision=1, status=Status.DORMANT)
    store.apply(CommitPlan(scope=scope, claim_updates=[update]))

    states = store.list_claim_states(scope, None)
    assert states == [ClaimState.of(r) for r in store.list_claims(scope, None, None, 10)]
    by_id = {state.id: state for state in states}
    assert [state.id for state in states] == sorted(by_id)
    assert by_id[formed.id].source_step == "frm_1" and by_id[full.id].source_step is None
    assert (by_id[hidden.id].status, by_id[hidden.id].revision) == (Status.DORMANT, 2)
    assert by_id[full.id].valid_until == at(2031, 2, 3) and by_id[full.id].revision == 4
    assert by_id[quiet.id].created_at is not None  # the commit's time, as on every record
    active = store.list_claim_states(scope, [Status.ACTIVE])
    assert [state.id for state in active] == sorted([full.id, formed.id, quiet.id])
    assert store.list_claim_states(scope, [Status.DORMANT, Status.RETRACTED]) == [by_id[hidden.id]]


# -- destroying a scope -------------------------------------------------------------------


def test_destroy_scope_erases_evidence_briefs_and_change_log(
    store: MemoryStore, scope: ScopeRef
) -> None:
    written = claim(scope, "Ana moved to Lisbon")
    line = _evidence(written.id, "conv://s/1#turn=0-1", "moved", at(2026))
    store.apply(registered(scope, written, evidence=[line]))
    store.apply(claims_plan(scope))
    before = row_counts(store, scope)
    assert before["evidence"] == 1 and before["briefs"] == 2 and before["change_log"] == 1

    assert store.destroy_scope(scope) == sum(
        n for table, n in before.items() if table not in BOOKKEEPING_TABLES
    )

    assert all(n == 0 for n in row_counts(store, scope).values())
    assert store.list_evidence(scope, [written.id]) == []
    assert store.get_brief(scope, BriefVariant.FULL) is None
    assert store.list_change_log(scope, 10) == []


def test_a_registration_keeps_the_time_zone_it_is_written_with(
    store: MemoryStore, scope: ScopeRef
) -> None:
    record = ScopeRecord(scope=scope, kind="subject", time_zone="America/Los_Angeles")
    store.apply(CommitPlan(scope=scope, registration=record))
    registration = store.get_scope(scope)
    assert registration is not None and registration.time_zone == "America/Los_Angeles"
