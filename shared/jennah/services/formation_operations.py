"""memory:form as an operation: submit, work, wait.

The `form` function validates the request, replays a committed formationKey,
admits the formation against the allowance, and only then creates an
operation (QUEUED) and enqueues its task (`submit`). The `form-worker` (a
Cloud Tasks target in production, an in-process pool in the embedded default)
claims the operation, runs the formation and finishes it (`work`). The `form`
function waits for the operation (`wait`) and answers with its receipt or its
error; a client that goes away cancels it.

Deliveries are at least once (Cloud Tasks retries, and its emulator even runs
a duplicate task twice), so `work` is idempotent: a claim takes a lease, so
one worker runs an operation at a time; a finished operation is acknowledged
without a model call; and every formation commits a formationKey record (the
operation's own key when the request has none), so a worker that crashed after
its commit and is retried replays the committed receipt instead of forming
again. Each attempt that reaches the model records its usage (attempt 1 under
the admitted formation's id, attempt n under "<id>.n").
"""

from __future__ import annotations

import dataclasses
import logging
import socket
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from pydantic import AwareDatetime, BaseModel

from jennah import errors
from jennah.domain.access import Caller
from jennah.domain.formation import FormationReceipt
from jennah.errors import JennahError
from jennah.ports.operations import (
    ClaimOutcome,
    FormationOperation,
    OperationError,
    OperationState,
    OperationStore,
    new_operation_id,
)
from jennah.ports.tasks import FormationTask, TaskQueue
from jennah.services import formation, metered_formation
from jennah.services.billing import AdmittedFormation, settle_formation
from jennah.services.formation import FormationCommand, FormationUsage
from jennah.services.metered_formation import FormationDeps

log = logging.getLogger(__name__)

# No request runs past 30 minutes end to end: the form function waits at most this long.
FORMATION_CEILING = timedelta(minutes=30)
# A worker's claim: longer than any formation may run, so a live worker is never
# overtaken; a crashed worker's operation is claimed again once it runs out.
LEASE = FORMATION_CEILING + timedelta(minutes=1)
# How long an operation document is kept (Firestore TTL on expireTime in production,
# `sweep` locally). Receipts stay replayable through the formationKey record after it.
RETENTION = timedelta(days=7)
# The formationKey record of a request that named none: the operation's own key, so
# a retried worker replays instead of forming again. Keys a caller sends are at most
# 256 characters of any kind; this prefix is reserved (jennah.errors.InvalidArgument).
OPERATION_KEY_PREFIX = "jennah.operation/"
# Transient failures: the worker gives the operation back and the queue retries it.
TRANSIENT = (errors.Unavailable,)
OPERATION_NAME_PREFIX = "operations/"
# An attempt whose lease ran out and was claimed by another worker: it writes nothing and
# leaves the operation to its new holder.
TAKEN_OVER = "FORMATION_TAKEN_OVER"


class OperationRequest(BaseModel):
    """What an operation document holds for its worker (`request_json`)."""

    command: FormationCommand
    received_at: AwareDatetime
    admitted: AdmittedFormation


Reporter = Callable[[FormationOperation, FormationUsage], None]


class Outcome(StrEnum):
    ACK = "ACK"  # done with this delivery (2xx): finished, or nothing to do
    RETRY = "RETRY"  # deliver again later (503): another worker holds it, or a transient failure


class ClientGone(JennahError):
    """The client closed the connection; the operation was cancelled."""

    status = "CANCELLED"

    @property
    def http_status(self) -> int:
        return 499


def operation_name(operation_id: str) -> str:
    return OPERATION_NAME_PREFIX + operation_id


def check_formation_key(command: FormationCommand) -> None:
    key = command.formation_key
    if key is not None and key.startswith(OPERATION_KEY_PREFIX):
        raise errors.InvalidArgument(
            f"formationKey must not start with {OPERATION_KEY_PREFIX!r}, which is reserved",
            field="formationKey",
        )


