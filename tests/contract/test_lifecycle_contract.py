"""Contract: the lifecycle ("dream") pass on both stores (issue 16).

Expiry at the scope's local midnight in a non-UTC zone (and not an hour before, across a
DST change too), promotion at the third reinforcement, decay at 180 days, pinned and
explicit claims untouched, history kept (still readable by id, out of default reads), the
change log dated with the scope's day, a replay that writes nothing, and no write lost
when a reinforcement, the pass and a person's edit race on one claim.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from jennah.domain import lifecycle as rules_of_lifecycle
from jennah.domain import rules
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
    Status,
)
from jennah.errors import Aborted
from jennah.ports.store import MemoryStore
from jennah.services import lifecycle
from jennah.services.commands import ChunkInput, SupersessionInput
from tests.contract.conftest import EMBEDDER, commit_items, new_scope, one_chunk

AZORES = "Atlantic/Azores"  # one hour behind UTC in December
NEW_YORK = "America/New_York"  # clocks go back on 1 November 2026
# claims are formed (created_at) at the store's commit time, today: every pass runs later
LATER = datetime(2031, 1, 1, tzinfo=UTC)


def claim(scope: ScopeRef, text: str, **fields: Any) -> MemoryRecord:
    base: dict[str, Any] = {"type": MemoryType.IDENTITY, "authority": Authority.USER_STATED}
    return MemoryRecord(
        id=rules.chunk_id(text, None),
        scope=scope,
        text=text,
        content_hash=rules.content_hash(text),
        embedding=EMBEDDER.embed(text),
        **{**base, **fields},
    )


def seed(store: MemoryStore, scope: ScopeRef, *claims: MemoryRecord, zone: str = "UTC") -> None:
    registration = ScopeRecord(scope=scope, kind="agent")
    store.apply(CommitPlan(scope=scope, registration=registration, chunks=list(claims)))
    if zone != "UTC":
        store.set_time_zone(scope, zone)


def status(store: MemoryStore, scope: ScopeRef, record: MemoryRecord) -> Status:
    return one_chunk(store, scope, record.id).status


def changes(store: MemoryStore, scope: ScopeRef) -> list[tuple[str, str, str]]:
    return sorted((e.memory_id, e.change, e.day) for e in store.list_change_log(scope, 100))


# expire


def test_expiry_is_at_the_scopes_local_midnight_not_an_hour_before(
    store: MemoryStore, scope: ScopeRef
) -> None:
    zone = rules_of_lifecycle.scope_zone(AZORES)
    until = rules_of_lifecycle.start_of_local_day(date(2031, 12, 17), zone)  # 01:00Z
    tonight = claim(scope, "Pizza night is tonight", valid_until=until)
    seed(store, scope, tonight, zone=AZORES)
    utc_midnight = datetime(2031, 12, 17, tzinfo=UTC)
    assert lifecycle.dream(store, scope, utc_midnight).expired == 0
    assert lifecycle.dream(store, scope, until - timedelta(seconds=1)).expired == 0
    assert status(store, scope, tonight) is Status.ACTIVE
    report = lifecycle.dream(store, scope, until)
    assert report.expired == 1
    expired = one_chunk(store, scope, tonight.id)
    assert (expired.status, expired.invalid_at) == (Status.EXPIRED, until)
    # dated with the Azores day of the pass: the 17th began there at 01:00Z
    assert changes(store, scope) == [(tonight.id, "expired", "2031-12-17")]


def test_expiry_across_a_dst_change_is_at_local_midnight(
    store: MemoryStore, scope: ScopeRef
) -> None:
    zone = rules_of_lifecycle.scope_zone(NEW_YORK)
    until = rules_of_lifecycle.start_of_local_day(date(2031, 11, 3), zone)  # EST: 05:00Z
    assert until == datetime(2031, 11, 3, 5, tzinfo=UTC)
    seed(store, scope, claim(scope, "The recital is on Sunday", valid_until=until), zone=NEW_YORK)
    assert lifecycle.dream(store, scope, until - timedelta(hours=1)).expired == 0  # EDT's midnight
    assert lifecycle.dream(store, scope, until).expired == 1


# promote


def test_a_passing_claim_is_promoted_at_the_third_reinforcement_not_the_second(
    store: MemoryStore, scope: ScopeRef
) -> None:
    twice = claim(scope, "Soccer is on Tuesdays", durability=Durability.PASSING,
                  reinforcement_count=2)  # fmt: skip
    seed(store, scope, twice)
    assert lifecycle.dream(store, scope, LATER).promoted == 0
    current = one_chunk(store, scope, twice.id)
    third = ClaimUpdate(memory_id=twice.id, expected_revision=current.revision,
                        reinforcement_count=3, last_reinforced_at=LATER)  # fmt: skip
    store.apply(CommitPlan(scope=scope, claim_updates=[third]))
    assert lifecycle.dream(store, scope, LATER).promoted == 1
    promoted = one_chunk(store, scope, twice.id)
    assert promoted.durability is Durability.DURABLE and promoted.text == twice.text


def test_pinned_and_explicit_claims_are_untouched(store: MemoryStore, scope: ScopeRef) -> None:
    old = LATER - timedelta(days=400)
    pinned = claim(scope, "Grandma visits on Sundays", pin=True, durability=Durability.PASSING,
                   reinforcement_count=5, authority=Authority.INFERRED,
                   last_reinforced_at=old)  # fmt: skip
    explicit = claim(scope, "Always call before booking", authority=Authority.USER_EXPLICIT,
                     durability=Durability.PASSING, reinforcement_count=5)  # fmt: skip
    seed(store, scope, pinned, explicit)
    report = lifecycle.dream(store, scope, LATER)
    assert (report.expired, report.promoted, report.decayed) == (0, 0, 0)
    for record in (pinned, explicit):
        after = one_chunk(store, scope, record.id)
        assert (after.status, after.durability, after.revision) == (
            Status.ACTIVE, Durability.PASSING, record.revision)  # fmt: skip


# decay


def test_an_inferred_claim_decays_at_180_days_not_179(store: MemoryStore, scope: ScopeRef) -> None:
    reinforced = datetime(2030, 3, 1, 12, tzinfo=UTC)
    guess = claim(scope, "Probably likes jazz", authority=Authority.INFERRED,
                  last_reinforced_at=reinforced)  # fmt: skip
    seed(store, scope, guess)
    day_179 = reinforced + timedelta(days=179)
    assert lifecycle.dream(store, scope, day_179).decayed == 0
    day_180 = datetime.combine(reinforced.date() + timedelta(days=180), datetime.min.time(), UTC)
    assert lifecycle.dream(store, scope, day_180).decayed == 1
    assert status(store, scope, guess) is Status.DORMANT


# history, default reads, replay


def test_history_is_kept_and_out_of_default_reads(store: MemoryStore, scope: ScopeRef) -> None:
    until = datetime(2030, 6, 1, tzinfo=UTC)
    gone = claim(scope, "Monday is a holiday", valid_until=until)
    guess = claim(scope, "Probably likes jazz", authority=Authority.INFERRED,
                  last_reinforced_at=datetime(2029, 1, 1, tzinfo=UTC))  # fmt: skip
    kept = claim(scope, "Ana lives in Lisbon")
    seed(store, scope, gone, guess, kept)
    lifecycle.dream(store, scope, LATER)
    by_id = {r.id: r for r in store.get_chunks(scope, [gone.id, guess.id, kept.id])}
    assert (by_id[gone.id].status, by_id[guess.id].status) == (Status.EXPIRED, Status.DORMANT)
    assert by_id[gone.id].text == gone.text and by_id[guess.id].text == guess.text
    assert {r.id for r in store.list_chunks(scope, LATER, 100, 0)} == {kept.id}
    hits = store.search_chunks(scope, EMBEDDER.embed("Monday holiday jazz"), 10, [], LATER)
    assert {h.record.id for h in hits} == {kept.id}
    then = {r.id for r in store.list_chunks(scope, until - timedelta(days=1), 100, 0)}
    assert gone.id in then and guess.id not in then  # as of when it held; dormant never
    brief = store.get_brief(scope, BriefVariant.FULL)
    assert brief is not None and kept.id in brief.text
    assert gone.id not in brief.text and guess.id not in brief.text


def test_replaying_a_pass_writes_nothing(store: MemoryStore, scope: ScopeRef) -> None:
    seed(store, scope, claim(scope, "Monday is a holiday", valid_until=LATER),
         claim(scope, "Ana lives in Lisbon"))  # fmt: skip
    first = lifecycle.dream(store, scope, LATER)
    assert first.expired == 1 and first.brief_changed
    briefs = [store.get_brief(scope, v) for v in BriefVariant]
    again = lifecycle.dream(store, scope, LATER)
    assert not again.changed and again.rounds == 1
    assert [store.get_brief(scope, v) for v in BriefVariant] == briefs  # compiled_at too
    assert len(store.list_change_log(scope, 100)) == 1


# no write overwrites another


MAX_TRIES = 20


def reinforce(store: MemoryStore, scope: ScopeRef, memory_id: str, at: datetime) -> bool:
    """A reinforcement, as formation commits one: +1 under the revision read, one more
    evidence line; re-read on REVISION_CHANGED. False when the claim is no longer active."""
    for _ in range(MAX_TRIES):
        current = one_chunk(store, scope, memory_id)
        if current.status is not Status.ACTIVE:
            return False
        update = ClaimUpdate(memory_id=memory_id, expected_revision=current.revision,
                             reinforcement_count=current.reinforcement_count + 1,
                             last_reinforced_at=at)  # fmt: skip
        line = Evidence(memory_id=memory_id, ref=f"conv://{scope.scope_id}/race#turn=1-1",
                        quote="soccer is on Tuesdays", recorded_at=at)  # fmt: skip
        try:
            store.apply(CommitPlan(scope=scope, claim_updates=[update], evidence=[line]))
        except Aborted as exc:
            if exc.reason != rules.REVISION_CHANGED:
                raise
            continue
        lifecycle.dream_after_change(store, scope, at)
        return True
    raise AssertionError("the reinforcement lost every try")


def relate(store: MemoryStore, scope: ScopeRef, memory_id: str, other: str) -> bool:
    """A person's edit: link a related claim, under the revision read; re-read on
    REVISION_CHANGED."""
    for _ in range(MAX_TRIES):
        current = one_chunk(store, scope, memory_id)
        update = ClaimUpdate(memory_id=memory_id, expected_revision=current.revision,
                             related=[*current.related, other])  # fmt: skip
        try:
            store.apply(CommitPlan(scope=scope, claim_updates=[update]))
        except Aborted as exc:
            if exc.reason != rules.REVISION_CHANGED:
                raise
            continue
        return True
    raise AssertionError("the edit lost every try")


class Gated:
    """The store, with the pass's first apply held until `release` is set: the pass has
    read the claim, and the other writers commit before it writes."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self.read = threading.Event()
        self.release = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def apply(self, plan: CommitPlan) -> Any:
        if plan.change_log and not self.release.is_set():
            self.read.set()
            assert self.release.wait(60), "the other writers never finished"
        return self._store.apply(plan)


