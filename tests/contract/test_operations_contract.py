"""The operation store contract: every test here runs against BOTH operation stores.

`operations` is parametrized over the embedded SQLite store (in the memory
store's file) and Firestore (on the local emulator, marked `firestore`). Each
test uses fresh, unique enterprise and operation ids, so tests need no reset and
may share one emulator. `sweep` reaches every enterprise, so the sweep tests
work at instants long before any other test's operations expire, and drain
those instants first.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta, timezone
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest
from pydantic import ValidationError

from jennah import errors
from jennah.domain.operations import (
    CLIENT_CLOSED_MESSAGE,
    Claim,
    ClaimOutcome,
    FormationOperation,
    OperationError,
    OperationState,
    new_operation_id,
    stranded,
)
from jennah.ports.operations import OperationStore

NOW = datetime(2030, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)
LEASE = timedelta(minutes=5)
RETENTION = timedelta(days=1)
CONTENTION_WRITERS = 5  # the Firestore emulator is slow under contention
# Sweep tests expire operations in their own stretch of time, before any other test's.
SWEEP_EPOCH = datetime(2001, 1, 1, tzinfo=UTC)

_T = TypeVar("_T")


def _sqlite_operations(tmp_path: Path) -> Iterator[OperationStore]:
    from jennah.adapters.sqlite.operations import SqliteOperationStore

    store = SqliteOperationStore(tmp_path / "memory.db")
    yield store
    store.close()


def _firestore_operations() -> Iterator[OperationStore]:
    from jennah.adapters.firestore.operations import FirestoreOperationStore
    from tests.support.firestore_emulator import firestore_test_client

    yield FirestoreOperationStore(firestore_test_client())


@pytest.fixture(params=["sqlite", pytest.param("firestore", marks=pytest.mark.firestore)])
def operations(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OperationStore]:
    if request.param == "sqlite":
        yield from _sqlite_operations(tmp_path)
    else:
        yield from _firestore_operations()


@pytest.fixture
def enterprise() -> str:
    return f"ent-{uuid.uuid4().hex}"


def new_operation(enterprise_id: str, **fields: Any) -> FormationOperation:
    values: dict[str, Any] = {
        "operation_id": new_operation_id(),
        "enterprise_id": enterprise_id,
        "scope_id": "bot.support",
        "caller": "user:ada@example.com",
        "request_json": '{"turns":[{"role":"user","content":"I prefer tea."}]}',
        "formation_id": f"fm-{uuid.uuid4().hex}",
        "formation_key": "key-1",
        "create_time": NOW,
        "update_time": NOW,
        "expire_time": NOW + RETENTION,
    }
    values.update(fields)
    return FormationOperation(**values)


def created(operations: OperationStore, enterprise_id: str, **fields: Any) -> FormationOperation:
    operation = new_operation(enterprise_id, **fields)
    operations.create(operation)
    return operation


def claimed(
    operations: OperationStore, operation: FormationOperation, worker: str, now: datetime = NOW
) -> Claim:
    return operations.claim(operation.enterprise_id, operation.operation_id, worker, now, LEASE)


def stored(operations: OperationStore, operation: FormationOperation) -> FormationOperation:
    got = operations.get(operation.enterprise_id, operation.operation_id)
    assert got is not None
    return got


def at_once(calls: list[Callable[[], _T]]) -> list[_T]:
    """Run the calls in threads released together by a barrier; their results in order."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], _T]) -> _T:
        barrier.wait(timeout=30)
        return call()

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(run, calls))


# -- create and get ----------------------------------------------------------------


def test_a_created_operation_reads_back_whole(operations: OperationStore, enterprise: str) -> None:
    operation = created(operations, enterprise)
    assert operations.get(enterprise, operation.operation_id) == operation
    assert operation.state is OperationState.QUEUED and not operation.done
    assert (operation.attempts, operation.cancel_requested, operation.error) == (0, False, None)


