"""The lifecycle pass (jennah.services.lifecycle) on the fake store: one scope's pass,
its replay, its retries on a stale revision, and the nightly walk with its cursor."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from jennah.domain import lifecycle
from jennah.domain.lifecycle import WalkCursor
from jennah.domain.models import (
    Authority,
    BriefVariant,
    ClaimUpdate,
    CommitPlan,
    Durability,
    MemoryRecord,
    ScopeRecord,
    ScopeRef,
    Status,
)
from jennah.domain.rules import REVISION_CHANGED
from jennah.errors import Aborted, NotFound, Unavailable
from jennah.services import lifecycle as service
from tests.unit.fakes import FakeCursorStore, FakeStore

SCOPE = ScopeRef(enterprise_id="e", scope_id="family")
# the fake store stamps rows with the real clock: the passes run in the future
SOON = datetime.now(UTC) + timedelta(days=2)


def claim(memory_id: str, scope: ScopeRef = SCOPE, **fields: Any) -> MemoryRecord:
    base: dict[str, Any] = {"id": memory_id, "scope": scope, "text": f"words of {memory_id}",
                            "summary": f"summary of {memory_id}", "authority": "user_stated",
                            "type": "identity"}  # fmt: skip
    return MemoryRecord.model_validate({**base, **fields})


def seed(
    store: FakeStore, *claims: MemoryRecord, scope: ScopeRef = SCOPE, zone: str = "UTC"
) -> None:
    registration = ScopeRecord(scope=scope, kind="agent", time_zone=zone)
    store.apply(CommitPlan(scope=scope, registration=registration, chunks=list(claims)))


def state(store: FakeStore, memory_id: str, scope: ScopeRef = SCOPE) -> MemoryRecord:
    (record,) = store.get_chunks(scope, [memory_id])
    return record


def mixed(scope: ScopeRef = SCOPE) -> list[MemoryRecord]:
    return [
        claim("chk_expires", scope, valid_until=SOON - timedelta(hours=1)),
        claim("chk_passing", scope, durability=Durability.PASSING, reinforcement_count=3),
        claim(
            "chk_guess",
            scope,
            authority=Authority.INFERRED,
            last_reinforced_at=SOON - timedelta(days=200),
        ),
        claim("chk_stays", scope),
    ]


def test_a_pass_expires_promotes_and_decays_writes_the_change_log_and_the_briefs() -> None:
    store = FakeStore()
    seed(store, *mixed())
    report = service.dream(store, SCOPE, SOON)
    assert (report.expired, report.promoted, report.decayed) == (1, 1, 1)
    assert report.brief_changed and report.changed
    assert state(store, "chk_expires").status is Status.EXPIRED
    assert state(store, "chk_expires").invalid_at == SOON - timedelta(hours=1)
    assert state(store, "chk_passing").durability is Durability.DURABLE
    assert state(store, "chk_guess").status is Status.DORMANT
    assert state(store, "chk_stays").revision == 1
    log = {(e.memory_id, e.change, e.day) for e in store.list_change_log(SCOPE, 10)}
    day = SOON.date().isoformat()
    assert log == {("chk_expires", "expired", day), ("chk_passing", "promoted", day),
                   ("chk_guess", "decayed", day)}  # fmt: skip
    full = store.get_brief(SCOPE, BriefVariant.FULL)
    assert full is not None and "chk_stays" in full.text and "chk_expires" not in full.text
    assert store.get_brief(SCOPE, BriefVariant.SHARED) is not None


def test_the_pass_is_one_plan() -> None:
    store = FakeStore()
    seed(store, *mixed())
    before = len(store.plans)
    service.dream(store, SCOPE, SOON)
    (plan,) = store.plans[before:]
    assert len(plan.claim_updates) == len(plan.change_log) == 3 and len(plan.briefs) == 2


def test_replaying_the_pass_at_the_same_now_writes_nothing() -> None:
    store = FakeStore()
    seed(store, *mixed())
    service.dream(store, SCOPE, SOON)
    written = len(store.plans)
    briefs = {v: store.get_brief(SCOPE, v) for v in BriefVariant}
    again = service.dream(store, SCOPE, SOON)
    assert not again.changed and again.rounds == 1
    assert len(store.plans) == written
    assert {v: store.get_brief(SCOPE, v) for v in BriefVariant} == briefs
    assert len(store.list_change_log(SCOPE, 10)) == 3


def test_a_pass_with_nothing_due_and_the_brief_current_writes_nothing() -> None:
    store = FakeStore()
    seed(store, claim("chk_stays"))
    first = service.dream(store, SCOPE, SOON)
    assert first.brief_changed and (first.expired, first.promoted, first.decayed) == (0, 0, 0)
    written = len(store.plans)
    assert not service.dream(store, SCOPE, SOON + timedelta(days=1)).changed
    assert len(store.plans) == written


def test_history_stays_readable_and_out_of_default_reads() -> None:
    store = FakeStore()
    seed(store, *mixed())
    service.dream(store, SCOPE, SOON)
    kept = {r.id: r.status for r in store.get_chunks(SCOPE, ["chk_expires", "chk_guess"])}
    assert kept == {"chk_expires": Status.EXPIRED, "chk_guess": Status.DORMANT}
    assert state(store, "chk_expires").text == "words of chk_expires"  # words untouched
    listed = {r.id for r in store.list_chunks(SCOPE, SOON, 100, 0)}
    assert listed == {"chk_passing", "chk_stays"}
    # an as-of read for a time the expired claim was valid still finds it
    then = {r.id for r in store.list_chunks(SCOPE, SOON - timedelta(hours=2), 100, 0)}
    assert "chk_expires" in then and "chk_guess" not in then


def test_expiry_is_judged_in_the_scopes_zone_not_an_hour_before() -> None:
    store = FakeStore()
    day = (SOON + timedelta(days=30)).date()
    until = lifecycle.start_of_local_day(day, lifecycle.scope_zone("Atlantic/Azores"))
    seed(store, claim("chk_tonight", valid_until=until), zone="Atlantic/Azores")
    utc_midnight = datetime.combine(day, datetime.min.time(), tzinfo=UTC)
    assert until - utc_midnight in (timedelta(hours=1), timedelta(0))  # -1 in winter, 0 in summer
    assert service.dream(store, SCOPE, until - timedelta(seconds=1)).expired == 0
    assert service.dream(store, SCOPE, until).expired == 1


def test_a_scope_that_is_not_registered_is_not_found() -> None:
    with pytest.raises(NotFound):
        service.dream(FakeStore(), SCOPE, SOON)


# no write overwrites another


class InterleavingStore(FakeStore):
    """Runs `before_apply` (another writer) just before the pass's own apply."""

    def __init__(self) -> None:
        super().__init__()
        self.before_apply: list[Callable[[], None]] = []

    def apply(self, plan: CommitPlan) -> Any:
        if plan.change_log and self.before_apply:
            self.before_apply.pop(0)()
        return super().apply(plan)


