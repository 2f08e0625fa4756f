"""The lifecycle ("dream") pass: one scope's (`dream`), or every scope's (`nightly`).

A pass reads the scope's active claims, works out the transitions due at `now`
(`jennah.domain.lifecycle`: expire, decay, promote), recompiles the briefs from the
claims that stay active (`jennah.services.brief.compile_briefs`) and applies ONE
CommitPlan: the claim updates, each under the revision it read, the change-log lines
and the briefs that changed. Nothing is written when nothing is due and the briefs
compile to the bytes already stored, so replaying a pass at the same `now` changes
nothing: no update, no change-log line, no brief write (a brief's `compiled_at` is
therefore when its bytes last changed).

No write overwrites another. A claim another writer changed after the pass read it
fails the plan whole with Aborted REVISION_CHANGED; the pass then reads again and
recomputes. After a plan lands the pass reads the active claims once more: when they are
exactly what its plan left (same ids, same revisions) the brief it wrote is current and it
stops; otherwise another writer changed a claim in between (a claim committed while the
pass was compiling, say) and it goes round again from that read. So the brief a pass
leaves was compiled from claims no write has changed since. At most MAX_ROUNDS rounds;
a pass that never settles is Aborted REVISION_CHANGED (what it wrote stays, and the
writers that kept changing the scope each run their own pass after their change).

Triggers: `dream_after_change` after a formation or memory:commit that changed claims,
`POST …/memory:dream` on demand, and the private `lifecycle` function every night
(`nightly`: every scope of every enterprise, resuming where a killed walk stopped).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Protocol

from jennah.domain import lifecycle
from jennah.domain.claim_state import ClaimState
from jennah.domain.lifecycle import Change, Transition, WalkCursor
from jennah.domain.models import (
    CommitPlan,
    ScopeRecord,
    ScopeRef,
    Status,
    StoredBrief,
)
from jennah.domain.rules import REVISION_CHANGED
from jennah.errors import Aborted, FailedPrecondition, InvalidArgument, JennahError, NotFound
from jennah.ports.cursors import CursorStore
from jennah.ports.store import MemoryStore
from jennah.ports.work import background
from jennah.services.brief import active_claims, compile_briefs

log = logging.getLogger(__name__)

MAX_ROUNDS = 5  # reads of one pass: its write, and what another writer made it redo
WALK_BATCH = 100  # scopes read per walk_scopes call
CURSOR = "lifecycle"  # the nightly walk's cursor name


@dataclass(frozen=True)
class DreamReport:
    """What one pass changed in a scope: claims expired, promoted and decayed, and
    whether a brief was rewritten. `rounds` counts the plans it computed."""

    scope: ScopeRef
    expired: int = 0
    promoted: int = 0
    decayed: int = 0
    brief_changed: bool = False
    rounds: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.expired or self.promoted or self.decayed or self.brief_changed)

    def plus(self, moves: Sequence[Transition], briefs: Sequence[StoredBrief]) -> DreamReport:
        def count(change: Change) -> int:
            return sum(1 for move in moves if move.change is change)

        return replace(
            self,
            expired=self.expired + count(Change.EXPIRED),
            promoted=self.promoted + count(Change.PROMOTED),
            decayed=self.decayed + count(Change.DECAYED),
            brief_changed=self.brief_changed or bool(briefs),
        )


def dream(store: MemoryStore, scope: ScopeRef, now: datetime) -> DreamReport:
    """Run the lifecycle pass over one scope at `now` (see the module doc), in the time
    zone of its registration: NotFound for a scope that is not registered (or was just
    destroyed: nothing is written for it). Aborted REVISION_CHANGED when it never settles.
    """
    zone = lifecycle.scope_zone(_registration(store, scope).time_zone)
    report = DreamReport(scope=scope)
    claims = active_claims(store, scope)
    for rounds in range(1, MAX_ROUNDS + 1):
        report = replace(report, rounds=rounds)
        moves = lifecycle.transitions(claims, now, zone)
        briefs = _changed_briefs(store, scope, lifecycle.active_after(claims, moves, now), now)
        if not moves and not briefs:
            return report
        try:
            store.apply(_plan(scope, moves, briefs))
        except Aborted as exc:
            if exc.reason != REVISION_CHANGED:
                raise
            claims = active_claims(store, scope)
            continue
        report = report.plus(moves, briefs)
        expected = [c for c in lifecycle.after_moves(claims, moves) if c.status is Status.ACTIVE]
        claims = active_claims(store, scope)
        if _versions(claims) == _versions(expected):
            return report  # nobody changed a claim in between: what it wrote is current
    raise Aborted(
        f"the lifecycle pass of scope {scope.scope_id!r} could not settle: other writers "
        f"changed its claims {MAX_ROUNDS} times while it ran. Run it again",
        reason=REVISION_CHANGED,
    )


def dream_after_change(store: MemoryStore, scope: ScopeRef, now: datetime) -> DreamReport | None:
    """The pass that follows a write that changed claims (formation, memory:commit).

    The write has committed already, so a failed pass must not fail it: the failure is
    logged and None returned (the next change's pass or the nightly one catches up).
    """
    try:
        return dream(store, scope, now)
    except NotFound:  # a scope written without registering it (only store-level callers)
        return None
    except JennahError as exc:
        log.warning("the lifecycle pass after a change of %s failed: %s", scope.scope_id, exc)
        return None


def changes_claims(plan: CommitPlan) -> bool:
    """Whether a committed plan changed what a brief is compiled from (the claims)."""
    return bool(plan.chunks or plan.chunk_supersessions or plan.claim_updates)


@dataclass
class NightlyReport:
    """What one run of the nightly walk did. `finished` is False when it stopped for
    `stop` (its cursor says where the next run resumes); `failed` names the scopes whose
    pass never settled or could not run (they are tried again the next night)."""

    started_at: datetime
    resumed_after: ScopeRef | None
    scopes: int = 0
    expired: int = 0
    promoted: int = 0
    decayed: int = 0
    briefs_changed: int = 0
    finished: bool = False
    failed: list[ScopeRef] = field(default_factory=list)

    def add(self, dreamt: DreamReport) -> None:
        self.scopes += 1
        self.expired += dreamt.expired
        self.promoted += dreamt.promoted
        self.decayed += dreamt.decayed
        self.briefs_changed += int(dreamt.brief_changed)


def _never() -> bool:
    return False


def nightly(
    store: MemoryStore,
    cursors: CursorStore,
    now: datetime,
    *,
    stop: Callable[[], bool] = _never,
    batch: int = WALK_BATCH,
) -> NightlyReport:
    """Walk every scope of every enterprise (`store.walk_scopes`, `batch` at a time) and
    dream each at `now`, saving the cursor after each scope.

    A run resumes an unfinished walk begun within `lifecycle.RESUME_WINDOW`, after the
    last scope it finished (a scope whose pass landed but whose cursor was not saved
    yet is dreamt again, which changes nothing), and otherwise starts a new walk. `stop`
    is asked before each scope: True saves the cursor and returns unfinished. Other
    errors leave the cursor at the last finished scope and propagate.
    """
    walk = lifecycle.walk_start(cursors.get(CURSOR), now)
    report = NightlyReport(started_at=walk.started_at, resumed_after=walk.after)
    after = walk.after
    while True:
        page = store.walk_scopes(after, batch)
        for record in page:
            if stop():
                cursors.put(CURSOR, WalkCursor(after=after, started_at=walk.started_at))
                return report
            _dream_one(store, record, now, report)
            after = record.scope
            cursors.put(CURSOR, WalkCursor(after=after, started_at=walk.started_at))
        if len(page) < batch:
            break
    cursors.put(CURSOR, WalkCursor(started_at=walk.started_at, finished_at=now))
    report.finished = True
    return report


def _dream_one(
    store: MemoryStore, record: ScopeRecord, now: datetime, report: NightlyReport
) -> None:
    """One scope's pass. A scope destroyed since the walk read it is passed over; one whose
    pass never settles or cannot run (a stored time zone that is not IANA) is reported
    failed and the walk goes on; other errors (the store unavailable) end the run."""
    try:
        dreamt = dream(store, record.scope, now)
    except NotFound:
        return
    except (Aborted, InvalidArgument, FailedPrecondition) as exc:
        if isinstance(exc, Aborted) and exc.reason != REVISION_CHANGED:
            raise
        log.warning("the lifecycle pass of %s failed: %s", record.scope.scope_id, exc)
        report.failed.append(record.scope)
        return
    report.add(dreamt)


def _registration(store: MemoryStore, scope: ScopeRef) -> ScopeRecord:
    record = store.get_scope(scope)
    if record is None:
        raise NotFound(f"scope {scope.scope_id!r} was not found")
    return record


def _versions(claims: Sequence[ClaimState]) -> list[tuple[str, int]]:
    return [(claim.id, claim.revision) for claim in claims]


def _changed_briefs(
    store: MemoryStore, scope: ScopeRef, active: Sequence[ClaimState], now: datetime
) -> list[StoredBrief]:
    """The compiled briefs whose bytes (text, token count, expiries) differ from the stored."""
    changed = []
    for brief in compile_briefs(store, scope, active, now):
        stored = store.get_brief(scope, brief.variant)
        if stored is None or _content(stored) != _content(brief):
            changed.append(brief)
    return changed


def _content(brief: StoredBrief) -> tuple[str, int, dict[str, datetime]]:
    return brief.text, brief.token_count, brief.expiries


def _plan(scope: ScopeRef, moves: Sequence[Transition], briefs: list[StoredBrief]) -> CommitPlan:
    return CommitPlan(
        scope=scope,
        claim_updates=[move.update for move in moves],
        change_log=[move.entry for move in moves],
        briefs=briefs,
    )


class Passes(Protocol):
    """What follows a write that changed claims: the scope's pass (`InlinePasses` or
    `DeferredPasses`), given the store, the scope and the write's receipt time."""

    def __call__(self, store: MemoryStore, scope: ScopeRef, at: datetime) -> None: ...

    def settle(self, scope: ScopeRef) -> None:
        """Run the scope's pending pass now, if one is pending."""
        ...


