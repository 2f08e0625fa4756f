"""memory:form, the use case: submit, wait, work. Read it top to bottom.

The `form` function (a route) calls `Formation.form`: it checks the bounds,
replays a committed formationKey, resolves the workspace's vocabulary, admits
the formation against the plan (reserving its units), and only then creates an
operation (QUEUED) and enqueues its task (`submit`); then it waits for the
operation and answers with its receipt or its error (`wait`), or answers the
operation at once when the request is asynchronous. A client that goes away
cancels the operation.

The `form-worker` (a Cloud Tasks target in production, an in-process pool in
the embedded default) calls `Formation.work` for each delivery: claim the
operation, run the formation (`pipeline.run`), settle its usage, finish the
operation. Deliveries are at least once (Cloud Tasks retries, and its emulator
even runs a duplicate task twice), so `work` is idempotent: a claim takes a
lease, so one worker runs an operation at a time; a finished operation is
acknowledged without a model call; and every formation commits a formationKey
record (the operation's own key when the request has none), so a worker that
crashed after its commit and is retried replays the committed receipt instead
of forming again. Every attempt is admitted against the plan (attempt 1 on
submission, attempt n again by its worker, which fails the operation
RESOURCE_EXHAUSTED when refused); each attempt that reaches the model records
its usage (attempt 1 under the admitted formation's id, attempt n under
"<id>.n"), its receipt reports what all attempts consumed, and every
reservation is released in every case.
"""

from __future__ import annotations

import logging
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from pydantic import AwareDatetime, BaseModel

from jennah import errors
from jennah.domain.access import Caller
from jennah.domain.billing import Spent
from jennah.domain.formation import FormationReceipt, Turn
from jennah.domain.models import ScopeRecord, ScopeRef
from jennah.domain.operations import (
    FORMATION_CEILING,
    LEASE,
    OPERATION_KEY_PREFIX,
    RETENTION,
    ClaimOutcome,
    FormationOperation,
    OperationState,
    error_from,
    error_of,
    new_operation_id,
    public_receipt,
)
from jennah.domain.vocabulary import to_data
from jennah.errors import ClientGone, JennahError
from jennah.ports.embedder import Embedder
from jennah.ports.ledger import UsageLedger
from jennah.ports.model import LanguageModel
from jennah.ports.operations import OperationStore
from jennah.ports.store import MemoryStore
from jennah.ports.tasks import FormationTask, TaskQueue
from jennah.ports.vocabulary import VocabularyStore
from jennah.ports.work import background
from jennah.services import lifecycle
from jennah.services.billing import (
    AdmittedFormation,
    admit_attempt,
    admit_formation,
    release,
    settle_formation,
    spent_before,
)
from jennah.services.formation.command import DEFAULT_DEADLINE_SECONDS, FormationCommand
from jennah.services.formation.model_calls import FormationUsage
from jennah.services.formation.pipeline import PreparedFormation, prepare, run
from jennah.services.formation.settlements import Settlements
from jennah.services.vocabulary import resolve_for_formation

log = logging.getLogger(__name__)

# Transient failures: the worker gives the operation back and the queue retries it.
TRANSIENT = (errors.Unavailable,)
# An attempt whose lease ran out and was claimed by another worker: it writes nothing and
# leaves the operation to its new holder.
TAKEN_OVER = "FORMATION_TAKEN_OVER"
# Formation.wait polls its operation after these intervals, growing 1.5x, at most the last.
FIRST_POLL_SECONDS = 0.002
LONGEST_POLL_SECONDS = 0.5
# When the workers run in this process, a worker's settlement wakes `wait` at once, so its
# polls only notice a client that went away or an operation finished elsewhere (cancelled
# or expired): they can start this far apart (each poll reads the operation store).
LOCAL_FIRST_POLL_SECONDS = 0.05


@dataclass(frozen=True)
class FormationRequest:
    """What a memory:form request asks: the turns, when they were observed, its key."""

    turns: Sequence[Turn]
    observed_at: datetime | None = None
    formation_key: str | None = None