def test_every_field_round_trips(operations: OperationStore, enterprise: str) -> None:
    operation = created(
        operations,
        enterprise,
        state=OperationState.FAILED,
        caller="api_key:k-1",
        formation_id=None,
        formation_key=None,
        cancel_requested=True,
        attempts=3,
        lease_owner="worker-ü",
        lease_expires_at=datetime(
            2030, 1, 1, 13, 0, 0, 654321, tzinfo=timezone(timedelta(hours=2))
        ),
        receipt_json='{"décision":"ADDED"}',
        error=OperationError(
            code="DEADLINE_EXCEEDED",
            message="the model did not answer within 120 s",
            reason="MODEL_TIMEOUT",
            metadata={"model": "gemini", "seconds": "120"},
        ),
    )
    got = stored(operations, operation)
    assert got == operation
    assert got.lease_expires_at == datetime(2030, 1, 1, 11, 0, 0, 654321, tzinfo=UTC)
    assert got.lease_expires_at is not None and got.lease_expires_at.utcoffset() == timedelta(0)


def test_a_request_of_nearly_a_mebibyte_is_one_field(
    operations: OperationStore, enterprise: str
) -> None:
    request_json = '{"turns":"' + "x" * 1_000_000 + '"}'
    operation = created(operations, enterprise, request_json=request_json)
    assert stored(operations, operation).request_json == request_json


def test_creating_an_id_twice_is_already_exists(
    operations: OperationStore, enterprise: str
) -> None:
    operation = created(operations, enterprise)
    with pytest.raises(errors.AlreadyExists) as caught:
        operations.create(operation.model_copy(update={"request_json": "{}"}))
    assert caught.value.status == "ALREADY_EXISTS"
    assert stored(operations, operation) == operation


def test_an_unknown_operation_is_none(operations: OperationStore, enterprise: str) -> None:
    assert operations.get(enterprise, new_operation_id()) is None


def test_an_expired_operation_not_yet_swept_is_still_returned(
    operations: OperationStore, enterprise: str
) -> None:
    operation = created(operations, enterprise, expire_time=NOW - timedelta(days=1))
    assert operations.get(enterprise, operation.operation_id) == operation


# -- enterprise isolation ----------------------------------------------------------


def test_another_enterprises_operation_is_absent(
    operations: OperationStore, enterprise: str
) -> None:
    operation = created(operations, enterprise)
    other, op_id = f"ent-{uuid.uuid4().hex}", operation.operation_id
    assert operations.get(other, op_id) is None
    assert operations.claim(other, op_id, "w", NOW, LEASE) == Claim(
        outcome=ClaimOutcome.MISSING, operation=None
    )
    assert operations.cancel(other, op_id, NOW) is None
    assert operations.finish(other, op_id, NOW, receipt_json="{}") is None
    operations.release(other, op_id, "w", NOW)
    assert operations.delete_scope(other, operation.scope_id) == 0
    assert stored(operations, operation) == operation


def test_the_same_id_in_two_enterprises_is_two_operations(
    operations: OperationStore, enterprise: str
) -> None:
    first = created(operations, enterprise)
    second = created(
        operations,
        f"ent-{uuid.uuid4().hex}",
        operation_id=first.operation_id,
        scope_id="bot.other",
    )
    claimed(operations, first, "w")
    assert stored(operations, second) == second
    assert stored(operations, first).state is OperationState.RUNNING


# -- listing -------------------------------------------------------------------------


def test_operations_are_listed_newest_first_page_by_page(
    operations: OperationStore, enterprise: str
) -> None:
    # two share a create time: the greater operation id comes first
    times = [NOW + timedelta(seconds=s) for s in (0, 1, 1, 2, 3)]
    listed = [created(operations, enterprise, create_time=t, update_time=t) for t in times]
    done = listed[3]
    finished = operations.finish(enterprise, done.operation_id, NOW, receipt_json="{}")
    created(operations, f"ent-{uuid.uuid4().hex}", create_time=NOW + timedelta(hours=1))
    newest = sorted(listed, key=lambda o: (o.create_time, o.operation_id), reverse=True)
    newest = [finished if o.operation_id == done.operation_id else o for o in newest]
    assert operations.list_newest(enterprise, 10) == newest
    pages, before = [], None
    while page := operations.list_newest(enterprise, 2, before):
        pages.append(page)
        before = (page[-1].create_time, page[-1].operation_id)
    assert [len(p) for p in pages] == [2, 2, 1]
    assert [o for p in pages for o in p] == newest
    tied = newest[2]  # one of the two of the same second
    after_tied = operations.list_newest(enterprise, 10, (tied.create_time, tied.operation_id))
    assert after_tied == newest[3:]
    assert operations.list_newest(f"ent-{uuid.uuid4().hex}", 10) == []


