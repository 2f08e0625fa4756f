"""Formations under injected faults on the Spanner emulator: the harness of
tests/integration/test_formation_fault_injection.py (in CI) and of
bench/formation_faults.py (1,000 formations).

Every formation runs as production runs it: `Formation.submit` (admission
against the usage ledger, an operation, a task), then `Formation.work` for
each delivery, with the rules model and the hashing embedder. The memory store and the
usage ledger are on a Spanner emulator started with --enable_fault_injection, which
aborts commits at random (the client retries the transaction). On top of that the store
fails `apply` at random with UNAVAILABLE, either before the commit (nothing written) or
after it (written, but the worker is told it failed: the ambiguous outcome of a commit
whose answer was lost). Every task is delivered twice, by concurrent workers, and a
delivery answered RETRY is delivered again, as Cloud Tasks does.

Each formation is a conversation of its own in a scope of its own (a residence and an
employer: two facts and two relations), so what it writes is known: the rows of the
plans it tried to commit. Afterwards the database is read directly: a formation whose
formationKey record is there has every chunk, edge and step of its plan; one whose key
is absent has none of them (`partial` counts the others), and no formation is committed
twice.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from jennah import errors
from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.adapters.models.rules import RulesModel
from jennah.adapters.spanner.ledger import SpannerUsageLedger
from jennah.adapters.spanner.store import SpannerStore
from jennah.adapters.sqlite.operations import SqliteOperationStore
from jennah.adapters.sqlite.vocabulary import SqliteVocabularyStore
from jennah.domain.access import Caller
from jennah.domain.billing import EnterpriseBilling, Plan
from jennah.domain.formation import Turn, TurnRole
from jennah.domain.models import CommitPlan, CommitResult, ScopeRecord, ScopeRef
from jennah.domain.operations import OPERATION_KEY_PREFIX, FormationOperation, OperationState
from jennah.ports.tasks import FormationTask
from jennah.services.formation import Formation, FormationRequest, Outcome
from tests.support.spanner_emulator import Emulator, create_database, start_emulator

PRINCIPAL = "user:fault-injector"
BATCH = 8  # formations admitted at once (an enterprise holds at most 10 in progress)
WORKERS = 4  # concurrent deliveries
DELIVERIES = 2  # each task is delivered this many times at first
LEASE = timedelta(minutes=5)
RETRY_PAUSE_SECONDS = 0.25  # before a delivery answered RETRY goes back in line


@dataclass
class Faults:
    """How often `apply` fails with UNAVAILABLE before and after committing."""

    before_commit: float = 0.1
    after_commit: float = 0.1
    seed: int = 13
    injected_before: int = 0
    injected_after: int = 0


@dataclass
class PlannedRows:
    """The rows a formation's plans would write, by kind (ids in its scope)."""

    chunks: set[str] = field(default_factory=set)
    edges: set[str] = field(default_factory=set)
    steps: set[str] = field(default_factory=set)


class FaultyStore:
    """A MemoryStore whose `apply` fails at random, and which records every plan it is
    given, by formationKey."""

    def __init__(self, inner: SpannerStore, faults: Faults) -> None:
        self._inner = inner
        self._faults = faults
        self._random = random.Random(faults.seed)
        self._lock = threading.Lock()
        self.planned: dict[str, PlannedRows] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def apply(self, plan: CommitPlan) -> CommitResult:
        with self._lock:
            if plan.formation_key is not None:
                rows = self.planned.setdefault(plan.formation_key.formation_key, PlannedRows())
                rows.chunks.update(c.id for c in plan.chunks)
                rows.edges.update(e.edge_id for e in plan.edges)
                rows.steps.update(s.step_id for s in plan.steps)
            roll = self._random.random()
        if roll < self._faults.before_commit:
            self._faults.injected_before += 1
            raise errors.Unavailable("injected: the store could not be reached")
        result = self._inner.apply(plan)
        if roll > 1 - self._faults.after_commit:
            self._faults.injected_after += 1
            raise errors.Unavailable("injected: the commit's answer was lost")
        return result