class OperationRequest(BaseModel):
    """What an operation document holds for its worker (`request_json`)."""

    command: FormationCommand
    received_at: AwareDatetime
    admitted: AdmittedFormation


class Outcome(StrEnum):
    """What a delivery of a task comes to."""

    ACK = "ACK"  # done with this delivery (2xx): finished, or nothing to do
    RETRY = "RETRY"  # deliver again later (503): another worker holds it, or a transient failure


Reporter = Callable[[FormationOperation, FormationUsage], None]
ClientGoneProbe = Callable[[], bool]


def _never() -> bool:
    return False


def worker_id() -> str:
    """A name for one delivery's worker: its host and a random suffix."""
    return f"{socket.gethostname()}/{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True)
class Formation:
    """memory:form against one deployment's stores, model and queue.

    `model_call_deadline` bounds each model call in seconds; `lease` is a
    worker's claim on an operation (longer than a formation may run); `report`,
    when given, is told of each operation a worker finishes with what its model
    calls spent (one structured log line per formation, in production). `settlements`
    wakes `wait` when a worker of this process finishes the operation it awaits;
    `first_poll` is `wait`'s first interval between two polls (backing off from it).
    """

    store: MemoryStore
    embedder: Embedder
    model: LanguageModel
    ledger: UsageLedger
    vocabularies: VocabularyStore
    operations: OperationStore
    queue: TaskQueue
    now: Callable[[], datetime]
    model_call_deadline: float = DEFAULT_DEADLINE_SECONDS
    lease: timedelta = LEASE
    report: Reporter | None = None
    settlements: Settlements = field(default_factory=Settlements)
    passes: lifecycle.Passes = lifecycle.INLINE  # the lifecycle pass after a change
    first_poll: float = FIRST_POLL_SECONDS

    # The form function.

    def form(
        self,
        request: FormationRequest,
        caller: Caller,
        scope: ScopeRef,
        registration: ScopeRecord | None = None,
        *,
        run_async: bool = False,
        client_gone: ClientGoneProbe = _never,
    ) -> FormationReceipt | FormationOperation:
        """Submit the formation; then its receipt once it is done, or with `run_async`
        the operation at once (a done one for a replayed formationKey). Raises what
        `submit` and `wait` raise, and the formation's own error."""
        submitted = self.submit(request, caller, scope, registration)
        if isinstance(submitted, FormationOperation):
            if run_async:
                return submitted
            return result(self.wait(submitted, client_gone=client_gone))
        if run_async:  # a replay is still an operation, done at once
            return self._replayed_operation(submitted, caller, scope, request.formation_key)
        return submitted

    def submit(
        self,
        request: FormationRequest,
        caller: Caller,
        scope: ScopeRef,
        registration: ScopeRecord | None = None,
    ) -> FormationReceipt | FormationOperation:
        """Check the bounds, replay or admit, then create the operation and enqueue it.

        Returns the replayed receipt when the formationKey was committed (nothing
        spent), else the QUEUED operation. Raises INVALID_ARGUMENT for a request out
        of bounds, RESOURCE_EXHAUSTED at the allowance or with too many formations in
        progress (nothing spent either way), UNAVAILABLE when the task cannot be
        queued (the reservation is released and the operation is marked failed).
        """
        _check_formation_key(request.formation_key)
        operation_id = new_operation_id()
        command = self._command(request, caller, scope, registration, operation_id)
        prepared = prepare(command, self.store, self.now())
        if isinstance(prepared, FormationReceipt):
            return prepared
        admitted = admit_formation(self.ledger, caller, self.now())
        held = OperationRequest(
            command=_bounded(prepared.command, admitted),
            received_at=prepared.received_at,
            admitted=admitted,
        )
        operation = self._new_operation(
            operation_id, caller, scope, request.formation_key, self.now(),
            request_json=held.model_dump_json(), formation_id=admitted.formation_id,
        )  # fmt: skip
        try:
            self.operations.create(operation)
            self.queue.enqueue(
                FormationTask(enterprise_id=caller.enterprise_id, operation_id=operation_id)
            )
        except JennahError as exc:
            self.abandon_unqueued(operation, admitted, exc)
            raise errors.Unavailable(
                f"the formation could not be queued ({exc.message}); nothing was spent: retry",
                reason="FORMATION_NOT_QUEUED",
            ) from exc
        return operation

    def _command(
        self,
        request: FormationRequest,
        caller: Caller,
        scope: ScopeRef,
        registration: ScopeRecord | None,
        operation_id: str,
    ) -> FormationCommand:
        """The formation to run: the bounds of the enterprise's plan and this deployment,
        and the vocabulary resolved for the workspace now, as the formation starts (a
        declaration made while it runs applies to the next one). A request that names no
        formationKey runs under the operation's own key."""
        resolved = resolve_for_formation(self.vocabularies, scope)
        return FormationCommand(
            scope=scope,
            registration=registration,
            caller=caller.principal,
            turns=list(request.turns),
            observed_at=request.observed_at,
            formation_key=_key_or_own(request.formation_key, operation_id),
            input_token_cap=self.ledger.get_billing(caller.enterprise_id).terms.input_token_cap,
            vocabulary=None if resolved is None else to_data(resolved),
            deadline_seconds=self.model_call_deadline,
        )

    def abandon_unqueued(
        self, operation: FormationOperation, admitted: AdmittedFormation, cause: JennahError
    ) -> None:
        """Release the reservation of an operation that was never queued (best effort)."""
        self._release(admitted, operation)
        try:
            self.operations.finish(
                operation.enterprise_id, operation.operation_id, self.now(), error=error_of(cause)
            )
        except JennahError:
            log.warning("operation %s could not be marked failed", operation.operation_id)

    def wait(
        self,
        operation: FormationOperation,
        *,
        client_gone: ClientGoneProbe = _never,
        timeout: timedelta = FORMATION_CEILING,
        sleep: Callable[[float], object] | None = None,
    ) -> FormationOperation:
        """Poll the operation until it is done; the done operation.

        Between polls it sleeps (`sleep`, by default until a worker of this process
        settles the operation or the interval passes). When `client_gone()` turns true
        first, cancel the operation and raise ClientGone. Past `timeout` (the 30-minute
        ceiling), cancel it and raise DEADLINE_EXCEEDED naming the ceiling; its worker
        writes nothing.
        """
        enterprise_id, operation_id = operation.enterprise_id, operation.operation_id
        with self.settlements.watch(enterprise_id, operation_id) as settled:
            return self._poll(operation, client_gone, timeout, sleep or settled.wait)

    def _poll(
        self,
        operation: FormationOperation,
        client_gone: ClientGoneProbe,
        timeout: timedelta,
        sleep: Callable[[float], object],
    ) -> FormationOperation:
        deadline = time.monotonic() + timeout.total_seconds()
        interval = self.first_poll  # a fast formation answers in milliseconds
        enterprise_id, operation_id = operation.enterprise_id, operation.operation_id
        while True:
            current = self.operations.get(enterprise_id, operation_id)
            if current is None:
                raise errors.Internal(f"operation {operation_id} disappeared while it was awaited")
            if current.done:
                return current
            if client_gone():
                self.operations.cancel(enterprise_id, operation_id, self.now())
                raise ClientGone("the client closed the connection; the formation was cancelled")
            if time.monotonic() >= deadline:
                self.operations.cancel(enterprise_id, operation_id, self.now())
                raise _past_ceiling(timeout)
            sleep(interval)
            interval = min(interval * 1.5, LONGEST_POLL_SECONDS)

    def _replayed_operation(
        self,
        receipt: FormationReceipt,
        caller: Caller,
        scope: ScopeRef,
        formation_key: str | None,
    ) -> FormationOperation:
        """A done operation holding a replayed receipt, for an asynchronous request whose
        formationKey was committed: the answer is an operation either way."""
        operation = self._new_operation(
            new_operation_id(), caller, scope, formation_key, self.now(),
            state=OperationState.SUCCEEDED, request_json="{}",  # nothing to run
            receipt_json=receipt.model_dump_json(),
        )  # fmt: skip
        self.operations.create(operation)
        return operation

    def _new_operation(
        self,
        operation_id: str,
        caller: Caller,
        scope: ScopeRef,
        formation_key: str | None,
        now: datetime,
        **fields: Any,
    ) -> FormationOperation:
        """An operation of the caller's formation in the workspace, kept RETENTION."""
        return FormationOperation(
            operation_id=operation_id,
            enterprise_id=caller.enterprise_id,
            scope_id=scope.scope_id,
            caller=caller.principal,
            formation_key=formation_key,
            create_time=now,
            update_time=now,
            expire_time=now + RETENTION,
            **fields,
        )

    # The worker.

    def work(self, task: FormationTask, worker: str | None = None) -> Outcome:
        """Run one delivery of a task: claim the operation, form, settle, finish.
        Idempotent (see the module doc); `worker` names this delivery's claim. It is
        background work (jennah.ports.work): a process that also answers calls serves
        them first at the resources both wait for."""
        with background():
            return self._deliver(task, worker or worker_id())

    def _deliver(self, task: FormationTask, worker: str) -> Outcome:
        claim = self.operations.claim(
            task.enterprise_id, task.operation_id, worker, self.now(), self.lease
        )
        if claim.outcome is ClaimOutcome.BUSY:
            return Outcome.RETRY
        if claim.outcome is not ClaimOutcome.CLAIMED or claim.operation is None:
            if claim.operation is not None and claim.operation.state is OperationState.CANCELLED:
                # cancelled before it ran: nothing else gives its reservation back (idempotent)
                held = OperationRequest.model_validate_json(claim.operation.request_json)
                self._release(held.admitted, claim.operation)
            return Outcome.ACK  # finished, cancelled, or gone: nothing to do
        operation = claim.operation
        spend = FormationUsage()

        def finish(**outcome: Any) -> Outcome:
            finished = self.operations.finish(
                task.enterprise_id, task.operation_id, self.now(), **outcome
            )
            self.settlements.settle(task.enterprise_id, task.operation_id)
            if self.report is not None and finished is not None:
                self.report(finished, spend)
            return Outcome.ACK

        try:
            receipt = self._run(operation, worker, spend)
        except TRANSIENT as exc:
            log.warning("operation %s: transient failure, retrying: %s", task.operation_id, exc)
            self.operations.release(task.enterprise_id, task.operation_id, worker, self.now())
            return Outcome.RETRY
        except JennahError as exc:
            if exc.reason == TAKEN_OVER:  # the worker that holds it now finishes it
                log.warning("operation %s: taken over: %s", task.operation_id, exc)
                return Outcome.ACK
            return finish(error=error_of(exc))
        except Exception:  # a defect: finish the operation rather than retry forever
            log.exception("operation %s failed unexpectedly", task.operation_id)
            internal = errors.Internal("internal error; the server log has the details")
            return finish(error=error_of(internal))
        return finish(receipt_json=receipt.model_dump_json())

    def _run(
        self, operation: FormationOperation, worker: str, spend: FormationUsage
    ) -> FormationReceipt:
        """Replay what an earlier attempt committed, or admit this attempt, form and
        settle; the receipt."""
        held = OperationRequest.model_validate_json(operation.request_json)
        prepared = prepare(held.command, self.store, held.received_at)
        if isinstance(prepared, FormationReceipt):  # committed already: the stored receipt
            self._release(held.admitted, operation)
            own_key = (prepared.formation_key or "").startswith(OPERATION_KEY_PREFIX)
            # under the operation's own key, only an earlier attempt of it committed: for its
            # client this is the formation, not a replay
            return public_receipt(prepared.model_copy(update={"replay": not own_key}))
        attempt = operation.attempts
        earlier = spent_before(self.ledger, held.admitted, attempt)
        admitted = admit_attempt(self.ledger, held.admitted, attempt, self.now())
        prepared = replace(prepared, command=_bounded(prepared.command, admitted))
        try:
            receipt = self._form(prepared, operation, worker, spend, earlier)
        finally:
            settle_formation(
                self.ledger, admitted, scope_id=operation.scope_id,
                caller=_caller_of(operation), usage=spend,
                formation_key=prepared.command.formation_key, now=self.now(),
            )  # fmt: skip
        return public_receipt(receipt)

    def _form(
        self,
        prepared: PreparedFormation,
        operation: FormationOperation,
        worker: str,
        spend: FormationUsage,
        earlier: Spent,
    ) -> FormationReceipt:
        def still_ours() -> None:
            """Before the reconciliation call and before the commit: call the model no
            more and write nothing for a client that has gone, or when another worker
            took the operation over."""
            current = self.operations.get(operation.enterprise_id, operation.operation_id)
            if current is None or current.cancel_requested or current.done:
                raise ClientGone("the client closed the connection before the formation finished")
            if current.lease_owner != worker:
                raise errors.Aborted(
                    "another worker took this formation over; this attempt writes nothing",
                    reason=TAKEN_OVER,
                )

        return run(
            prepared, self.store, self.embedder, self.model, usage=spend,
            checkpoint=still_ours, spent_before=earlier, passes=self.passes,
        )  # fmt: skip

    def _release(self, admitted: AdmittedFormation, operation: FormationOperation) -> None:
        """Release the reservations of an operation answered without forming (idempotent)."""
        release(self.ledger, admitted, operation.attempts)

    def abandon(self, task: FormationTask) -> None:
        """The queue gave up on a task: finish its operation UNAVAILABLE (if not done)."""
        self.operations.finish(
            task.enterprise_id, task.operation_id, self.now(),
            error=error_of(errors.Unavailable(
                "the formation could not be run: the worker kept failing; nothing was "
                "written: resend with the same formationKey", reason="FORMATION_ABANDONED",
            )),
        )  # fmt: skip
        self.settlements.settle(task.enterprise_id, task.operation_id)