# -- claim -------------------------------------------------------------------------


def test_claiming_a_queued_operation_leases_it(operations: OperationStore, enterprise: str) -> None:
    operation = created(operations, enterprise)
    later = NOW + timedelta(seconds=7)
    claim = claimed(operations, operation, "worker-a", later)
    assert claim.outcome is ClaimOutcome.CLAIMED
    assert claim.operation == operation.model_copy(
        update={
            "state": OperationState.RUNNING,
            "attempts": 1,
            "lease_owner": "worker-a",
            "lease_expires_at": later + LEASE,
            "update_time": later,
        }
    )
    assert stored(operations, operation) == claim.operation


def test_claiming_a_missing_operation(operations: OperationStore, enterprise: str) -> None:
    claim = operations.claim(enterprise, new_operation_id(), "w", NOW, LEASE)
    assert claim == Claim(outcome=ClaimOutcome.MISSING, operation=None)


def test_another_worker_is_busy_while_the_lease_is_live(
    operations: OperationStore, enterprise: str
) -> None:
    operation = created(operations, enterprise)
    first = claimed(operations, operation, "worker-a")
    just_before = NOW + LEASE - timedelta(microseconds=1)
    busy = claimed(operations, operation, "worker-b", just_before)
    assert busy == Claim(outcome=ClaimOutcome.BUSY, operation=first.operation)
    assert stored(operations, operation) == first.operation


def test_the_same_worker_claims_again(operations: OperationStore, enterprise: str) -> None:
    operation = created(operations, enterprise)
    claimed(operations, operation, "worker-a")
    again = claimed(operations, operation, "worker-a", NOW + timedelta(minutes=1))
    assert again.outcome is ClaimOutcome.CLAIMED
    assert again.operation is not None
    assert again.operation.attempts == 2
    assert again.operation.lease_expires_at == NOW + timedelta(minutes=1) + LEASE


def test_after_the_lease_expires_another_worker_claims(
    operations: OperationStore, enterprise: str
) -> None:
    operation = created(operations, enterprise)
    claimed(operations, operation, "worker-a")
    expiry = NOW + LEASE  # a lease is live while it ends after now
    claim = claimed(operations, operation, "worker-b", expiry)
    assert claim.outcome is ClaimOutcome.CLAIMED
    assert claim.operation is not None
    assert (claim.operation.lease_owner, claim.operation.attempts) == ("worker-b", 2)
    assert claim.operation.lease_expires_at == expiry + LEASE
    assert claimed(operations, operation, "worker-a", expiry).outcome is ClaimOutcome.BUSY


def test_claiming_a_done_operation_is_finished_and_changes_nothing(
    operations: OperationStore, enterprise: str
) -> None:
    operation = created(operations, enterprise)
    claimed(operations, operation, "worker-a")
    done = operations.finish(enterprise, operation.operation_id, NOW, receipt_json="{}")
    later = NOW + timedelta(hours=1)
    assert claimed(operations, operation, "worker-b", later) == Claim(
        outcome=ClaimOutcome.FINISHED, operation=done
    )
    assert stored(operations, operation) == done


def test_a_claim_needs_a_timezone(operations: OperationStore, enterprise: str) -> None:
    operation = created(operations, enterprise)
    with pytest.raises(ValueError, match="timezone"):
        claimed(operations, operation, "w", NOW.replace(tzinfo=None))
    assert stored(operations, operation) == operation


# -- cancel ------------------------------------------------------------------------


