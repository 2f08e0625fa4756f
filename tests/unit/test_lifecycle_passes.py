"""The lifecycle pass after a change, deferred (`jnh serve`): coalesced by scope, run at once
by `settle`, drained by `close`; and inline (the Cloud Functions)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest

from jennah.domain.models import ScopeRef
from jennah.ports.store import MemoryStore
from jennah.ports.work import in_background
from jennah.services import lifecycle
from tests.unit.fakes import FakeStore

A = ScopeRef(enterprise_id="e", scope_id="a")
B = ScopeRef(enterprise_id="e", scope_id="b")
T0 = datetime(2030, 1, 1, tzinfo=UTC)


class Recorded:
    """Stands in for `pass_inline`: records each pass; the first pass of `hold` waits for
    `release` (so changes can arrive while it runs)."""

    def __init__(self, hold: ScopeRef | None = None) -> None:
        self.runs: list[tuple[ScopeRef, datetime]] = []
        self.background: list[bool] = []  # in_background() during each pass
        self.hold = hold
        self.started = threading.Event()
        self.release = threading.Event()
        self.lock = threading.Lock()

    def __call__(self, store: MemoryStore, scope: ScopeRef, at: datetime) -> None:
        if scope == self.hold and not self.started.is_set():
            self.started.set()
            assert self.release.wait(30)
        with self.lock:
            self.runs.append((scope, at))
            self.background.append(in_background())


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Recorded:
    runs = Recorded(hold=A)
    monkeypatch.setattr(lifecycle, "pass_inline", runs)
    return runs


def test_changes_arriving_while_a_pass_runs_share_one_later_pass(recorded: Recorded) -> None:
    passes = lifecycle.DeferredPasses(FakeStore())
    store = FakeStore()
    passes(store, A, T0)
    assert recorded.started.wait(30)  # A's first pass is running (held)
    for second in range(1, 6):  # five more changes of A, one of B
        passes(store, A, T0.replace(second=second))
    passes(store, B, T0)
    recorded.release.set()
    assert passes.idle(30)
    assert (B, T0) in recorded.runs
    # A: its first pass, then ONE pass for the five changes, at the latest change's time
    assert [run for run in recorded.runs if run[0] == A] == [(A, T0), (A, T0.replace(second=5))]
    passes.close()


def test_settle_runs_a_pending_pass_in_the_callers_thread(recorded: Recorded) -> None:
    passes = lifecycle.DeferredPasses(FakeStore())
    passes(FakeStore(), A, T0)  # held running in the background
    assert recorded.started.wait(30)
    passes(FakeStore(), A, T0.replace(second=1))  # pending behind it
    settled = threading.Thread(target=passes.settle, args=(A,))
    settled.start()
    recorded.release.set()
    settled.join(30)
    assert not settled.is_alive()
    # settle returned only once both the running pass and the pending one had run
    assert [run for run in recorded.runs if run[0] == A] == [(A, T0), (A, T0.replace(second=1))]
    passes.close()


def test_close_runs_what_is_pending_and_later_changes_run_inline(recorded: Recorded) -> None:
    recorded.hold = None
    passes = lifecycle.DeferredPasses(FakeStore())
    passes(FakeStore(), B, T0)
    passes.close()
    assert (B, T0) in recorded.runs
    passes(FakeStore(), B, T0.replace(second=9))  # after close: in the caller's thread
    assert recorded.runs[-1] == (B, T0.replace(second=9))


def test_inline_passes_run_in_the_call_and_never_pend(recorded: Recorded) -> None:
    recorded.hold = None
    lifecycle.INLINE(FakeStore(), B, T0)
    assert recorded.runs == [(B, T0)]
    lifecycle.INLINE.settle(B)
    assert recorded.runs == [(B, T0)]


def test_a_pass_waits_for_its_scopes_writes_to_pause(recorded: Recorded) -> None:
    recorded.hold = None
    passes = lifecycle.DeferredPasses(FakeStore(), quiet=600, max_delay=600)
    for second in range(3):
        passes(FakeStore(), B, T0.replace(second=second))
    assert not passes.idle(0.2)  # still pending: the writes have not paused for 600 s
    assert recorded.runs == []
    passes.settle(B)  # a brief read does not wait for the pause
    assert recorded.runs == [(B, T0.replace(second=2))]
    passes(FakeStore(), A, T0)
    passes.close()  # nor does a shutdown
    assert recorded.runs[-1] == (A, T0)


def test_a_burst_of_writes_is_passed_once_its_writes_pause(recorded: Recorded) -> None:
    recorded.hold = None
    passes = lifecycle.DeferredPasses(FakeStore(), quiet=2, max_delay=600)
    for second in range(5):
        passes(FakeStore(), B, T0.replace(second=second))
    assert passes.idle(30)
    assert recorded.runs == [(B, T0.replace(second=4))]
    passes.close()


def test_the_threads_passes_are_background_work_and_a_callers_settle_is_its_own(
    recorded: Recorded,
) -> None:
    recorded.hold = None
    passes = lifecycle.DeferredPasses(FakeStore(), quiet=0, max_delay=0)
    passes(FakeStore(), A, T0)
    assert passes.idle(30)
    slow = lifecycle.DeferredPasses(FakeStore(), quiet=600, max_delay=600)
    slow(FakeStore(), B, T0)
    slow.settle(B)  # in this thread: a brief read's own work
    assert recorded.runs == [(A, T0), (B, T0)]
    assert recorded.background == [True, False]
    passes.close()
    slow.close()