def test_a_pass_that_read_before_a_reinforcement_and_an_edit_loses_and_redoes(
    store: MemoryStore, scope: ScopeRef
) -> None:
    soccer = claim(scope, "Soccer is on Tuesdays", reinforcement_count=3, valid_until=LATER)
    seed(store, scope, soccer)
    gated = Gated(store)
    outcome: dict[str, Any] = {}
    dreamer = threading.Thread(
        target=lambda: outcome.setdefault("pass", lifecycle.dream(gated, scope, LATER))  # type: ignore[arg-type]
    )
    dreamer.start()
    assert gated.read.wait(60)  # the pass computed expire-this-claim on revision 1
    assert reinforce(store, scope, soccer.id, LATER - timedelta(days=1))
    assert relate(store, scope, soccer.id, "chk_practice")
    gated.release.set()
    dreamer.join(60)
    report = outcome["pass"]
    assert report.expired == 1 and report.rounds >= 2  # lost once, then redid and settled
    final = one_chunk(store, scope, soccer.id)
    # every write kept: the reinforcement, the edit, and the pass's expiry on top of both
    assert final.reinforcement_count == 4 and final.related == ["chk_practice"]
    assert final.status is Status.EXPIRED and final.revision == soccer.revision + 3
    assert [c for _, c, _ in changes(store, scope)] == ["expired"]