def test_cancelling_a_queued_operation_ends_it(operations: OperationStore, enterprise: str) -> None:
    operation = created(operations, enterprise)
    later = NOW + timedelta(seconds=3)
    cancelled = operations.cancel(enterprise, operation.operation_id, later)
    assert cancelled is not None and cancelled.done
    assert cancelled.state is OperationState.CANCELLED
    assert cancelled.error == OperationError(code="CANCELLED", message=CLIENT_CLOSED_MESSAGE)
    assert cancelled.update_time == later
    assert stored(operations, operation) == cancelled
    # the task still arrives: it is acknowledged without running
    assert claimed(operations, operation, "worker-a", later) == Claim(
        outcome=ClaimOutcome.FINISHED, operation=cancelled
    )


def test_cancelling_a_running_operation_asks_its_worker(
    operations: OperationStore, enterprise: str
) -> None:
    operation = created(operations, enterprise)
    running = claimed(operations, operation, "worker-a").operation
    assert running is not None
    later = NOW + timedelta(seconds=3)
    requested = operations.cancel(enterprise, operation.operation_id, later)
    assert requested == running.model_copy(update={"cancel_requested": True, "update_time": later})
    assert stored(operations, operation) == requested
    # the worker, checking before its commit, finishes it as cancelled
    error = OperationError(code="CANCELLED", message=CLIENT_CLOSED_MESSAGE)
    finished = operations.finish(enterprise, operation.operation_id, later, error=error)
    assert finished is not None
    assert (finished.state, finished.error, finished.lease_owner) == (
        OperationState.CANCELLED,
        error,
        None,
    )


def test_a_redelivery_finishes_a_cancel_requested_operation(
    operations: OperationStore, enterprise: str
) -> None:
    operation = created(operations, enterprise)
    claimed(operations, operation, "worker-a")
    operations.cancel(enterprise, operation.operation_id, NOW)
    later = NOW + timedelta(seconds=1)  # worker-a's lease is still live
    claim = claimed(operations, operation, "worker-b", later)
    assert claim.outcome is ClaimOutcome.FINISHED
    assert claim.operation is not None
    assert claim.operation.state is OperationState.CANCELLED
    assert claim.operation.error == OperationError(code="CANCELLED", message=CLIENT_CLOSED_MESSAGE)
    assert (claim.operation.lease_owner, claim.operation.lease_expires_at) == (None, None)
    assert claim.operation.attempts == 1  # no new attempt ran
    assert stored(operations, operation) == claim.operation
    # worker-a's receipt now comes too late
    assert (
        operations.finish(enterprise, operation.operation_id, later, receipt_json="{}")
        == claim.operation
    )


def test_cancelling_again_or_after_the_end_changes_nothing(
    operations: OperationStore, enterprise: str
) -> None:
    running = created(operations, enterprise)
    claimed(operations, running, "worker-a")
    requested = operations.cancel(enterprise, running.operation_id, NOW)
    assert operations.cancel(enterprise, running.operation_id, NOW + LEASE) == requested

    succeeded = created(operations, enterprise)
    claimed(operations, succeeded, "worker-a")
    done = operations.finish(enterprise, succeeded.operation_id, NOW, receipt_json="{}")
    assert operations.cancel(enterprise, succeeded.operation_id, NOW + LEASE) == done
    assert stored(operations, succeeded) == done


def test_cancelling_a_missing_operation(operations: OperationStore, enterprise: str) -> None:
    assert operations.cancel(enterprise, new_operation_id(), NOW) is None


# -- finish ------------------------------------------------------------------------


def test_finishing_with_a_receipt_succeeds(operations: OperationStore, enterprise: str) -> None:
    operation = created(operations, enterprise)
    running = claimed(operations, operation, "worker-a").operation
    assert running is not None
    later = NOW + timedelta(seconds=30)
    finished = operations.finish(
        enterprise, operation.operation_id, later, receipt_json='{"commitTimestamp":"t"}'
    )
    assert finished == running.model_copy(
        update={
            "state": OperationState.SUCCEEDED,
            "receipt_json": '{"commitTimestamp":"t"}',
            "lease_owner": None,
            "lease_expires_at": None,
            "update_time": later,
        }
    )
    assert finished is not None and finished.done
    assert stored(operations, operation) == finished