class CountingDatabase:
    """A Database that counts transaction attempts (one per run of the function): the
    attempts beyond one per transaction are the emulator's injected aborts, retried."""

    def __init__(self, database: Any) -> None:
        self._database = database
        self._lock = threading.Lock()
        self.attempts = 0
        self.transactions = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._database, name)

    def run_in_transaction(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        def counted(txn: Any, *inner: Any, **named: Any) -> Any:
            with self._lock:
                self.attempts += 1
            return fn(txn, *inner, **named)

        with self._lock:
            self.transactions += 1
        return self._database.run_in_transaction(counted, *args, **kwargs)

    @property
    def retries(self) -> int:
        return self.attempts - self.transactions


@dataclass
class Figures:
    formations: int = 0
    succeeded: int = 0
    failed: dict[str, int] = field(default_factory=dict)  # by error reason
    committed: int = 0  # formationKey records found
    partial: int = 0  # formations with some rows of their plan and not others
    committed_twice: int = 0  # more than one key record for one formation
    failed_but_committed: int = 0  # an operation that did not succeed, yet its key is there
    deliveries: int = 0
    retried_deliveries: int = 0  # answered RETRY (busy, or a transient failure)
    aborts_retried: int = 0  # transaction attempts the emulator aborted
    injected_before: int = 0
    injected_after: int = 0
    seconds: float = 0.0

    @property
    def healthy(self) -> bool:
        wrong = (self.partial, self.committed_twice, self.failed_but_committed)
        return not any(wrong) and self.committed == self.succeeded


@contextmanager
def faulty_spanner() -> Iterator[Emulator]:
    emulator = start_emulator("--enable_fault_injection")
    try:
        yield emulator
    finally:
        emulator.stop()


def run(emulator: Emulator, workdir: Path, formations: int, faults: Faults) -> Figures:
    """Form `formations` conversations under faults; what was found afterwards."""
    database = CountingDatabase(create_database(emulator.host))
    store = FaultyStore(SpannerStore(database, timeout_seconds=120), faults)
    ledger = SpannerUsageLedger(database, timeout_seconds=120)
    enterprise = f"ent-faults-{uuid.uuid4().hex[:8]}"
    ledger.put_billing(EnterpriseBilling(enterprise_id=enterprise, plan=Plan.ENTERPRISE))
    operations = SqliteOperationStore(workdir / f"operations-{enterprise}.db")
    vocabularies = SqliteVocabularyStore(workdir / f"operations-{enterprise}.db")
    formation = Formation(
        store=store, embedder=HashingEmbedder(), model=RulesModel(), ledger=ledger,
        vocabularies=vocabularies, operations=operations, queue=_Deferred(),
        now=lambda: datetime.now(UTC), lease=LEASE,
    )  # fmt: skip
    figures = Figures(formations=formations)
    started = time.monotonic()
    submitted: list[FormationOperation] = []
    try:
        for first in range(0, formations, BATCH):
            batch = [
                _submit(n, enterprise, formation)
                for n in range(first, min(first + BATCH, formations))
            ]
            submitted += batch
            _deliver(batch, formation, figures)
        figures.seconds = time.monotonic() - started
        _tally(submitted, operations, figures)
        _check_rows(database, enterprise, store.planned, submitted, operations, figures)
    finally:
        vocabularies.close()
        operations.close()
    figures.aborts_retried = database.retries
    figures.injected_before, figures.injected_after = faults.injected_before, faults.injected_after
    return figures


def conversation(n: int) -> list[Turn]:
    return [Turn(role=TurnRole.USER, content=f"I live in Town{n}. I work at Firm{n}.")]


def _submit(n: int, enterprise: str, formation: Formation) -> FormationOperation:
    scope = ScopeRef(enterprise_id=enterprise, scope_id=f"bot.faults-{n}")
    registration = ScopeRecord(scope=scope, kind="agent", created_by=PRINCIPAL)
    caller = Caller(enterprise_id=enterprise, principal=PRINCIPAL)
    request = FormationRequest(turns=conversation(n))
    submitted = formation.submit(request, caller, scope, registration)
    assert isinstance(submitted, FormationOperation)
    return submitted


class _Deferred:
    """A queue that takes the task and leaves its deliveries to `_deliver`."""

    def enqueue(self, task: FormationTask) -> None:
        pass


def _deliver(batch: list[FormationOperation], formation: Formation, figures: Figures) -> None:
    """Deliver each task DELIVERIES times from WORKERS threads; RETRY delivers again."""
    pending: deque[FormationTask] = deque(
        FormationTask(enterprise_id=op.enterprise_id, operation_id=op.operation_id)
        for _ in range(DELIVERIES)
        for op in batch
    )
    lock = threading.Lock()

    def worker() -> None:
        name = f"worker-{uuid.uuid4().hex[:8]}"
        while True:
            with lock:
                if not pending:
                    return
                task = pending.popleft()
                figures.deliveries += 1
            outcome = formation.work(task, name)
            if outcome is Outcome.RETRY:
                time.sleep(RETRY_PAUSE_SECONDS)
                with lock:
                    figures.retried_deliveries += 1
                    pending.append(task)

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for future in [pool.submit(worker) for _ in range(WORKERS)]:
            future.result()


def _tally(
    submitted: list[FormationOperation], operations: SqliteOperationStore, figures: Figures
) -> None:
    for operation in submitted:
        final = operations.get(operation.enterprise_id, operation.operation_id)
        assert final is not None and final.done, f"operation {operation.operation_id} not done"
        if final.state is OperationState.SUCCEEDED:
            figures.succeeded += 1
        else:
            reason = (final.error.reason or final.error.code) if final.error else final.state
            figures.failed[str(reason)] = figures.failed.get(str(reason), 0) + 1


def _check_rows(
    database: Any,
    enterprise: str,
    planned: dict[str, PlannedRows],
    submitted: list[FormationOperation],
    operations: SqliteOperationStore,
    figures: Figures,
) -> None:
    """All or nothing per formation, read straight from the database."""
    keys = _column(database, "formation_keys", "formation_key", enterprise)
    chunks = set(_column(database, "memory_records", "id", enterprise))
    edges = set(_column(database, "graph_edges", "edge_id", enterprise))
    steps = set(_column(database, "execution_log_steps", "step_id", enterprise))
    figures.committed = len(set(keys))
    figures.committed_twice = len(keys) - len(set(keys))
    for operation in submitted:
        key = OPERATION_KEY_PREFIX + operation.operation_id
        rows = planned.get(key, PlannedRows())
        present = [
            *(c in chunks for c in rows.chunks),
            *(e in edges for e in rows.edges),
            *(s in steps for s in rows.steps),
        ]
        committed = key in keys
        final = operations.get(operation.enterprise_id, operation.operation_id)
        if committed and (final is None or final.state is not OperationState.SUCCEEDED):
            figures.failed_but_committed += 1
        if (committed and not all(present)) or (not committed and any(present)):
            figures.partial += 1
        if committed and not rows.chunks:
            figures.partial += 1  # a formation of two facts committed none of them


def _column(database: Any, table: str, column: str, enterprise: str) -> list[str]:
    from google.cloud.spanner_v1 import param_types

    with database.snapshot() as snapshot:
        return [
            row[0]
            for row in snapshot.execute_sql(
                f"SELECT {column} FROM {table} WHERE enterprise_id = @e",
                params={"e": enterprise},
                param_types={"e": param_types.STRING},
                timeout=120,
            )
        ]