def _race(writers: list[tuple[str, Callable[[], Any]]]) -> dict[str, Any]:
    """Start the writers together (a barrier, no sleeps); each one's result or error. The
    last to reach the barrier runs first, so the order of `writers` varies who leads."""
    start = threading.Barrier(len(writers))
    results: dict[str, Any] = {}

    def run(name: str, write: Callable[[], Any]) -> None:
        start.wait(60)
        try:
            results[name] = write()
        except Exception as exc:  # recorded, judged below
            results[name] = exc

    threads = [threading.Thread(target=run, args=item) for item in writers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(t.is_alive() for t in threads)
    return results


@pytest.mark.parametrize("order", list(itertools.permutations(("reinforce", "pass", "edit"))))
def test_formation_the_pass_and_a_correction_race_and_no_write_is_lost(
    store: MemoryStore, order: tuple[str, ...]
) -> None:
    scope = new_scope()
    soccer = claim(scope, "Soccer is on Tuesdays", durability=Durability.PASSING,
                   reinforcement_count=2)  # fmt: skip
    seed(store, scope, soccer)
    correction = SupersessionInput(
        chunk_id=soccer.id, replacement_chunk=ChunkInput(text="Soccer is on Wednesdays")
    )
    writers: dict[str, Callable[[], Any]] = {
        "reinforce": lambda: reinforce(store, scope, soccer.id, LATER - timedelta(days=1)),
        "pass": lambda: lifecycle.dream(store, scope, LATER),
        "edit": lambda: commit_items(store, scope, supersessions=[correction]),
    }
    results = _race([(name, writers[name]) for name in order])
    for name, result in results.items():  # a loser retried, or failed cleanly
        if isinstance(result, Exception):
            assert isinstance(result, Aborted), (name, result)
            assert result.reason == rules.REVISION_CHANGED, (name, result)
    assert not isinstance(results["edit"], Exception)  # a supersession checks no revision
    final = one_chunk(store, scope, soccer.id)
    reinforced = results["reinforce"] is True
    promoted = final.durability is Durability.DURABLE
    # each write that reported success is in the final state, and nothing else is
    assert final.status is Status.SUPERSEDED and final.superseded_by is not None
    assert final.reinforcement_count == (3 if reinforced else 2)
    assert not promoted or reinforced  # promoted only on the third reinforcement
    assert final.revision == soccer.revision + 1 + int(reinforced) + int(promoted)
    logged = [c for m, c, _ in changes(store, scope) if m == soccer.id]
    assert logged == (["promoted"] if promoted else [])
    # the brief the last writer left is current: a pass now finds nothing to do
    settled = lifecycle.dream(store, scope, LATER)
    assert not settled.changed, settled
    brief = store.get_brief(scope, BriefVariant.FULL)
    assert brief is not None and soccer.id not in brief.text


def test_a_change_log_line_is_dated_with_the_scope_local_day(
    store: MemoryStore, scope: ScopeRef
) -> None:
    seed(store, scope, claim(scope, "Pizza night", valid_until=LATER), zone=AZORES)
    lifecycle.dream(store, scope, LATER + timedelta(minutes=30))  # 23:30 on 31 December there
    (entry,) = store.list_change_log(scope, 10)
    assert isinstance(entry, ChangeLogEntry) and entry.day == "2030-12-31"