def test_finishing_with_an_error_fails(operations: OperationStore, enterprise: str) -> None:
    operation = created(operations, enterprise)
    claimed(operations, operation, "worker-a")
    error = OperationError(code="RESOURCE_EXHAUSTED", message="quota", reason="MODEL_QUOTA")
    finished = operations.finish(enterprise, operation.operation_id, NOW, error=error)
    assert finished is not None
    assert (finished.state, finished.error, finished.receipt_json) == (
        OperationState.FAILED,
        error,
        None,
    )
    assert (finished.lease_owner, finished.lease_expires_at) == (None, None)
    assert stored(operations, operation) == finished


def test_the_first_finish_wins(operations: OperationStore, enterprise: str) -> None:
    operation = created(operations, enterprise)
    claimed(operations, operation, "worker-a")
    first = operations.finish(enterprise, operation.operation_id, NOW, receipt_json='{"n":1}')
    later = NOW + timedelta(minutes=1)
    error = OperationError(code="INTERNAL", message="late")
    assert operations.finish(enterprise, operation.operation_id, later, error=error) == first
    assert operations.finish(enterprise, operation.operation_id, later, receipt_json="{}") == first
    assert stored(operations, operation) == first


def test_a_receipt_wins_over_a_pending_cancel(operations: OperationStore, enterprise: str) -> None:
    """The worker had already committed when the client went away: the memory was written."""
    operation = created(operations, enterprise)
    claimed(operations, operation, "worker-a")
    operations.cancel(enterprise, operation.operation_id, NOW)
    finished = operations.finish(enterprise, operation.operation_id, NOW, receipt_json="{}")
    assert finished is not None
    assert (finished.state, finished.receipt_json) == (OperationState.SUCCEEDED, "{}")


@pytest.mark.parametrize(
    "outcome",
    [{}, {"receipt_json": "{}", "error": OperationError(code="INTERNAL", message="both")}],
    ids=["neither", "both"],
)
def test_a_finish_needs_exactly_one_outcome(
    operations: OperationStore, enterprise: str, outcome: dict[str, Any]
) -> None:
    operation = created(operations, enterprise)
    with pytest.raises(ValueError, match="exactly one"):
        operations.finish(enterprise, operation.operation_id, NOW, **outcome)
    assert stored(operations, operation) == operation


def test_finishing_a_missing_operation(operations: OperationStore, enterprise: str) -> None:
    assert operations.finish(enterprise, new_operation_id(), NOW, receipt_json="{}") is None


# -- release -----------------------------------------------------------------------


def test_the_lease_holder_releases_to_the_queue(
    operations: OperationStore, enterprise: str
) -> None:
    operation = created(operations, enterprise)
    running = claimed(operations, operation, "worker-a").operation
    assert running is not None
    later = NOW + timedelta(seconds=9)
    operations.release(enterprise, operation.operation_id, "worker-a", later)
    released = stored(operations, operation)
    assert released == running.model_copy(
        update={
            "state": OperationState.QUEUED,
            "lease_owner": None,
            "lease_expires_at": None,
            "update_time": later,
        }
    )
    # the retry is claimed at once, within what was the old lease
    claim = claimed(operations, operation, "worker-b", later)
    assert claim.outcome is ClaimOutcome.CLAIMED
    assert claim.operation is not None and claim.operation.attempts == 2


def test_only_the_lease_holder_releases(operations: OperationStore, enterprise: str) -> None:
    operation = created(operations, enterprise)
    running = claimed(operations, operation, "worker-a").operation
    operations.release(enterprise, operation.operation_id, "worker-b", NOW)
    assert stored(operations, operation) == running


def test_releasing_a_queued_or_done_operation_changes_nothing(
    operations: OperationStore, enterprise: str
) -> None:
    queued = created(operations, enterprise)
    operations.release(enterprise, queued.operation_id, "worker-a", NOW)
    assert stored(operations, queued) == queued

    done = created(operations, enterprise)
    claimed(operations, done, "worker-a")
    finished = operations.finish(enterprise, done.operation_id, NOW, receipt_json="{}")
    operations.release(enterprise, done.operation_id, "worker-a", NOW)
    assert stored(operations, done) == finished
    operations.release(enterprise, new_operation_id(), "worker-a", NOW)  # missing: no error