def reinforce(store: FakeStore, memory_id: str) -> Callable[[], None]:
    def write() -> None:
        current = state(store, memory_id)
        store.apply(CommitPlan(scope=SCOPE, claim_updates=[ClaimUpdate(
            memory_id=memory_id, expected_revision=current.revision,
            reinforcement_count=current.reinforcement_count + 1)]))  # fmt: skip

    return write


def test_a_stale_revision_is_read_again_and_the_other_write_is_kept() -> None:
    store = InterleavingStore()
    seed(store, claim("chk_passing", durability=Durability.PASSING, reinforcement_count=3))
    store.before_apply.append(reinforce(store, "chk_passing"))
    report = service.dream(store, SCOPE, SOON)
    assert report.promoted == 1 and report.rounds == 2  # lost, then won and settled
    after = state(store, "chk_passing")
    assert (after.reinforcement_count, after.durability) == (4, Durability.DURABLE)
    assert after.revision == 3  # the reinforcement, then the promotion
    assert [e.change for e in store.list_change_log(SCOPE, 10)] == ["promoted"]


def test_a_pass_that_loses_every_round_fails_cleanly_with_revision_changed() -> None:
    store = InterleavingStore()
    seed(store, claim("chk_passing", durability=Durability.PASSING, reinforcement_count=3))
    store.before_apply.extend(reinforce(store, "chk_passing") for _ in range(service.MAX_ROUNDS))
    with pytest.raises(Aborted) as lost:
        service.dream(store, SCOPE, SOON)
    assert lost.value.reason == REVISION_CHANGED
    after = state(store, "chk_passing")
    assert after.durability is Durability.PASSING and after.reinforcement_count == 8
    assert store.list_change_log(SCOPE, 10) == []


def test_a_claim_committed_while_the_pass_compiled_is_in_the_brief_it_leaves() -> None:
    store = InterleavingStore()
    seed(store, claim("chk_expires", valid_until=SOON - timedelta(hours=1)))
    late = claim("chk_late")
    store.before_apply.append(
        lambda: FakeStore.apply(store, CommitPlan(scope=SCOPE, chunks=[late]))
    )
    service.dream(store, SCOPE, SOON)
    brief = store.get_brief(SCOPE, BriefVariant.FULL)
    assert brief is not None and "chk_late" in brief.text


# triggers


def test_changes_claims_is_true_for_chunks_supersessions_and_claim_updates_only() -> None:
    assert not service.changes_claims(CommitPlan(scope=SCOPE))
    assert service.changes_claims(CommitPlan(scope=SCOPE, chunks=[claim("chk_a")]))
    update = ClaimUpdate(memory_id="chk_a", expected_revision=1, status=Status.RETRACTED)
    assert service.changes_claims(CommitPlan(scope=SCOPE, claim_updates=[update]))


