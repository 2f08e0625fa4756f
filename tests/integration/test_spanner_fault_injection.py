"""Commits under injected faults: a second emulator started with
--enable_fault_injection aborts commits at random. Every commit must still
succeed through run_in_transaction's retries, and none may be half-applied."""

from __future__ import annotations

import math
import random
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from jennah import errors
from jennah.adapters.spanner.store import SpannerStore
from jennah.domain import rules
from jennah.domain.models import (
    CommitPlan,
    ExecutionLogStep,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    ScopeRef,
    Supersession,
)
from tests.support.spanner_emulator import Emulator, create_database, start_emulator

pytestmark = [pytest.mark.spanner, pytest.mark.slow]

MIN_PLANS = 20
CLOSED_AT = datetime(2030, 1, 1, tzinfo=UTC)
MAX_PLANS = 200  # at the emulator's abort rate (~7 %), 200 commits without one abort is ~1e-6


class CountingDatabase:
    """A Database that counts how often transaction functions run (one run per attempt)."""

    def __init__(self, database: Any) -> None:
        self._database = database
        self._lock = threading.Lock()
        self.attempts = 0
        self.transactions = 0

    def run_in_transaction(self, fn: Callable[[Any], Any], **kwargs: Any) -> Any:
        def counted(txn: Any) -> Any:
            with self._lock:
                self.attempts += 1
            return fn(txn)

        with self._lock:
            self.transactions += 1
        return self._database.run_in_transaction(counted, **kwargs)

    def snapshot(self, **kwargs: Any) -> Any:
        return self._database.snapshot(**kwargs)

    @property
    def retries(self) -> int:
        return self.attempts - self.transactions


@dataclass
class Plan:
    plan: CommitPlan
    applied: bool = False


@pytest.fixture(scope="module")
def faulty_emulator() -> Iterator[Emulator]:
    emulator = start_emulator("--enable_fault_injection")
    yield emulator
    emulator.stop()


@pytest.fixture
def counting(faulty_emulator: Emulator) -> CountingDatabase:
    return CountingDatabase(create_database(faulty_emulator.host))


def _vector(seed: str) -> list[float]:
    rng = random.Random(seed)
    values = [rng.gauss(0.0, 1.0) for _ in range(384)]
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


def _plan(scope: ScopeRef, n: int, *, failing: bool = False) -> CommitPlan:
    texts = [f"plan {n} fact {i}" for i in range(3)]
    chunks = [
        MemoryRecord(
            id=rules.chunk_id(text, None),
            scope=scope,
            content_hash=rules.content_hash(text),
            text=text,
            metadata={"plan": str(n)},
            embedding=_vector(text),
        )
        for text in texts
    ]
    nodes = [GraphNode(node_id=f"p{n}-a", label="a"), GraphNode(node_id=f"p{n}-b", label="b")]
    edge = GraphEdge(
        edge_id=rules.edge_id(f"p{n}-a", "knows", f"p{n}-b", None),
        source=f"p{n}-a",
        relation="knows",
        target=f"p{n}-b",
    )
    plan = CommitPlan(
        scope=scope,
        chunks=chunks,
        nodes=nodes,
        edges=[edge],
        steps=[ExecutionLogStep(step_id=f"step-{n}", tool_input=f"turns of plan {n}")],
    )
    if failing:  # the last thing the transaction does fails: everything before must roll back
        plan.edge_supersessions = [
            Supersession(target_id="edg_missing", invalid_at=CLOSED_AT, superseded_by=edge.edge_id)
        ]
    return plan


def _rows_present(store: SpannerStore, plan: CommitPlan) -> tuple[int, int]:
    """(rows of the plan found, rows the plan writes)."""
    scope = plan.scope
    found = (
        len(store.get_chunks(scope, [c.id for c in plan.chunks]))
        + len(store.get_nodes(scope, [n.node_id for n in plan.nodes]))
        + len(store.get_edges(scope, [e.edge_id for e in plan.edges]))
        + sum(store.get_step(scope, s.step_id) is not None for s in plan.steps)
    )
    return found, len(plan.chunks) + len(plan.nodes) + len(plan.edges) + len(plan.steps)


def _assert_all_or_nothing(store: SpannerStore, plans: list[Plan]) -> None:
    for item in plans:
        found, total = _rows_present(store, item.plan)
        if item.applied:
            assert found == total, f"a successful commit lost rows: {found}/{total}"
        else:
            assert found == 0, f"a failed commit left {found}/{total} rows behind"


def test_commits_succeed_through_injected_aborts(counting: CountingDatabase) -> None:
    store = SpannerStore(counting, timeout_seconds=120)
    scope = ScopeRef(enterprise_id="ent-fault", scope_id=f"scope-{uuid.uuid4().hex}")
    plans: list[Plan] = []
    n = 0
    while n < MAX_PLANS and (n < MIN_PLANS or counting.retries == 0):
        item = Plan(_plan(scope, n))
        result = store.apply(item.plan)  # an abort that outlives the retries fails the test
        item.applied = True
        assert result.chunks_written == 3
        plans.append(item)
        n += 1
    assert counting.retries > 0, f"no commit was aborted in {n} commits: is fault injection on?"
    _assert_all_or_nothing(store, plans)
    assert len(store.list_chunks(scope, None, 1000, 0)) == 3 * n


def test_no_commit_is_half_applied_under_faults_and_contention(
    counting: CountingDatabase,
) -> None:
    """Two writers, every third plan failing at its end: each plan is all there or all absent."""
    store = SpannerStore(counting, timeout_seconds=120)
    scope = ScopeRef(enterprise_id="ent-fault", scope_id=f"scope-{uuid.uuid4().hex}")
    plans = [Plan(_plan(scope, n, failing=n % 3 == 2)) for n in range(18)]

    def writer(mine: list[Plan]) -> None:
        for item in mine:
            try:
                store.apply(item.plan)
                item.applied = True
            except errors.NotFound:
                item.applied = False

    threads = [threading.Thread(target=writer, args=(plans[i::2],)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert not any(thread.is_alive() for thread in threads)
    assert [item.applied for item in plans] == [n % 3 != 2 for n in range(18)]
    _assert_all_or_nothing(store, plans)