def test_releasing_a_cancel_requested_operation_ends_it(
    operations: OperationStore, enterprise: str
) -> None:
    operation = created(operations, enterprise)
    claimed(operations, operation, "worker-a")
    operations.cancel(enterprise, operation.operation_id, NOW)
    operations.release(enterprise, operation.operation_id, "worker-a", NOW)
    ended = stored(operations, operation)
    assert (ended.state, ended.lease_owner) == (OperationState.CANCELLED, None)
    assert ended.error == OperationError(code="CANCELLED", message=CLIENT_CLOSED_MESSAGE)


# -- unfinished: what a crash left behind ------------------------------------------

# Other tests leave queued operations behind (the Firestore emulator is shared): list
# with room for all of them and look at this test's enterprises only.
EVERY_ONE = 100_000


def unfinished_of(
    operations: OperationStore, now: datetime, *enterprises: str
) -> dict[str, FormationOperation]:
    found = operations.unfinished(now, EVERY_ONE)
    return {op.operation_id: op for op in found if op.enterprise_id in enterprises}


def test_unfinished_lists_the_queued_and_the_expired_leases_of_every_enterprise(
    operations: OperationStore, enterprise: str
) -> None:
    other = f"ent-{uuid.uuid4().hex}"
    queued = [created(operations, enterprise), created(operations, other)]
    long_ago, at_now = created(operations, enterprise), created(operations, enterprise)
    claimed(operations, long_ago, "worker-dead", NOW - 3 * LEASE)
    claimed(operations, at_now, "worker-dead", NOW - LEASE)  # ends at now: ended
    cancel_requested = created(operations, enterprise)  # its lease ran out too
    claimed(operations, cancel_requested, "worker-dead", NOW - 2 * LEASE)
    operations.cancel(enterprise, cancel_requested.operation_id, NOW - 2 * LEASE)
    live = created(operations, enterprise)
    claimed(operations, live, "worker-alive", NOW - LEASE + timedelta(microseconds=1))
    failure = OperationError(code="INTERNAL", message="x")
    for outcome in ({"receipt_json": "{}"}, {"error": failure}):
        done = created(operations, enterprise)
        claimed(operations, done, "worker-a", NOW - 3 * LEASE)
        operations.finish(enterprise, done.operation_id, NOW - 3 * LEASE, **outcome)  # type: ignore[arg-type]
    operations.cancel(enterprise, created(operations, enterprise).operation_id, NOW)

    found = unfinished_of(operations, NOW, enterprise, other)

    expected = [*queued, long_ago, at_now, cancel_requested]
    assert sorted(found) == sorted(op.operation_id for op in expected)
    assert all(stranded(op, NOW) for op in found.values())
    assert all(found[op.operation_id] == stored(operations, op) for op in expected)
    assert found[long_ago.operation_id].state is OperationState.RUNNING
    assert found[cancel_requested.operation_id].cancel_requested
    # a moment later the live lease has ended too
    later = unfinished_of(operations, NOW + timedelta(microseconds=1), enterprise, other)
    assert sorted(later) == sorted([*found, live.operation_id])
    # every lease has ended by the end of time (what a restart of the only worker asks)
    end_of_time = datetime.max.replace(tzinfo=UTC)
    assert sorted(unfinished_of(operations, end_of_time, enterprise, other)) == sorted(later)


def test_unfinished_lists_at_most_its_limit(operations: OperationStore, enterprise: str) -> None:
    for _ in range(3):
        created(operations, enterprise)
    found = operations.unfinished(NOW, limit=2)
    assert len(found) == 2 and all(stranded(op, NOW) for op in found)


def test_a_released_lease_leaves_the_operation_unfinished_and_claimable(
    operations: OperationStore, enterprise: str
) -> None:
    """What recovery does with a dead worker's live lease: releasing on its behalf."""
    operation = created(operations, enterprise)
    claimed(operations, operation, "worker-dead")
    assert operation.operation_id not in unfinished_of(operations, NOW, enterprise)
    operations.release(enterprise, operation.operation_id, "worker-dead", NOW)
    found = unfinished_of(operations, NOW, enterprise)
    assert found[operation.operation_id].state is OperationState.QUEUED
    assert claimed(operations, operation, "worker-new").outcome is ClaimOutcome.CLAIMED