def result(operation: FormationOperation) -> FormationReceipt:
    """The receipt of a SUCCEEDED operation; raises its error otherwise."""
    if operation.receipt_json is not None:
        return FormationReceipt.model_validate_json(operation.receipt_json)
    if operation.error is not None:
        raise error_from(operation.error)
    raise errors.FailedPrecondition(
        f"operation {operation.operation_id} is not done yet", reason="OPERATION_NOT_DONE"
    )


def _bounded(command: FormationCommand, admitted: AdmittedFormation) -> FormationCommand:
    """The command within the bounds its admission set."""
    return command.model_copy(
        update={
            "max_output_tokens": admitted.max_output_tokens,
            "output_token_budget": admitted.output_token_budget,
        }
    )


def _caller_of(operation: FormationOperation) -> Caller:
    return Caller(enterprise_id=operation.enterprise_id, principal=operation.caller)


def _key_or_own(key: str | None, operation_id: str) -> str:
    """The caller's formationKey (checked by `prepare`), or the operation's own."""
    return OPERATION_KEY_PREFIX + operation_id if key is None else key


def _check_formation_key(key: str | None) -> None:
    if key is not None and key.startswith(OPERATION_KEY_PREFIX):
        raise errors.InvalidArgument(
            f"formationKey must not start with {OPERATION_KEY_PREFIX!r}, which is reserved",
            field="formationKey",
        )


def _past_ceiling(timeout: timedelta) -> errors.DeadlineExceeded:
    seconds = int(timeout.total_seconds())
    return errors.DeadlineExceeded(
        f"the formation did not finish within the {seconds} s ceiling of a memory:form "
        "request and was cancelled; nothing was written: resend with the same formationKey",
        reason="FORMATION_CEILING",
        metadata={"ceilingSeconds": str(seconds)},
    )
