"""Formations stranded by a crash are delivered again (`services.formation.recovery`).

The world of tests/integration/test_formation_operations.py: the real SQLite stores in one
file, a scripted model, a fake clock and a queue that is a list. A crash is the queue
losing its tasks (the embedded default's queue lives in memory) and, for a formation
that was running, a lease held by a worker that no longer exists.
"""

from __future__ import annotations

import pytest

from jennah import errors
from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.domain.billing import EnterpriseBilling, Plan
from jennah.domain.formation import FormationReceipt
from jennah.domain.operations import FormationOperation, OperationState
from jennah.ports.tasks import FormationTask
from jennah.services.formation import (
    FormationUsage,
    OperationRequest,
    Outcome,
    prepare,
    result,
    run,
)
from jennah.services.formation.recovery import Recovery
from jennah.services.formation.recovery import recover as recover_formations
from tests.integration.test_formation_operations import (
    ENTERPRISE,
    LEASE,
    ONE_FACT,
    TURNS,
    World,
    formation,
)
from tests.integration.test_formation_operations import world as world  # the fixture

DEAD = "host/dead-worker"  # a worker of the process that crashed


def crash(world: World) -> None:
    """The process dies: the tasks waiting in its queue are gone."""
    world.queue.tasks.clear()


def claimed_by_the_dead(world: World, operation: FormationOperation) -> FormationOperation:
    claim = world.operations.claim(ENTERPRISE, operation.operation_id, DEAD, world.clock(), LEASE)
    assert claim.operation is not None and claim.operation.state is OperationState.RUNNING
    return claim.operation


def task_of(operation: FormationOperation) -> FormationTask:
    return FormationTask(enterprise_id=ENTERPRISE, operation_id=operation.operation_id)


def recover(world: World, *, restart: bool = False) -> Recovery:
    return recover_formations(world.formation(), restart=restart)


def deliver_all(world: World) -> None:
    while world.queue.tasks:
        task = world.queue.tasks.pop(0)
        outcome = world.formation(lease=LEASE).work(task, "host/new-worker")
        assert outcome is Outcome.ACK


def test_a_queued_formation_whose_task_was_lost_is_queued_again_and_runs(world: World) -> None:
    world.model.add(ONE_FACT)
    operation = world.queued()
    crash(world)

    recovery = recover(world, restart=True)

    assert recovery.queued == [operation.operation_id] and recovery.failed == []
    assert world.queue.tasks == [task_of(operation)]
    deliver_all(world)
    done = world.current(operation)
    assert (done.state, done.attempts) == (OperationState.SUCCEEDED, 1)
    assert world.in_progress() == 0


def test_on_a_restart_a_formation_running_under_a_dead_lease_runs_again(world: World) -> None:
    world.model.add(ONE_FACT)
    operation = world.queued()
    claimed_by_the_dead(world, operation)  # its lease runs for LEASE more
    crash(world)

    recovery = recover(world, restart=True)

    assert recovery.queued == [operation.operation_id]
    released = world.current(operation)
    assert (released.state, released.lease_owner) == (OperationState.QUEUED, None)
    deliver_all(world)
    done = world.current(operation)
    assert (done.state, done.attempts) == (OperationState.SUCCEEDED, 2)
    assert [c.text for c in result(done).candidates] == ["The user lives in Tokyo."]
    assert world.in_progress() == 0 and len(world.memory()["formation_keys"]) == 1


def test_without_a_restart_a_live_lease_is_left_to_its_worker_until_it_runs_out(
    world: World,
) -> None:
    world.model.add(ONE_FACT)
    operation = world.queued()
    running = claimed_by_the_dead(world, operation)
    crash(world)

    assert recover(world).queued == []
    assert world.current(operation) == running and world.queue.tasks == []

    world.clock.advance(LEASE)  # the lease has run out
    assert recover(world).queued == [operation.operation_id]
    deliver_all(world)
    assert world.current(operation).state is OperationState.SUCCEEDED
    assert world.in_progress() == 0


def test_a_formation_cancelled_while_its_worker_died_ends_cancelled_and_releases(
    world: World,
) -> None:
    operation = world.queued()
    claimed_by_the_dead(world, operation)
    world.operations.cancel(ENTERPRISE, operation.operation_id, world.clock())
    crash(world)

    recover(world, restart=True)
    deliver_all(world)

    ended = world.current(operation)
    assert ended.state is OperationState.CANCELLED
    assert world.model.calls == [] and world.memory()["formation_keys"] == []
    assert world.in_progress() == 0  # its reservation was released without running


def test_a_formation_committed_before_its_worker_died_is_replayed_not_formed_again(
    world: World,
) -> None:
    world.model.add(ONE_FACT)
    operation = world.queued()
    claimed_by_the_dead(world, operation)
    # the dead worker committed (under the operation's own key) and died before finishing
    request = OperationRequest.model_validate_json(operation.request_json)
    prepared = prepare(request.command, world.store, request.received_at)
    assert not isinstance(prepared, FormationReceipt)
    run(prepared, world.store, HashingEmbedder(), world.model, usage=FormationUsage())
    committed = world.memory()
    crash(world)

    recover(world, restart=True)
    deliver_all(world)

    done = world.current(operation)
    assert done.state is OperationState.SUCCEEDED and result(done).replay is False
    assert len(world.model.calls) == 1 and world.memory() == committed
    assert world.in_progress() == 0


def test_done_formations_are_left_alone(world: World) -> None:
    world.model.add(ONE_FACT)
    succeeded = world.queued()
    deliver_all(world)
    cancelled = world.queued()
    world.operations.cancel(ENTERPRISE, cancelled.operation_id, world.clock())
    crash(world)
    before = (world.current(succeeded), world.current(cancelled))

    recovery = recover(world, restart=True)

    assert (recovery.queued, recovery.failed, world.queue.tasks) == ([], [], [])
    assert (world.current(succeeded), world.current(cancelled)) == before


def test_a_formation_that_cannot_be_queued_fails_and_releases_its_reservation(
    world: World,
) -> None:
    operation = world.queued()
    crash(world)
    world.queue.failure = errors.Unavailable("the queue is closed", reason="QUEUE_CLOSED")

    recovery = recover(world, restart=True)

    assert recovery.failed == [operation.operation_id] and recovery.queued == []
    failed = world.current(operation)
    assert failed.state is OperationState.FAILED
    assert failed.error is not None and failed.error.reason == "QUEUE_CLOSED"
    assert world.in_progress() == 0


def test_ten_formations_in_flight_at_a_crash_all_finish_and_free_their_slots(
    world: World,
) -> None:
    """The issue: 4 running and 6 queued at a kill -9; after the restart all ten finish
    and the next burst of ten is admitted."""
    world.ledger.put_billing(EnterpriseBilling(enterprise_id=ENTERPRISE, plan=Plan.ENTERPRISE))
    for _ in range(10):
        world.model.add(ONE_FACT)
    in_flight = [world.queued(formation(TURNS)) for _ in range(10)]
    for operation in in_flight[:4]:
        claimed_by_the_dead(world, operation)
    crash(world)
    with pytest.raises(errors.ResourceExhausted):  # every slot is taken
        world.queued()

    recover(world, restart=True)
    deliver_all(world)

    assert all(world.current(op).state is OperationState.SUCCEEDED for op in in_flight)
    assert world.in_progress() == 0
    burst = [world.queued() for _ in range(10)]
    assert len(burst) == 10 and world.in_progress() == 10