def test_the_pass_after_a_change_never_fails_the_change() -> None:
    store = FakeStore()
    seed(store, claim("chk_a"))
    store.fail_next = Unavailable("the store is away")
    assert service.dream_after_change(store, SCOPE, SOON) is None
    assert service.dream_after_change(store, SCOPE, SOON) is not None


# the nightly walk


def scopes(store: FakeStore, count: int) -> list[ScopeRef]:
    refs = [ScopeRef(enterprise_id=f"ent{i % 3}", scope_id=f"s{i:03d}") for i in range(count)]
    for ref in refs:
        seed(store, *mixed(ref), scope=ref)
    return sorted(refs, key=lambda r: (r.enterprise_id, r.scope_id))


def test_the_nightly_walk_dreams_every_scope_of_every_enterprise_in_batches() -> None:
    store, cursors = FakeStore(), FakeCursorStore()
    refs = scopes(store, 7)
    report = service.nightly(store, cursors, SOON, batch=3)
    assert report.finished and report.scopes == 7 and not report.failed
    assert (report.expired, report.promoted, report.decayed) == (7, 7, 7)
    assert all(state(store, "chk_expires", ref).status is Status.EXPIRED for ref in refs)
    assert cursors.saved[service.CURSOR] == WalkCursor(started_at=SOON, finished_at=SOON)


def test_a_stopped_walk_resumes_after_the_last_finished_scope_and_skips_none() -> None:
    store, cursors = FakeStore(), FakeCursorStore()
    refs = scopes(store, 7)
    asked = iter([False, False, False, True])
    first = service.nightly(store, cursors, SOON, stop=lambda: next(asked), batch=2)
    assert not first.finished and first.scopes == 3
    assert cursors.saved[service.CURSOR] == WalkCursor(after=refs[2], started_at=SOON)
    later = SOON + timedelta(minutes=5)
    second = service.nightly(store, cursors, later, batch=2)
    assert second.finished and second.resumed_after == refs[2] and second.scopes == 4
    assert second.expired == 4  # the first three scopes' work was not redone
    assert second.started_at == SOON
    changes = [len(store.list_change_log(ref, 10)) for ref in refs]
    assert changes == [3] * 7  # every due transition exactly once


def test_after_a_finished_walk_the_next_run_starts_from_the_first_scope() -> None:
    store, cursors = FakeStore(), FakeCursorStore()
    scopes(store, 3)
    service.nightly(store, cursors, SOON)
    again = service.nightly(store, cursors, SOON + timedelta(days=1))
    assert again.finished and again.resumed_after is None and again.scopes == 3
    assert (again.expired, again.promoted, again.decayed) == (0, 0, 0)


def test_a_scope_whose_pass_loses_every_round_is_reported_and_the_walk_goes_on() -> None:
    store, cursors = InterleavingStore(), FakeCursorStore()
    refs = scopes(store, 2)
    ahead = refs[0]

    def edit() -> None:
        current = state(store, "chk_passing", ahead)
        update = ClaimUpdate(
            memory_id="chk_passing", expected_revision=current.revision, related=["x"]
        )
        store.apply(CommitPlan(scope=ahead, claim_updates=[update]))

    store.before_apply.extend(edit for _ in range(service.MAX_ROUNDS))
    report = service.nightly(store, cursors, SOON)
    assert report.finished and report.failed == [ahead] and report.scopes == 1


def test_a_destroyed_scope_is_passed_over_and_a_bad_time_zone_is_reported() -> None:
    store, cursors = FakeStore(), FakeCursorStore()
    refs = scopes(store, 3)
    store.destroy_scope(refs[0])
    store.set_time_zone(refs[1], "Mars/Olympus")
    listed = [ScopeRecord(scope=ref, kind="agent") for ref in refs]
    store.walk_scopes = lambda after, limit: [r for r in listed if after is None][:limit]  # type: ignore[method-assign]
    report = service.nightly(store, cursors, SOON)
    assert report.finished and report.scopes == 1 and report.failed == [refs[1]]
    assert store.get_brief(refs[0], BriefVariant.FULL) is None  # nothing written for it


def test_an_error_leaves_the_cursor_at_the_last_finished_scope() -> None:
    store, cursors = FakeStore(), FakeCursorStore()
    refs = scopes(store, 3)
    original = store.walk_scopes
    calls = iter([original, lambda after, limit: (_ for _ in ()).throw(Unavailable("away"))])
    store.walk_scopes = lambda after, limit: next(calls)(after, limit)  # type: ignore[method-assign]
    with pytest.raises(Unavailable):
        service.nightly(store, cursors, SOON, batch=2)
    assert cursors.saved[service.CURSOR] == WalkCursor(after=refs[1], started_at=SOON)