# -- sweep and erasure ---------------------------------------------------------------


def drain(operations: OperationStore, now: datetime) -> None:
    """Sweep whatever an earlier run left expiring by `now` (the emulator may be reused)."""
    while operations.sweep(now):
        pass


def test_sweep_deletes_the_expired_operations_of_every_enterprise(
    operations: OperationStore,
) -> None:
    now = SWEEP_EPOCH + timedelta(days=10)
    drain(operations, now)
    first, second = f"ent-{uuid.uuid4().hex}", f"ent-{uuid.uuid4().hex}"
    expired = [
        created(operations, first, expire_time=now - timedelta(days=1)),
        created(operations, first, expire_time=now),  # expiring at now is expired
        created(operations, second, expire_time=now - timedelta(seconds=1)),
    ]
    kept = [
        created(operations, first, expire_time=now + timedelta(microseconds=1)),
        created(operations, second, expire_time=now + timedelta(days=1)),
    ]
    assert operations.sweep(now) == 3
    for operation in expired:
        assert operations.get(operation.enterprise_id, operation.operation_id) is None
    for operation in kept:
        assert stored(operations, operation) == operation
    assert operations.sweep(now) == 0


def test_sweep_deletes_at_most_its_limit(operations: OperationStore, enterprise: str) -> None:
    now = SWEEP_EPOCH + timedelta(days=20)
    drain(operations, now)
    expired = [
        created(operations, enterprise, expire_time=now - timedelta(minutes=i)) for i in range(3)
    ]
    assert operations.sweep(now, limit=2) == 2
    assert operations.sweep(now, limit=2) == 1
    assert all(operations.get(enterprise, op.operation_id) is None for op in expired)


def test_erasing_a_scope_deletes_only_its_operations(
    operations: OperationStore, enterprise: str
) -> None:
    gone = [created(operations, enterprise, scope_id="bot.gone") for _ in range(2)]
    kept = [
        created(operations, enterprise, scope_id="bot.kept"),
        created(operations, f"ent-{uuid.uuid4().hex}", scope_id="bot.gone"),
    ]
    assert operations.delete_scope(enterprise, "bot.gone") == 2
    assert all(operations.get(enterprise, op.operation_id) is None for op in gone)
    assert all(stored(operations, op) == op for op in kept)
    assert operations.delete_scope(enterprise, "bot.gone") == 0


# -- concurrency -------------------------------------------------------------------


def test_of_concurrent_claims_exactly_one_wins(operations: OperationStore, enterprise: str) -> None:
    operation = created(operations, enterprise)
    workers = [f"worker-{i}" for i in range(CONTENTION_WRITERS)]
    claims = at_once([partial(claimed, operations, operation, worker) for worker in workers])
    outcomes = sorted(claim.outcome for claim in claims)
    assert outcomes == [ClaimOutcome.BUSY] * (CONTENTION_WRITERS - 1) + [ClaimOutcome.CLAIMED]
    (winner,) = [claim.operation for claim in claims if claim.outcome is ClaimOutcome.CLAIMED]
    assert winner is not None and winner.attempts == 1
    assert stored(operations, operation) == winner
    assert all(claim.operation == winner for claim in claims)


def test_of_concurrent_finishes_the_first_wins(operations: OperationStore, enterprise: str) -> None:
    operation = created(operations, enterprise)
    claimed(operations, operation, "worker-a")
    finish = partial(operations.finish, enterprise, operation.operation_id, NOW)
    results = at_once(
        [partial(finish, receipt_json=f'{{"n":{n}}}') for n in range(CONTENTION_WRITERS)]
    )
    final = stored(operations, operation)
    assert final.state is OperationState.SUCCEEDED
    assert all(result == final for result in results)