# The form function.


def submit(
    command: FormationCommand,
    caller: Caller,
    deps: FormationDeps,
    operations: OperationStore,
    queue: TaskQueue,
) -> FormationReceipt | FormationOperation:
    """Validate, replay or admit, then create the operation and enqueue its task.

    Returns the replayed receipt when the formationKey was committed (nothing
    spent), else the QUEUED operation. Raises INVALID_ARGUMENT for a request out
    of bounds, RESOURCE_EXHAUSTED at the allowance or with too many formations in
    progress (nothing spent either way), UNAVAILABLE when the task cannot be
    queued (the reservation is released and the operation is marked failed).
    """
    check_formation_key(command)
    prepared = formation.prepare(command, deps.store, deps.now())
    if isinstance(prepared, FormationReceipt):
        return prepared
    operation_id = new_operation_id()
    if prepared.command.formation_key is None:
        keyed = prepared.command.model_copy(
            update={"formation_key": OPERATION_KEY_PREFIX + operation_id}
        )
        prepared = dataclasses.replace(prepared, command=keyed)
    bounded, admitted = metered_formation.admit(prepared, caller, deps)
    now = deps.now()
    request = OperationRequest(
        command=bounded.command, received_at=bounded.received_at, admitted=admitted
    )
    operation = _new_operation(
        operation_id, command, caller, now,
        request_json=request.model_dump_json(), formation_id=admitted.formation_id,
    )  # fmt: skip
    try:
        operations.create(operation)
        queue.enqueue(FormationTask(enterprise_id=caller.enterprise_id, operation_id=operation_id))
    except JennahError as exc:
        abandon_unqueued(operation, admitted, deps, operations, exc)
        raise errors.Unavailable(
            f"the formation could not be queued ({exc.message}); nothing was spent: retry",
            reason="FORMATION_NOT_QUEUED",
        ) from exc
    return operation


def abandon_unqueued(
    operation: FormationOperation,
    admitted: AdmittedFormation,
    deps: FormationDeps,
    operations: OperationStore,
    cause: JennahError,
) -> None:
    """Release the reservation of an operation that could not be queued and mark it failed
    with `cause` (best effort)."""
    _release(admitted, operation, deps)
    try:
        operations.finish(
            operation.enterprise_id, operation.operation_id, deps.now(), error=error_of(cause)
        )
    except JennahError:
        log.warning("operation %s could not be marked failed", operation.operation_id)


def wait(
    operations: OperationStore,
    operation: FormationOperation,
    now: Callable[[], datetime],
    *,
    client_gone: Callable[[], bool] = lambda: False,
    timeout: timedelta = FORMATION_CEILING,
    sleep: Callable[[float], None] = time.sleep,
) -> FormationOperation:
    """Poll the operation until it is done; the operation.

    When `client_gone()` turns true first, cancel the operation and raise
    ClientGone. Past `timeout` (the 30-minute ceiling), cancel it and raise
    DEADLINE_EXCEEDED naming the ceiling; its worker writes nothing.
    """
    deadline = time.monotonic() + timeout.total_seconds()
    interval = 0.002  # a fast formation answers in milliseconds; slow ones poll at most 2 per s
    enterprise_id, operation_id = operation.enterprise_id, operation.operation_id
    while True:
        current = operations.get(enterprise_id, operation_id)
        if current is None:
            raise errors.Internal(f"operation {operation_id} disappeared while it was awaited")
        if current.done:
            return current
        if client_gone():
            operations.cancel(enterprise_id, operation_id, now())
            raise ClientGone("the client closed the connection; the formation was cancelled")
        if time.monotonic() >= deadline:
            operations.cancel(enterprise_id, operation_id, now())
            seconds = int(timeout.total_seconds())
            raise errors.DeadlineExceeded(
                f"the formation did not finish within the {seconds} s ceiling of a memory:form "
                "request and was cancelled; nothing was written: resend with the same "
                "formationKey",
                reason="FORMATION_CEILING",
                metadata={"ceilingSeconds": str(seconds)},
            )
        sleep(interval)
        interval = min(interval * 1.5, 0.5)