def pass_inline(store: MemoryStore, scope: ScopeRef, at: datetime) -> None:
    dream_after_change(store, scope, at)


class InlinePasses:
    """The pass after a change, in the request that made it (the Cloud Functions: an
    instance has no life between requests to run it later). Nothing is ever pending."""

    def __call__(self, store: MemoryStore, scope: ScopeRef, at: datetime) -> None:
        pass_inline(store, scope, at)

    def settle(self, scope: ScopeRef) -> None:
        return None


INLINE = InlinePasses()


# A deferred pass waits until its scope's writes pause this long (seconds), or until its
# first pending change is MAX_PASS_DELAY old: a burst of writes pays one pass.
PASS_QUIET = 0.5
MAX_PASS_DELAY = 5.0


class DeferredPasses:
    """The pass after a change, off the request (`jnh serve`): one background thread runs
    each changed scope's pass once the scope's writes pause for `quiet` seconds (or its
    first pending change is `max_delay` old), and the changes of a scope that arrive before
    its pass starts share that one pass (a burst of commits pays one recompile, not one each).

    `settle(scope)` runs a scope's pending pass at once, in the caller's thread (or waits
    for the one running): the brief read calls it, so what a write changed is in the next
    brief at once. `close()` runs what is pending, then stops the thread.
    """

    def __init__(
        self, store: MemoryStore, quiet: float = PASS_QUIET, max_delay: float = MAX_PASS_DELAY
    ) -> None:
        self._store = store
        self._quiet, self._max_delay = quiet, max_delay
        self._pending: dict[ScopeRef, datetime] = {}  # scope -> latest change's time
        # scope -> (monotonic time of its first pending change, of its latest)
        self._seen: dict[ScopeRef, tuple[float, float]] = {}
        self._running: set[ScopeRef] = set()
        self._changed = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._work, name="lifecycle-passes", daemon=True)
        self._thread.start()

    def __call__(self, store: MemoryStore, scope: ScopeRef, at: datetime) -> None:
        with self._changed:
            if self._closed:
                pass_inline(store, scope, at)
                return
            self._pending[scope] = max(at, self._pending.get(scope, at))
            clock = time.monotonic()
            self._seen[scope] = (self._seen.get(scope, (clock, clock))[0], clock)
            self._changed.notify_all()

    def settle(self, scope: ScopeRef) -> None:
        with self._changed:
            while scope in self._running:
                self._changed.wait()
            at = self._pending.pop(scope, None)
            self._seen.pop(scope, None)
            if at is None:
                return
            self._running.add(scope)
        self._run(scope, at)

    def idle(self, timeout: float | None = None) -> bool:
        """Wait until no pass is pending or running; whether that happened in `timeout`."""
        with self._changed:
            return self._changed.wait_for(
                lambda: not self._pending and not self._running, timeout=timeout
            )

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        self._thread.join()

    def _work(self) -> None:
        while True:
            with self._changed:
                while True:
                    runnable, wait = self._runnable()
                    if runnable or (self._closed and not self._pending):
                        break
                    self._changed.wait(wait)
                if not runnable:
                    return  # closed, and nothing left to run
                scope = runnable[0]
                at = self._pending.pop(scope)
                self._seen.pop(scope, None)
                self._running.add(scope)
            with background():  # this thread's passes; a caller's `settle` is its own work
                self._run(scope, at)

    def _runnable(self) -> tuple[list[ScopeRef], float | None]:
        """Pending scopes whose pass is due and not running (a change during a scope's pass
        waits for it, then gets a pass of its own; once closed, every pending one is due),
        and how long until the next one is due (None: only a change or a pass ending can
        make one due)."""
        clock, due, wait = time.monotonic(), [], None
        for scope in self._pending:
            if scope in self._running:
                continue
            first, latest = self._seen.get(scope, (clock, clock))
            ready = min(latest + self._quiet, first + self._max_delay)
            if self._closed or ready <= clock:
                due.append(scope)
            else:
                wait = ready - clock if wait is None else min(wait, ready - clock)
        return due, wait

    def _run(self, scope: ScopeRef, at: datetime) -> None:
        try:
            pass_inline(self._store, scope, at)
        except Exception:  # the pass never fails a write; the nightly pass catches up
            log.exception("the lifecycle pass after a change of %s failed", scope.scope_id)
        finally:
            with self._changed:
                self._running.discard(scope)
                self._changed.notify_all()