def test_a_cancel_racing_a_claim_ends_one_way_or_the_other(
    operations: OperationStore, enterprise: str
) -> None:
    operation = created(operations, enterprise)
    calls: list[Callable[[], object]] = [
        partial(claimed, operations, operation, "worker-a"),
        partial(operations.cancel, enterprise, operation.operation_id, NOW),
    ]
    claim, cancelled = at_once(calls)
    assert isinstance(claim, Claim) and isinstance(cancelled, FormationOperation)
    final = stored(operations, operation)
    if claim.outcome is ClaimOutcome.CLAIMED:  # claimed first: the worker is asked to stop
        assert (final.state, final.cancel_requested) == (OperationState.RUNNING, True)
    else:  # cancelled first: the worker never runs it
        assert claim.outcome is ClaimOutcome.FINISHED
        assert (final.state, final.attempts) == (OperationState.CANCELLED, 0)
    assert final == cancelled


def test_sqlite_claims_from_separate_connections_exclude_each_other(tmp_path: Path) -> None:
    """Several processes' stores on one file: SQLite's write lock serializes the claims."""
    from jennah.adapters.sqlite.operations import SqliteOperationStore

    stores = [SqliteOperationStore(tmp_path / "memory.db") for _ in range(CONTENTION_WRITERS)]
    try:
        operation = created(stores[0], "ent-1")
        claims = at_once(
            [partial(claimed, store, operation, f"worker-{i}") for i, store in enumerate(stores)]
        )
        assert sorted(claim.outcome for claim in claims).count(ClaimOutcome.CLAIMED) == 1
        assert stored(stores[-1], operation).attempts == 1
    finally:
        for store in stores:
            store.close()


# -- layout below the port -----------------------------------------------------------


def test_sqlite_keeps_operations_beside_the_other_control_documents(tmp_path: Path) -> None:
    from pysqlite3 import dbapi2

    from jennah.adapters.sqlite.operations import SqliteOperationStore
    from jennah.adapters.sqlite.store import SqliteStore
    from jennah.adapters.sqlite.vocabulary import SqliteVocabularyStore

    path = tmp_path / "memory.db"
    memory, vocabularies = SqliteStore(path), SqliteVocabularyStore(path)
    store = SqliteOperationStore(path)
    try:
        operation = created(store, "ent-1")
        store.close()
        store = SqliteOperationStore(path)  # opening again keeps what is there
        assert stored(store, operation) == operation
    finally:
        store.close()
        vocabularies.close()
        memory.close()
    conn = dbapi2.connect(str(path))
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()
    assert {"formation_operations", "vocabularies", "memory_records"} <= tables


@pytest.mark.firestore
def test_firestore_layout_is_what_the_ttl_policy_names(enterprise: str) -> None:
    """Terraform's TTL policy targets collection group `operations`, field `expireTime`."""
    from google.cloud.firestore_v1.base_query import FieldFilter

    from jennah.adapters.firestore.operations import FirestoreOperationStore
    from tests.support.firestore_emulator import firestore_test_client

    client = firestore_test_client()
    operation = new_operation(enterprise)
    FirestoreOperationStore(client).create(operation)
    ref = client.document(f"enterprises/{enterprise}/operations/{operation.operation_id}")
    fields = ref.get(timeout=10).to_dict()
    assert isinstance(fields["expireTime"], datetime)  # a Firestore timestamp, not a string
    assert fields["expireTime"] == operation.expire_time
    assert fields["state"] == "QUEUED"
    query = client.collection_group("operations").where(
        filter=FieldFilter("expireTime", "==", operation.expire_time)
    )
    assert operation.operation_id in {snap.id for snap in query.get(timeout=10)}


# -- the model ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "operation_id", ["op_" + "A" * 32, "op_" + "a" * 31, "op-" + "a" * 32, "a" * 35]
)
def test_an_operation_id_is_op_and_32_lowercase_hex(operation_id: str) -> None:
    with pytest.raises(ValidationError, match="operation id"):
        new_operation("ent-1", operation_id=operation_id)


def test_operation_instants_must_be_timezone_aware() -> None:
    with pytest.raises(ValidationError):
        new_operation("ent-1", create_time=NOW.replace(tzinfo=None))


def test_the_last_three_states_are_done() -> None:
    assert [state for state in OperationState if state.done] == [
        OperationState.SUCCEEDED,
        OperationState.FAILED,
        OperationState.CANCELLED,
    ]
    assert [state.value for state in OperationState] == [state.name for state in OperationState]