def result(operation: FormationOperation) -> FormationReceipt:
    """The receipt of a SUCCEEDED operation; raises its error otherwise."""
    if operation.receipt_json is not None:
        return FormationReceipt.model_validate_json(operation.receipt_json)
    if operation.error is not None:
        raise error_from(operation.error)
    raise errors.FailedPrecondition(
        f"operation {operation.operation_id} is not done yet", reason="OPERATION_NOT_DONE"
    )


def replayed_operation(
    receipt: FormationReceipt,
    command: FormationCommand,
    caller: Caller,
    operations: OperationStore,
    now: datetime,
) -> FormationOperation:
    """A done operation holding a replayed receipt, for an asynchronous request whose
    formationKey was committed: the answer is an operation either way."""
    operation = _new_operation(
        new_operation_id(), command, caller, now,
        state=OperationState.SUCCEEDED, request_json="{}",  # nothing to run
        receipt_json=receipt.model_dump_json(),
    )  # fmt: skip
    operations.create(operation)
    return operation


def _new_operation(
    operation_id: str, command: FormationCommand, caller: Caller, now: datetime, **fields: Any
) -> FormationOperation:
    """An operation of the caller's formation in the command's workspace, kept RETENTION."""
    return FormationOperation(
        operation_id=operation_id,
        enterprise_id=caller.enterprise_id,
        scope_id=command.scope.scope_id,
        caller=caller.principal,
        formation_key=command.formation_key,
        create_time=now,
        update_time=now,
        expire_time=now + RETENTION,
        **fields,
    )


# The worker.


def work(
    task: FormationTask,
    deps: FormationDeps,
    operations: OperationStore,
    worker: str,
    *,
    lease: timedelta = LEASE,
    report: Reporter | None = None,
) -> Outcome:
    """Run one delivery of a task: claim the operation, form, finish. Idempotent.

    `report`, when given, is told of each operation this delivery finishes, with what
    its model calls spent (one structured log line per formation, in production)."""
    claim = operations.claim(task.enterprise_id, task.operation_id, worker, deps.now(), lease)
    if claim.outcome is ClaimOutcome.BUSY:
        return Outcome.RETRY
    if claim.outcome is not ClaimOutcome.CLAIMED or claim.operation is None:
        if claim.operation is not None and claim.operation.state is OperationState.CANCELLED:
            # cancelled before it ran: nothing else gives its reservation back (idempotent)
            request = OperationRequest.model_validate_json(claim.operation.request_json)
            _release(request.admitted, claim.operation, deps)
        return Outcome.ACK  # finished, cancelled, or gone: nothing to do
    operation = claim.operation
    usage = FormationUsage()

    def finish(**outcome: Any) -> Outcome:
        finished = operations.finish(task.enterprise_id, task.operation_id, deps.now(), **outcome)
        if report is not None and finished is not None:
            report(finished, usage)
        return Outcome.ACK

    try:
        receipt = _form(operation, deps, operations, worker, usage)
    except TRANSIENT as exc:
        log.warning("operation %s: transient failure, retrying: %s", task.operation_id, exc)
        operations.release(task.enterprise_id, task.operation_id, worker, deps.now())
        return Outcome.RETRY
    except JennahError as exc:
        if exc.reason == TAKEN_OVER:  # the worker that holds it now finishes it, not this one
            log.warning("operation %s: taken over by another worker: %s", task.operation_id, exc)
            return Outcome.ACK
        return finish(error=error_of(exc))
    except Exception:  # a defect: finish the operation rather than retry forever
        log.exception("operation %s failed unexpectedly", task.operation_id)
        internal = errors.Internal("internal error; the server log has the details")
        return finish(error=error_of(internal))
    return finish(receipt_json=receipt.model_dump_json())


