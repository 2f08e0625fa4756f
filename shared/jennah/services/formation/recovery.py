"""Formations stranded by a crash: deliver them again.

A process that dies mid-formation leaves its operations behind: the one its worker
held stays RUNNING under a lease nobody will finish, and the ones waiting in the
embedded default's in-memory queue stay QUEUED with no task left to run them. Each
keeps its admitted formation's reservation, so each takes one of its enterprise's
formations-in-progress slots until the reservation expires (35 minutes), and the
clients polling them wait forever. Production needs no recovery: Cloud Tasks keeps
a task until the worker acknowledges it and delivers it again, and the operation is
claimed again once the dead worker's lease runs out. `jnh serve` calls `recover` at
start.

`recover` queues every stranded operation again (`OperationStore.unfinished`). The
worker is idempotent (`Formation.work`): it claims the operation, forms
it, or replays what an earlier attempt committed under its formationKey, and settles
its reservation; one whose client cancelled it meanwhile is finished CANCELLED
without a model call, its reservation released. An operation that cannot be queued
is failed with the queue's error and its reservation released.

Leases on a restart (`restart=True`): the in-process worker pool of `jnh serve` is
the only worker of its data directory, and at start it has claimed nothing yet, so
every RUNNING operation in the file was leased by a process that is gone, however
long its lease still runs (31 minutes by default). Recovery releases each on its dead
holder's behalf (`OperationStore.release`, which applies only while that holder still
holds it) and queues it. Two servers sharing one data directory (not a supported
setup) stay correct: the first server's worker finds before its commit that it lost
the lease and writes nothing, and a formationKey commits once in any case; the cost
is a model call.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime

from jennah.domain.operations import FormationOperation, OperationState
from jennah.errors import JennahError
from jennah.ports.tasks import FormationTask
from jennah.services.formation.use_case import Formation, OperationRequest

log = logging.getLogger(__name__)

# Every lease ends by then: on a restart, every RUNNING operation is stranded.
EVERY_LEASE = datetime.max.replace(tzinfo=UTC)
# Operations recovered by one call; the embedded default holds at most 10 formations in
# progress per enterprise (billing.MAX_FORMATIONS_IN_PROGRESS).
BATCH = 1000


@dataclass
class Recovery:
    """What `recover` did, by operation id."""

    queued: list[str] = field(default_factory=list)  # delivered again
    failed: list[str] = field(default_factory=list)  # could not be queued: failed, released


def recover(formation: Formation, *, restart: bool = False, limit: int = BATCH) -> Recovery:
    """Queue again up to `limit` operations no live worker holds: QUEUED ones, and RUNNING
    ones whose lease ran out, or every RUNNING one on a `restart` of the only worker pool
    of their store (see the module docstring). The operations' ids, by what became of them.
    """
    operations, now = formation.operations, formation.now()
    recovery = Recovery()
    for operation in operations.unfinished(EVERY_LEASE if restart else now, limit):
        if operation.state is OperationState.RUNNING and operation.lease_owner is not None:
            operations.release(
                operation.enterprise_id, operation.operation_id, operation.lease_owner, now
            )
        if _requeue(operation, formation):
            recovery.queued.append(operation.operation_id)
        else:
            recovery.failed.append(operation.operation_id)
    if recovery.queued or recovery.failed:
        log.warning(
            "recovered %d stranded formation operations: %d queued again, %d failed",
            len(recovery.queued) + len(recovery.failed), len(recovery.queued),
            len(recovery.failed),
        )  # fmt: skip
    return recovery


def _requeue(operation: FormationOperation, formation: Formation) -> bool:
    """Enqueue the operation's task; when the queue refuses, fail the operation and
    release its reservation. Whether it was queued."""
    task = FormationTask(enterprise_id=operation.enterprise_id, operation_id=operation.operation_id)
    try:
        formation.queue.enqueue(task)
    except JennahError as exc:
        admitted = OperationRequest.model_validate_json(operation.request_json).admitted
        formation.abandon_unqueued(operation, admitted, exc)
        return False
    return True
