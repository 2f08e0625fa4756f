"""A Spanner that dies or hangs must fail store calls within their time bound,
not hang the function: the client library alone would restart a streaming read
after UNAVAILABLE forever and retry a commit for an hour."""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from jennah import errors
from jennah.adapters.spanner.store import SpannerStore
from jennah.domain.models import CommitPlan, GraphNode, ScopeRef
from tests.support.spanner_emulator import Emulator, create_database, start_emulator

pytestmark = [pytest.mark.spanner, pytest.mark.slow]

BOUND = 1.5
SLACK = 1.5  # the grace for the call's own error, thread start, scheduling


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    emulator = start_emulator()
    yield emulator
    if emulator.process is not None and emulator.process.poll() is None:
        os.kill(emulator.process.pid, signal.SIGCONT)
    emulator.stop()


@pytest.fixture
def scope() -> ScopeRef:
    return ScopeRef(enterprise_id="ent-outage", scope_id=f"scope-{uuid.uuid4().hex}")


def _calls(store: SpannerStore, scope: ScopeRef) -> dict[str, Callable[[], Any]]:
    return {
        "list_chunks": lambda: store.list_chunks(scope, None, 10, 0),
        "get_nodes": lambda: store.get_nodes(scope, ["n"]),
        "apply": lambda: store.apply(CommitPlan(scope=scope, nodes=[GraphNode(node_id="m")])),
    }


def _assert_bounded(call: Callable[[], Any], expected: tuple[type[Exception], ...]) -> None:
    started = time.monotonic()
    with pytest.raises(expected):
        call()
    assert time.monotonic() - started < BOUND + SLACK


def _ready_store(database: Any, scope: ScopeRef) -> SpannerStore:
    store = SpannerStore(database, timeout_seconds=BOUND)
    store.apply(CommitPlan(scope=scope, nodes=[GraphNode(node_id="n")]))  # sessions exist
    return store


def test_a_dead_spanner_fails_every_call_within_the_bound(
    emulator: Emulator, scope: ScopeRef
) -> None:
    store = _ready_store(create_database(emulator.host), scope)
    assert emulator.process is not None
    emulator.process.kill()
    emulator.process.wait()
    for call in _calls(store, scope).values():
        _assert_bounded(call, (errors.Unavailable, errors.DeadlineExceeded))


def test_a_hung_spanner_fails_every_call_within_the_bound_and_recovers(
    emulator: Emulator, scope: ScopeRef
) -> None:
    database = create_database(emulator.host)
    store = _ready_store(database, scope)
    assert emulator.process is not None
    os.kill(emulator.process.pid, signal.SIGSTOP)
    try:
        for call in _calls(store, scope).values():
            _assert_bounded(call, (errors.DeadlineExceeded,))
    finally:
        os.kill(emulator.process.pid, signal.SIGCONT)
    # Once Spanner answers, this thread can run transactions again (the client
    # would refuse them here had a failed session creation poisoned it). The
    # abandoned transaction may hold the emulator's one transaction slot for a
    # while, hence a longer bound for the retries that wait it out.
    patient = SpannerStore(database, timeout_seconds=60)
    patient.apply(CommitPlan(scope=scope, nodes=[GraphNode(node_id="after")]))
    assert [n.node_id for n in patient.get_nodes(scope, ["after", "n"])] == ["after", "n"]