def _form(
    operation: FormationOperation,
    deps: FormationDeps,
    operations: OperationStore,
    worker: str,
    usage: FormationUsage,
) -> FormationReceipt:
    request = OperationRequest.model_validate_json(operation.request_json)
    prepared = formation.prepare(request.command, deps.store, request.received_at)
    if isinstance(prepared, FormationReceipt):  # committed already: the stored receipt
        _release(request.admitted, operation, deps)
        own_key = (prepared.formation_key or "").startswith(OPERATION_KEY_PREFIX)
        # under the operation's own key, only an earlier attempt of it committed: for its
        # client this is the formation, not a replay
        return _public(prepared.model_copy(update={"replay": False}) if own_key else prepared)
    caller = Caller(enterprise_id=operation.enterprise_id, principal=operation.caller)

    def before_commit() -> None:
        current = operations.get(operation.enterprise_id, operation.operation_id)
        if current is None or current.cancel_requested or current.done:
            raise ClientGone("the client closed the connection before the formation finished")
        if current.lease_owner != worker:
            raise errors.Aborted(
                "another worker took this formation over; this attempt writes nothing",
                reason=TAKEN_OVER,
            )

    receipt = metered_formation.run_admitted(
        prepared, request.admitted, caller, deps, usage,
        before_commit=before_commit, attempt=operation.attempts,
    )  # fmt: skip
    return _public(receipt)


def _release(
    admitted: AdmittedFormation, operation: FormationOperation, deps: FormationDeps
) -> None:
    """Release the reservation of an operation answered without forming (idempotent)."""
    caller = Caller(enterprise_id=operation.enterprise_id, principal=operation.caller)
    settle_formation(
        deps.ledger, admitted, scope_id=operation.scope_id, caller=caller,
        usage=FormationUsage(), formation_key=operation.formation_key, now=deps.now(),
    )  # fmt: skip


def _public(receipt: FormationReceipt) -> FormationReceipt:
    """The receipt without the operation's own formationKey (the caller sent none)."""
    key = receipt.formation_key
    if key is not None and key.startswith(OPERATION_KEY_PREFIX):
        return receipt.model_copy(update={"formation_key": None})
    return receipt


def worker_id() -> str:
    """A name for one delivery's worker: its host and a random suffix."""
    return f"{socket.gethostname()}/{uuid.uuid4().hex[:12]}"


def abandon(task: FormationTask, operations: OperationStore, now: datetime) -> None:
    """The queue gave up on a task: finish its operation UNAVAILABLE (if not done)."""
    operations.finish(
        task.enterprise_id, task.operation_id, now,
        error=error_of(errors.Unavailable(
            "the formation could not be run: the worker kept failing; nothing was written: "
            "resend with the same formationKey", reason="FORMATION_ABANDONED",
        )),
    )  # fmt: skip


# Errors as operations record them.

_ERRORS: dict[str, type[JennahError]] = {
    cls.status: cls
    for cls in (
        errors.InvalidArgument,
        errors.FailedPrecondition,
        errors.Unauthenticated,
        errors.PermissionDenied,
        errors.NotFound,
        errors.Aborted,
        errors.AlreadyExists,
        errors.ResourceExhausted,
        errors.DeadlineExceeded,
        errors.Unavailable,
        errors.Internal,
        ClientGone,
    )
}


def error_of(exc: JennahError) -> OperationError:
    return OperationError(
        code=exc.status, message=exc.message, reason=exc.reason, metadata=dict(exc.metadata)
    )


def error_from(error: OperationError) -> JennahError:
    """The JennahError an operation's error stands for (same status, reason, metadata)."""
    cls = _ERRORS.get(error.code, errors.Internal)
    return cls(error.message, reason=error.reason, metadata=dict(error.metadata))
