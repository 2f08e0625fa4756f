"""memory:form as an operation: `Formation.submit`, `work` and `wait` on the real SQLite
stores.

The service runs against SqliteStore, SqliteUsageLedger and SqliteOperationStore in
one tmp file, the hashing embedder and a scripted model. The task queue is a list,
so each delivery is an explicit `work` call; the clock is a fake one, so leases run
out when a test says so. The last section drives the same service through the API
(`"async": true` and GET /v1/operations/{id}) with the in-process worker pool.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from jennah import errors
from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.adapters.models.scripted import ScriptedModel, Slow
from jennah.adapters.sqlite.connection import open_connection
from jennah.adapters.sqlite.ledger import SqliteUsageLedger
from jennah.adapters.sqlite.operations import SqliteOperationStore
from jennah.adapters.sqlite.store import SqliteStore
from jennah.adapters.sqlite.vocabulary import SqliteVocabularyStore
from jennah.domain.access import Caller
from jennah.domain.billing import EnterpriseBilling, Plan, UsageRecord
from jennah.domain.formation import FormationReceipt, Turn, TurnRole
from jennah.domain.models import CommitPlan, CommitResult, ScopeRecord, ScopeRef
from jennah.domain.operations import (
    CLIENT_CLOSED_MESSAGE,
    OPERATION_KEY_PREFIX,
    FormationOperation,
    OperationState,
    error_from,
    error_of,
)
from jennah.errors import ClientGone, JennahError
from jennah.ports.model import ModelResult
from jennah.ports.operations import OperationStore
from jennah.ports.store import MemoryStore
from jennah.ports.tasks import FormationTask
from jennah.ports.work import in_background
from jennah.services.formation import (
    Formation,
    FormationRequest,
    OperationRequest,
    Outcome,
    use_case,
)
from jennah.services.formation import result as operation_result
from tests.integration.test_api_form import TOKYO, _extraction, ok, reason, refused, sqlite_api
from tests.unit.fakes import ENTERPRISE, ROOT, ROOT_SECRET, add_enterprise

CALLER = Caller(enterprise_id=ENTERPRISE, principal=ROOT)
SCOPE = ScopeRef(enterprise_id=ENTERPRISE, scope_id="support-bot")
REGISTRATION = ScopeRecord(scope=SCOPE, kind="agent", created_by=ROOT)
TURNS = [Turn(role=TurnRole.USER, content="I live in Tokyo.")]
ONE_FACT = _extraction(("The user lives in Tokyo.", "I live in Tokyo"))
MEMORY_TABLES = (
    "memory_records", "evidence", "memory_links", "graph_nodes", "graph_edges",
    "execution_log_steps", "formation_keys", "scopes",
)  # fmt: skip
LEASE = timedelta(minutes=5)


class Clock:
    """The service's clock, moved by hand (leases run out when a test advances it)."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta


@dataclass
class RecordingQueue:
    """The TaskQueue port as a list: deliveries happen when a test calls `deliver`."""

    tasks: list[FormationTask] = field(default_factory=list)
    failure: JennahError | None = None

    def enqueue(self, task: FormationTask) -> None:
        if self.failure is not None:
            raise self.failure
        self.tasks.append(task)


@dataclass
class World:
    path: Path
    store: SqliteStore
    ledger: SqliteUsageLedger
    operations: SqliteOperationStore
    vocabularies: SqliteVocabularyStore
    model: ScriptedModel
    clock: Clock
    queue: RecordingQueue

    def formation(
        self,
        *,
        store: MemoryStore | None = None,
        operations: OperationStore | None = None,
        lease: timedelta = LEASE,
        model_call_deadline: float = 30.0,
    ) -> Formation:
        """The use case on this world's stores, or on the stand-ins a test passes."""
        return Formation(
            store=store or self.store, embedder=HashingEmbedder(), model=self.model,
            ledger=self.ledger, vocabularies=self.vocabularies,
            operations=operations or self.operations, queue=self.queue, now=self.clock,
            lease=lease, model_call_deadline=model_call_deadline,
        )  # fmt: skip

    def submit(
        self, request: FormationRequest, **options: Any
    ) -> FormationReceipt | FormationOperation:
        return self.formation(**options).submit(request, CALLER, SCOPE, REGISTRATION)

    def queued(self, request: FormationRequest | None = None, **options: Any) -> FormationOperation:
        submitted = self.submit(request or formation(), **options)
        assert isinstance(submitted, FormationOperation)
        return submitted

    def deliver(
        self, operation: FormationOperation, worker: str = "worker-a", **options: Any
    ) -> Outcome:
        task = FormationTask(enterprise_id=ENTERPRISE, operation_id=operation.operation_id)
        return self.formation(**options).work(task, worker)

    def wait(self, operation: FormationOperation, **options: Any) -> FormationOperation:
        return self.formation().wait(operation, **options)

    def current(self, operation: FormationOperation) -> FormationOperation:
        found = self.operations.get(ENTERPRISE, operation.operation_id)
        assert found is not None
        return found

    def in_progress(self) -> int:
        return self.ledger.snapshot(ENTERPRISE, self.clock()).in_progress.formations

    def memory(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row the formation could have written."""
        return {table: self._rows(f"SELECT * FROM {table}") for table in MEMORY_TABLES}

    def usage(self) -> dict[str, int]:
        """The usage ledger: units recorded per formation id."""
        return dict(self._rows("SELECT formation_id, units FROM usage_records"))  # type: ignore[arg-type]

    def operation_ids(self) -> list[str]:
        return [row[0] for row in self._rows("SELECT operation_id FROM formation_operations")]

    def _rows(self, sql: str) -> list[tuple[Any, ...]]:
        conn = open_connection(self.path)  # never another SQLite library on the same file
        try:
            return sorted(map(tuple, conn.execute(sql)), key=repr)
        finally:
            conn.close()


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    path = tmp_path / "memory.db"
    store, ledger, operations = (
        SqliteStore(path), SqliteUsageLedger(path), SqliteOperationStore(path)
    )  # fmt: skip
    vocabularies = SqliteVocabularyStore(path)
    yield World(
        path, store, ledger, operations, vocabularies, ScriptedModel(), Clock(), RecordingQueue()
    )
    vocabularies.close()
    operations.close()
    ledger.close()
    store.close()


def formation(
    turns: list[Turn] | None = None, formation_key: str | None = None
) -> FormationRequest:
    return FormationRequest(turns=turns or TURNS, formation_key=formation_key)


# submit


class _Marking(SqliteStore):
    """The store, noting whether each plan is applied as background work."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.background: list[bool] = []

    def apply(self, plan: CommitPlan) -> CommitResult:
        self.background.append(in_background())
        return super().apply(plan)


def test_a_delivery_forms_as_background_work_and_the_caller_stays_interactive(
    world: World,
) -> None:
    store = _Marking(world.path)
    try:
        world.model.add(ONE_FACT)
        operation = world.queued(store=store)
        assert world.deliver(operation, store=store) is Outcome.ACK
        assert store.background and all(store.background)  # the formation's writes
        assert not in_background()  # the mark ended with the delivery
    finally:
        store.close()


def test_submit_creates_a_queued_operation_holding_a_reservation(world: World) -> None:
    operation = world.queued()
    assert operation.state is OperationState.QUEUED and not operation.done
    assert re.fullmatch(r"op_[0-9a-f]{32}", operation.operation_id)
    assert operation.formation_key is None  # the caller sent none
    assert world.queue.tasks == [
        FormationTask(enterprise_id=ENTERPRISE, operation_id=operation.operation_id)
    ]
    assert world.current(operation) == operation
    request = OperationRequest.model_validate_json(operation.request_json)
    assert request.command.formation_key == OPERATION_KEY_PREFIX + operation.operation_id
    assert request.admitted.formation_id == operation.formation_id
    assert world.in_progress() == 1 and world.model.calls == []


def test_submit_replays_a_committed_key_and_spends_nothing(world: World) -> None:
    world.model.add(ONE_FACT)
    first = world.queued(formation(formation_key="conversation-1"))
    assert world.deliver(first) is Outcome.ACK
    before = (world.operation_ids(), world.usage(), world.memory(), len(world.queue.tasks))
    replayed = world.submit(formation(formation_key="conversation-1"))
    assert isinstance(replayed, FormationReceipt) and replayed.replay is True
    assert replayed.candidates == operation_result(world.current(first)).candidates
    assert (world.operation_ids(), world.usage(), world.memory(), len(world.queue.tasks)) == before
    assert world.in_progress() == 0 and len(world.model.calls) == 1


def test_an_oversized_request_is_invalid_and_creates_no_operation(world: World) -> None:
    oversized = formation([Turn(role=TurnRole.USER, content="x" * 80_000)])
    with pytest.raises(errors.InvalidArgument) as raised:
        world.submit(oversized)
    assert raised.value.reason == "FORMATION_INPUT_CAP"
    assert world.operation_ids() == [] and world.queue.tasks == [] and world.in_progress() == 0


def test_at_the_allowance_no_operation_is_created_and_nothing_queued(world: World) -> None:
    world.ledger.put_billing(EnterpriseBilling(enterprise_id=ENTERPRISE, plan=Plan.PRO))
    world.ledger.record_many([UsageRecord(
        enterprise_id=ENTERPRISE, spent_in_scope="support-bot", caller=ROOT, model="scripted",
        region="local", input_tokens=0, output_tokens=0, units=550, formation_id="fu_past",
        recorded_at=world.clock(),
    )])  # fmt: skip
    with pytest.raises(errors.ResourceExhausted) as raised:
        world.submit(formation())
    assert raised.value.reason == "FORMATION_ALLOWANCE_EXHAUSTED"
    assert world.operation_ids() == [] and world.queue.tasks == [] and world.in_progress() == 0
    assert world.usage() == {"fu_past": 550}


def test_the_reserved_key_prefix_is_invalid(world: World) -> None:
    with pytest.raises(errors.InvalidArgument) as raised:
        world.submit(formation(formation_key=OPERATION_KEY_PREFIX + "x"))
    assert raised.value.metadata["field"] == "formationKey"
    assert "formationKey" in raised.value.message and OPERATION_KEY_PREFIX in raised.value.message
    assert world.operation_ids() == [] and world.queue.tasks == [] and world.in_progress() == 0


def test_a_queue_that_fails_leaves_a_failed_operation_and_no_reservation(world: World) -> None:
    world.queue.failure = errors.Unavailable("the queue is down")
    with pytest.raises(errors.Unavailable) as raised:
        world.submit(formation())
    assert raised.value.reason == "FORMATION_NOT_QUEUED"
    assert "the queue is down" in raised.value.message
    assert "nothing was spent" in raised.value.message
    assert world.in_progress() == 0 and world.usage() == {}
    (operation_id,) = world.operation_ids()
    failed = world.operations.get(ENTERPRISE, operation_id)
    assert failed is not None and failed.state is OperationState.FAILED
    assert failed.error is not None and failed.error.code == "UNAVAILABLE"


# work


def test_one_delivery_forms_and_succeeds(world: World) -> None:
    world.model.add(ONE_FACT)
    operation = world.queued()
    assert world.deliver(operation) is Outcome.ACK
    done = world.current(operation)
    assert done.state is OperationState.SUCCEEDED and done.attempts == 1
    assert done.lease_owner is None and done.error is None
    receipt = operation_result(done)
    assert [c.text for c in receipt.candidates] == ["The user lives in Tokyo."]
    assert receipt.replay is False and receipt.commit_timestamp is not None
    assert receipt.formation_key is None  # the operation's own key stays inside
    assert len(world.model.calls) == 1
    assert world.usage() == {operation.formation_id: receipt.formation_units}
    assert world.in_progress() == 0
    (key,) = world.memory()["formation_keys"]
    assert OPERATION_KEY_PREFIX + operation.operation_id in key


def test_a_second_delivery_is_acknowledged_without_a_model_call(world: World) -> None:
    world.model.add(ONE_FACT)
    operation = world.queued()
    world.deliver(operation)
    before = (world.current(operation), world.memory(), world.usage())
    assert world.deliver(operation, "worker-b") is Outcome.ACK
    assert (world.current(operation), world.memory(), world.usage()) == before
    assert len(world.model.calls) == 1


def test_two_racing_deliveries_commit_once(world: World) -> None:
    world.model.add(Slow(0.3, ONE_FACT))
    operation = world.queued()
    start = threading.Barrier(2)
    outcomes: list[Outcome] = []

    def deliver(worker: str) -> None:
        start.wait()
        outcomes.append(world.deliver(operation, worker))

    threads = [threading.Thread(target=deliver, args=(w,)) for w in ("worker-a", "worker-b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) in ([Outcome.ACK, Outcome.ACK], [Outcome.ACK, Outcome.RETRY])
    assert len(world.model.calls) == 1
    assert world.current(operation).state is OperationState.SUCCEEDED
    assert len(world.memory()["formation_keys"]) == 1 and len(world.usage()) == 1


def test_a_delivery_while_another_worker_holds_the_lease_is_retried(world: World) -> None:
    operation = world.queued()
    world.operations.claim(ENTERPRISE, operation.operation_id, "worker-a", world.clock(), LEASE)
    assert world.deliver(operation, "worker-b") is Outcome.RETRY
    held = world.current(operation)
    assert (held.state, held.lease_owner, held.attempts) == (OperationState.RUNNING, "worker-a", 1)
    assert world.model.calls == []


def test_a_worker_that_died_before_its_commit_is_overtaken_once_its_lease_runs_out(
    world: World,
) -> None:
    world.model.add(ONE_FACT)
    operation = world.queued()
    short = timedelta(minutes=1)
    world.operations.claim(ENTERPRISE, operation.operation_id, "worker-a", world.clock(), short)
    assert world.deliver(operation, "worker-b") is Outcome.RETRY  # still live
    world.clock.advance(short + timedelta(seconds=1))
    assert world.deliver(operation, "worker-b") is Outcome.ACK
    done = world.current(operation)
    assert (done.state, done.attempts) == (OperationState.SUCCEEDED, 2)
    assert len(world.model.calls) == 1 and len(world.memory()["formation_keys"]) == 1
    # attempt 2 records its usage under "<formation_id>.2"; attempt 1 never reached the model
    assert world.usage() == {f"{operation.formation_id}.2": operation_result(done).formation_units}
    assert world.in_progress() == 0


class Crash(Exception):
    """The worker's process dies."""


class FinishCrashes:
    """The operation store of a worker that dies right after its commit, before `finish`."""

    def __init__(self, inner: SqliteOperationStore) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def finish(self, *args: Any, **kwargs: Any) -> None:
        raise Crash


def test_a_worker_that_died_after_its_commit_is_replayed_not_formed_again(world: World) -> None:
    world.model.add(ONE_FACT)
    operation = world.queued()
    short = timedelta(minutes=1)
    with pytest.raises(Crash):
        world.deliver(operation, operations=FinishCrashes(world.operations), lease=short)
    running = world.current(operation)
    assert (running.state, running.lease_owner) == (OperationState.RUNNING, "worker-a")
    committed = (world.memory(), world.usage())
    assert len(committed[0]["formation_keys"]) == 1 and len(world.model.calls) == 1

    world.clock.advance(short + timedelta(seconds=1))
    assert world.deliver(operation, "worker-b") is Outcome.ACK
    done = world.current(operation)
    assert (done.state, done.attempts) == (OperationState.SUCCEEDED, 2)
    receipt = operation_result(done)
    assert receipt.replay is False  # for its client this is the formation, not a replay
    assert receipt.formation_key is None and receipt.formation_units >= 1
    assert [c.text for c in receipt.candidates] == ["The user lives in Tokyo."]
    assert len(world.model.calls) == 1 and (world.memory(), world.usage()) == committed
    assert world.in_progress() == 0


def test_a_cancel_while_running_writes_nothing_but_records_usage(world: World) -> None:
    before = world.memory()
    operation = world.queued()

    def cancel_meanwhile(prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
        world.operations.cancel(ENTERPRISE, operation.operation_id, world.clock())
        return ONE_FACT

    world.model.add(cancel_meanwhile)
    assert world.deliver(operation) is Outcome.ACK
    cancelled = world.current(operation)
    assert cancelled.state is OperationState.CANCELLED and cancelled.receipt_json is None
    assert cancelled.error is not None and cancelled.error.code == "CANCELLED"
    assert world.memory() == before  # no memory, no formation-key row, no scope
    assert len(world.model.calls) == 1
    assert world.usage()[operation.formation_id or ""] >= 1  # the model was reached
    assert world.in_progress() == 0
    with pytest.raises(ClientGone):
        operation_result(cancelled)


def test_a_client_gone_during_extraction_stops_before_the_reconciliation_call(
    world: World,
) -> None:
    world.model.add(ONE_FACT)
    world.deliver(world.queued())  # "The user lives in Tokyo." is current memory
    before = world.memory()
    moved = [Turn(role=TurnRole.USER, content="I live in Tokyo now.")]
    now_in_tokyo = _extraction(("The user lives in Tokyo now.", "I live in Tokyo now"))
    operation = world.queued(formation(moved))

    def client_goes_meanwhile(prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
        world.operations.cancel(ENTERPRISE, operation.operation_id, world.clock())
        return now_in_tokyo

    world.model.add(client_goes_meanwhile)
    assert world.deliver(operation) is Outcome.ACK
    cancelled = world.current(operation)
    assert cancelled.state is OperationState.CANCELLED and cancelled.receipt_json is None
    assert world.memory() == before  # nothing written
    assert [c.data["task"] for c in world.model.calls] == ["extract", "extract"]  # no reconcile
    assert world.usage()[operation.formation_id or ""] >= 1 and world.in_progress() == 0

    # the same formation with its client still there does reach reconciliation
    verdict = {"decisions": [{"candidate_index": 0, "decision": "new"}]}
    world.model.add(now_in_tokyo, verdict)
    world.deliver(world.queued(formation(moved)))
    assert [c.data["task"] for c in world.model.calls[2:]] == ["extract", "reconcile"]


def test_a_model_past_its_time_bound_fails_the_operation_and_records_usage(
    world: World,
) -> None:
    world.model.add(Slow(5.0, ONE_FACT))
    operation = world.queued(model_call_deadline=0.05)
    assert world.deliver(operation, model_call_deadline=0.05) is Outcome.ACK
    failed = world.current(operation)
    assert failed.state is OperationState.FAILED and failed.error is not None
    assert failed.error.code == "DEADLINE_EXCEEDED" and "0.05 s bound" in failed.error.message
    assert world.memory()["formation_keys"] == [] and world.memory()["memory_records"] == []
    assert world.usage()[operation.formation_id or ""] >= 1
    assert world.in_progress() == 0
    with pytest.raises(errors.DeadlineExceeded, match=r"0\.05 s bound"):
        operation_result(failed)


class CommitUnavailable:
    """A memory store whose next commits fail as though the database were unreachable."""

    def __init__(self, inner: SqliteStore, failures: int = 1) -> None:
        self.inner, self.failures = inner, failures

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def apply(self, plan: CommitPlan) -> CommitResult:
        if self.failures:
            self.failures -= 1
            raise errors.Unavailable("the database is unreachable")
        return self.inner.apply(plan)


def test_a_transient_failure_is_retried_and_each_attempt_records_its_usage(
    world: World,
) -> None:
    world.model.add(
        ModelResult(text=json.dumps(ONE_FACT), input_tokens=20_000, output_tokens=100),
        ONE_FACT,
    )  # attempt 1 uses 2 units (20,000 input tokens), attempt 2 uses 1
    operation = world.queued()
    flaky = CommitUnavailable(world.store)
    assert world.deliver(operation, store=flaky) is Outcome.RETRY
    released = world.current(operation)
    assert (released.state, released.lease_owner, released.attempts) == (
        OperationState.QUEUED, None, 1,
    )  # fmt: skip
    assert world.memory()["formation_keys"] == []
    assert world.usage() == {operation.formation_id: 2}

    assert world.deliver(operation, "worker-b", store=flaky) is Outcome.ACK
    done = world.current(operation)
    assert (done.state, done.attempts) == (OperationState.SUCCEEDED, 2)
    assert len(world.model.calls) == 2
    assert world.usage() == {operation.formation_id: 2, f"{operation.formation_id}.2": 1}
    receipt = operation_result(done)
    # the receipt is everything the request consumed: both attempts
    assert receipt.formation_units == 3 and receipt.input_tokens > 20_000
    (key,) = world.memory()["formation_keys"]
    assert '"formation_units":3' in str(key)  # a replay reports the same
    assert world.in_progress() == 0


def test_a_retried_attempt_is_admitted_again_and_refused_past_the_allowance(
    world: World,
) -> None:
    world.ledger.put_billing(EnterpriseBilling(enterprise_id=ENTERPRISE, plan=Plan.PRO))
    world.ledger.record_many([UsageRecord(
        enterprise_id=ENTERPRISE, spent_in_scope="support-bot", caller=ROOT, model="scripted",
        region="local", input_tokens=0, output_tokens=0, units=549, formation_id="fu_past",
        recorded_at=world.clock(),
    )])  # fmt: skip
    world.model.add(ONE_FACT, ONE_FACT)
    operation = world.queued()  # 549 of 550 units used: admitted
    flaky = CommitUnavailable(world.store)
    assert world.deliver(operation, store=flaky) is Outcome.RETRY  # attempt 1 used 1 unit
    assert world.usage() == {"fu_past": 549, operation.formation_id: 1}

    assert world.deliver(operation, "worker-b", store=flaky) is Outcome.ACK
    failed = world.current(operation)
    assert (failed.state, failed.attempts) == (OperationState.FAILED, 2)
    assert failed.error is not None and failed.error.code == "RESOURCE_EXHAUSTED"
    assert len(world.model.calls) == 1  # attempt 2 never reached the model
    assert world.usage() == {"fu_past": 549, operation.formation_id: 1}  # nothing more spent
    assert world.memory()["formation_keys"] == [] and world.in_progress() == 0
    with pytest.raises(errors.ResourceExhausted) as raised:
        operation_result(failed)
    assert raised.value.reason == "FORMATION_ALLOWANCE_EXHAUSTED"


def test_a_retry_after_a_failure_that_never_reached_the_model_costs_nothing(
    world: World,
) -> None:
    unreachable = errors.Unavailable("the model call could not reach Vertex AI: refused")
    world.model.add(unreachable, ONE_FACT)
    operation = world.queued()
    assert world.deliver(operation) is Outcome.RETRY
    assert world.usage() == {} and len(world.model.calls) == 1

    assert world.deliver(operation, "worker-b") is Outcome.ACK
    done = world.current(operation)
    assert (done.state, done.attempts) == (OperationState.SUCCEEDED, 2)
    units = operation_result(done).formation_units
    assert world.usage() == {f"{operation.formation_id}.2": units} and units >= 1
    assert world.in_progress() == 0


def test_on_free_what_is_left_of_the_day_bounds_both_calls_together(world: World) -> None:
    world.model.add(ONE_FACT)
    world.deliver(world.queued())  # "The user lives in Tokyo." is current memory
    used = world.ledger.snapshot(ENTERPRISE, world.clock()).used.output_tokens
    # 1,000 of Free's 50,000 output tokens are left today
    world.ledger.record_many([UsageRecord(
        enterprise_id=ENTERPRISE, spent_in_scope="support-bot", caller=ROOT, model="scripted",
        region="local", input_tokens=0, output_tokens=49_000 - used, units=6,
        formation_id="fu_earlier", recorded_at=world.clock(),
    )])  # fmt: skip
    still = _extraction(("The user lives in Tokyo now.", "I live in Tokyo now"))
    verdict = {"decisions": [{"candidate_index": 0, "decision": "new"}]}
    world.model.add(ModelResult(text=json.dumps(still), output_tokens=600), verdict)
    operation = world.queued(formation([Turn(role=TurnRole.USER, content="I live in Tokyo now.")]))
    assert world.deliver(operation) is Outcome.ACK
    assert world.current(operation).state is OperationState.SUCCEEDED
    extract, reconcile = world.model.calls[-2:]
    assert (extract.data["task"], reconcile.data["task"]) == ("extract", "reconcile")
    assert (extract.max_output_tokens, reconcile.max_output_tokens) == (1_000, 400)


def test_a_defect_fails_the_operation_internal(world: World) -> None:
    operation = world.queued()
    world.model.add(lambda prompt, schema: 1 / 0)  # type: ignore[arg-type,return-value]
    assert world.deliver(operation) is Outcome.ACK
    failed = world.current(operation)
    assert failed.state is OperationState.FAILED and failed.error is not None
    assert failed.error.code == "INTERNAL" and "division" not in failed.error.message


# wait


def test_wait_returns_the_operation_once_done(world: World) -> None:
    world.model.add(ONE_FACT)
    operation = world.queued()
    slept: list[float] = []

    def sleep(seconds: float) -> None:  # the worker runs while the form function waits
        slept.append(seconds)
        if len(slept) == 3:
            world.deliver(operation)

    done = world.wait(operation, sleep=sleep)
    assert done.state is OperationState.SUCCEEDED and operation_result(done).candidates
    assert slept == pytest.approx([0.002, 0.003, 0.0045])  # backing off


def test_wait_backs_off_from_the_formations_first_poll(world: World) -> None:
    world.model.add(ONE_FACT)
    operation = world.queued()
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 2:
            world.deliver(operation)

    done = replace(world.formation(), first_poll=0.05).wait(operation, sleep=sleep)
    assert done.state is OperationState.SUCCEEDED
    assert slept == pytest.approx([0.05, 0.075])


def test_wait_wakes_as_soon_as_a_worker_of_its_process_finishes_the_operation(
    world: World,
) -> None:
    # polls an hour apart: only the worker's settlement can end the wait within the test
    world.model.add(ONE_FACT)
    same_process = replace(world.formation(), first_poll=3600.0)
    operation = world.queued()
    polled = threading.Event()
    operations = world.operations

    class Observed:  # the waiter's store: tells the test when the first poll found it queued
        def get(self, enterprise_id: str, operation_id: str) -> FormationOperation | None:
            found = operations.get(enterprise_id, operation_id)
            polled.set()
            return found

    waiter = replace(same_process, operations=Observed())  # type: ignore[arg-type]
    answered: list[FormationOperation] = []
    thread = threading.Thread(target=lambda: answered.append(waiter.wait(operation)), daemon=True)
    thread.start()
    assert polled.wait(30)
    task = FormationTask(enterprise_id=ENTERPRISE, operation_id=operation.operation_id)
    assert same_process.work(task, "worker-a") is Outcome.ACK
    thread.join(30)
    assert not thread.is_alive(), "the wait slept on after its operation was finished"
    assert answered[0].state is OperationState.SUCCEEDED


def test_a_client_that_goes_away_cancels_the_operation(world: World) -> None:
    operation = world.queued()
    with pytest.raises(ClientGone) as raised:
        world.wait(operation, client_gone=lambda: True, sleep=lambda _: None)
    assert raised.value.status == "CANCELLED" and raised.value.http_status == 499
    cancelled = world.current(operation)
    assert cancelled.state is OperationState.CANCELLED
    assert cancelled.error is not None and cancelled.error.message == CLIENT_CLOSED_MESSAGE
    # its delivery then runs nothing, and gives the reservation back
    assert world.deliver(operation) is Outcome.ACK
    assert world.model.calls == [] and world.memory()["formation_keys"] == []
    assert world.in_progress() == 0 and world.usage() == {}


class SteppedTime:
    """`time` for the formation use case: its monotonic clock moves only when `sleep` runs."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_past_the_ceiling_the_operation_is_cancelled(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    operation = world.queued()
    # The ceiling is measured on a clock only the polling's sleeps move: the real one let a
    # loaded machine pass the 20 ms before the first poll, so nothing slept (was flaky).
    stepped = SteppedTime()
    monkeypatch.setattr(use_case, "time", stepped)
    slept = stepped.slept
    with pytest.raises(errors.DeadlineExceeded) as raised:
        world.wait(operation, timeout=timedelta(milliseconds=20), sleep=stepped.sleep)
    assert raised.value.reason == "FORMATION_CEILING"
    assert raised.value.metadata == {"ceilingSeconds": "0"}
    assert "ceiling" in raised.value.message and "formationKey" in raised.value.message
    assert slept and max(slept) <= 0.5
    assert world.current(operation).state is OperationState.CANCELLED
    assert world.deliver(operation) is Outcome.ACK and world.model.calls == []
    assert world.in_progress() == 0


# result and errors as operations record them


@pytest.mark.parametrize(
    "error",
    [
        errors.InvalidArgument("bad", field="turns"),
        errors.Aborted("lost", reason="FORMATION_KEY_CLAIMED"),
        errors.DeadlineExceeded("slow", reason="MODEL_CALL_TIME_BOUND",
                                metadata={"inputTokens": "5", "outputTokens": "0"}),
        errors.ResourceExhausted("spent", reason="FORMATION_ALLOWANCE_EXHAUSTED"),
        errors.Unavailable("down", reason="FORMATION_ABANDONED"),
        errors.Internal("defect"),
        ClientGone(CLIENT_CLOSED_MESSAGE),
    ],
)  # fmt: skip
def test_errors_round_trip_through_the_operation(error: JennahError) -> None:
    back = error_from(error_of(error))
    assert type(back) is type(error)
    assert (back.status, back.message, back.reason, back.metadata) == (
        error.status, error.message, error.reason, error.metadata,
    )  # fmt: skip


def test_an_unknown_code_comes_back_internal() -> None:
    back = error_from(error_of(errors.Internal("x")).model_copy(update={"code": "DATA_LOSS"}))
    assert back.status == "INTERNAL" and back.message == "x"


def test_result_of_an_operation_not_done_is_a_failed_precondition(world: World) -> None:
    operation = world.queued()
    with pytest.raises(errors.FailedPrecondition) as raised:
        operation_result(operation)
    assert raised.value.reason == "OPERATION_NOT_DONE"


def test_abandon_fails_the_operation_unavailable(world: World) -> None:
    operation = world.queued()
    world.formation().abandon(world.queue.tasks[0])
    abandoned = world.current(operation)
    assert abandoned.state is OperationState.FAILED and abandoned.error is not None
    assert (abandoned.error.code, abandoned.error.reason) == ("UNAVAILABLE", "FORMATION_ABANDONED")


# through the API: "async": true and GET /v1/operations/{id}

FORM = "/v1/agents/support-bot/memory:form"
OPERATION_NAME = re.compile(r"operations/op_[0-9a-f]{32}")


def poll(api: Any, name: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60  # a bound on a wait for a condition, not a sleep
    while True:
        operation = ok(api.get(f"/v1/{name}"))
        if operation["done"] or time.monotonic() > deadline:
            return operation
        time.sleep(0.01)


def test_an_async_formation_answers_its_operation_then_its_receipt(tmp_path: Path) -> None:
    with sqlite_api(tmp_path) as api:
        body = TOKYO | {"formationKey": "conversation-7", "async": True}
        operation = ok(api.post(FORM, body))
        assert set(operation) <= {"name", "done", "metadata", "response", "error"}
        assert OPERATION_NAME.fullmatch(operation["name"]) and isinstance(operation["done"], bool)
        metadata = operation["metadata"]
        assert metadata["state"] in {"QUEUED", "RUNNING", "SUCCEEDED"}
        assert (metadata["agentInstanceId"], metadata["caller"], metadata["formationKey"]) == (
            "support-bot", ROOT, "conversation-7",
        )  # fmt: skip

        done = poll(api, operation["name"])
        assert done["done"] is True and done["metadata"]["state"] == "SUCCEEDED"
        assert done["metadata"]["attempts"] == 1 and "error" not in done
        replayed = ok(api.post(FORM, TOKYO | {"formationKey": "conversation-7"}))
        assert replayed["replay"] is True and done["response"]["replay"] is False
        assert done["response"] == replayed | {"replay": False}


def test_an_async_formation_without_a_key_keeps_its_own_key_inside(tmp_path: Path) -> None:
    with sqlite_api(tmp_path) as api:
        operation = ok(api.post(FORM, TOKYO | {"async": True}))
        assert "formationKey" not in operation["metadata"]
        done = poll(api, operation["name"])
        assert done["metadata"]["state"] == "SUCCEEDED"
        assert done["response"]["candidates"] and "formationKey" not in done["response"]


def test_a_failed_async_formation_carries_its_error(tmp_path: Path) -> None:
    model = ScriptedModel([Slow(5.0, ONE_FACT)])
    with sqlite_api(tmp_path, model, model_call_timeout_seconds=0.05) as api:
        operation = ok(api.post(FORM, TOKYO | {"async": True}))
        done = poll(api, operation["name"])
        assert done["metadata"]["state"] == "FAILED" and "response" not in done
        error = done["error"]
        assert (error["code"], error["status"]) == (504, "DEADLINE_EXCEEDED")
        assert "0.05 s bound" in error["message"]
        assert reason(error) == "MODEL_CALL_TIME_BOUND"


def test_an_unknown_operation_is_not_found(tmp_path: Path) -> None:
    with sqlite_api(tmp_path) as api:
        missing = "op_" + "0" * 32
        error = refused(api.get(f"/v1/operations/{missing}"), 404, "NOT_FOUND")
        assert reason(error) == "OPERATION_NOT_FOUND" and missing in error["message"]
        refused(api.get("/v1/operations/not-an-operation"), 404, "NOT_FOUND")


def test_another_enterprises_operation_is_not_found(tmp_path: Path) -> None:
    with sqlite_api(tmp_path) as api:
        other = add_enterprise(api.identity, "acme", "user:acme-root", ROOT_SECRET[::-1])
        operation = ok(api.post(FORM, TOKYO | {"async": True}))
        poll(api, operation["name"])
        error = refused(api.get(f"/v1/{operation['name']}", token=other), 404, "NOT_FOUND")
        assert reason(error) == "OPERATION_NOT_FOUND"
        assert api.get(f"/v1/{operation['name']}").status_code == 200
