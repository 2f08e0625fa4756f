"""Formation operations: the model and its state transitions, pure.

`memory:form` is an operation. The `form` function creates one (QUEUED) and
enqueues a task; the `form-worker` claims it, runs the formation and finishes
it. A claim takes a lease, so only one worker runs an operation at a time, and
one whose lease ran out may be claimed again. The first finish wins. A client
that disconnects cancels the operation; a running worker sees
`cancel_requested` before its commit and finishes it CANCELLED, writing nothing.

States: QUEUED -> RUNNING -> SUCCEEDED | FAILED | CANCELLED, and RUNNING ->
QUEUED on `release`. The transitions are the pure functions at the end of this
module; each store adapter (`jennah.ports.operations.OperationStore`) applies
one of them to the stored operation in one atomic read-modify-write, so the
adapters share the rules and differ only in storage.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

from jennah import errors
from jennah.domain.formation import FormationReceipt

OPERATION_ID_PATTERN = re.compile(r"op_[0-9a-f]{32}")
OPERATION_NAME_PREFIX = "operations/"

# No request runs past 30 minutes end to end: the form function waits at most this long.
FORMATION_CEILING = timedelta(minutes=30)
# A worker's claim on an operation: longer than any formation may run, so a live worker
# is never overtaken; a crashed worker's operation is claimed again once it runs out.
LEASE = FORMATION_CEILING + timedelta(minutes=1)
# How long an operation document is kept (Firestore TTL on expireTime in production,
# `sweep` locally). Receipts stay replayable through the formationKey record after it.
RETENTION = timedelta(days=7)
# The formationKey record of a request that named none: the operation's own key, so a
# retried worker replays instead of forming again. Keys a caller sends are at most 256
# characters of any kind; this prefix is reserved.
OPERATION_KEY_PREFIX = "jennah.operation/"

CANCELLED = "CANCELLED"  # the canonical status of an operation the client abandoned
CLIENT_CLOSED_MESSAGE = "the client closed the connection before the formation finished"


class OperationState(StrEnum):
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def done(self) -> bool:
        """A final state: nothing changes the operation any more."""
        return self in _DONE


_DONE = frozenset({OperationState.SUCCEEDED, OperationState.FAILED, OperationState.CANCELLED})


class OperationError(BaseModel):
    """Why an operation did not succeed, as the API will report it."""

    model_config = ConfigDict(frozen=True)

    code: str  # canonical google.rpc status name, e.g. "DEADLINE_EXCEEDED"
    message: str
    reason: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)


def client_closed_error() -> OperationError:
    """The error of an operation cancelled because its client went away."""
    return OperationError(code=CANCELLED, message=CLIENT_CLOSED_MESSAGE)


def new_operation_id() -> str:
    """A fresh operation id: "op_" and 32 lowercase hex digits (128 random bits)."""
    return f"op_{uuid.uuid4().hex}"


class FormationOperation(BaseModel):
    """One `memory:form` call in flight or recently finished.

    `request_json` and `receipt_json` are opaque to the store (one string field
    each: a Firestore document holds at most 1 MiB in all). The lease fields
    are set while a worker holds the operation (RUNNING) and cleared otherwise.
    """

    operation_id: str
    enterprise_id: str
    scope_id: str  # the agent workspace
    caller: str  # "user:<id>" or "api_key:<id>"
    state: OperationState = OperationState.QUEUED
    request_json: str
    formation_id: str | None = None  # the admitted formation's id in the usage ledger
    formation_key: str | None = None
    cancel_requested: bool = False
    attempts: int = Field(default=0, ge=0)
    lease_owner: str | None = None
    lease_expires_at: AwareDatetime | None = None
    receipt_json: str | None = None
    error: OperationError | None = None
    create_time: AwareDatetime
    update_time: AwareDatetime
    expire_time: AwareDatetime

    @field_validator("operation_id")
    @classmethod
    def _operation_id(cls, value: str) -> str:
        if not OPERATION_ID_PATTERN.fullmatch(value):
            raise ValueError('an operation id is "op_" and 32 lowercase hex digits')
        return value

    @field_validator("lease_expires_at", "create_time", "update_time", "expire_time")
    @classmethod
    def _in_utc(cls, value: datetime | None) -> datetime | None:
        return None if value is None else value.astimezone(UTC)

    @property
    def done(self) -> bool:
        return self.state.done


class ClaimOutcome(StrEnum):
    CLAIMED = "CLAIMED"  # this worker holds the lease: run the formation
    FINISHED = "FINISHED"  # already done, or cancelled before it ran: acknowledge, no model call
    BUSY = "BUSY"  # another worker holds a live lease: answer 503 so the queue retries later
    MISSING = "MISSING"  # no such operation (expired, erased, or another enterprise's)


class Claim(BaseModel):
    """What a claim found; `operation` is the operation as it now is (None when MISSING)."""

    outcome: ClaimOutcome
    operation: FormationOperation | None


# -- the transitions: pure, shared by every adapter -------------------------------


def after_claim(
    operation: FormationOperation | None,
    worker: str,
    now: datetime,
    lease: timedelta,
) -> Claim:
    """The claim of `worker` on `operation` (see jennah.ports.operations.OperationStore.claim)."""
    now = _utc(now)
    if operation is None:
        return Claim(outcome=ClaimOutcome.MISSING, operation=None)
    if operation.done:
        return Claim(outcome=ClaimOutcome.FINISHED, operation=operation)
    if operation.cancel_requested:
        return Claim(outcome=ClaimOutcome.FINISHED, operation=_ended(operation, now, None))
    if (
        operation.state is OperationState.RUNNING
        and operation.lease_owner != worker
        and operation.lease_expires_at is not None
        and operation.lease_expires_at > now
    ):
        return Claim(outcome=ClaimOutcome.BUSY, operation=operation)
    claimed = operation.model_copy(
        update={
            "state": OperationState.RUNNING,
            "attempts": operation.attempts + 1,
            "lease_owner": worker,
            "lease_expires_at": now + lease,
            "update_time": now,
        }
    )
    return Claim(outcome=ClaimOutcome.CLAIMED, operation=claimed)


def stranded(operation: FormationOperation, now: datetime) -> bool:
    """Not done and held by no live lease at `now` (see OperationStore.unfinished)."""
    now = _utc(now)
    if operation.state is OperationState.QUEUED:
        return True
    return (
        operation.state is OperationState.RUNNING
        and operation.lease_expires_at is not None
        and operation.lease_expires_at <= now
    )


def check_outcome(receipt_json: str | None, error: OperationError | None) -> None:
    """ValueError unless exactly one of a receipt and an error is given."""
    if (receipt_json is None) == (error is None):
        raise ValueError("finish an operation with exactly one of receipt_json and error")


def after_finish(
    operation: FormationOperation,
    now: datetime,
    receipt_json: str | None,
    error: OperationError | None,
) -> FormationOperation:
    """SUCCEEDED with the receipt, or FAILED with the error (CANCELLED when its code is
    CANCELLED); a done operation is unchanged. A receipt wins over a pending cancel:
    the formation did commit."""
    check_outcome(receipt_json, error)
    if operation.done:
        return operation
    if receipt_json is not None:
        return _cleared(operation, now).model_copy(
            update={"state": OperationState.SUCCEEDED, "receipt_json": receipt_json}
        )
    return _ended(operation, now, error)


def after_release(operation: FormationOperation, worker: str, now: datetime) -> FormationOperation:
    """Back to QUEUED, lease cleared, when `worker` holds it and it is not done; CANCELLED
    instead when a cancel was requested meanwhile (nobody waits for it any more)."""
    if operation.done or operation.lease_owner != worker:
        return operation
    if operation.cancel_requested:
        return _ended(operation, now, None)
    return _cleared(operation, now).model_copy(update={"state": OperationState.QUEUED})


def after_cancel(operation: FormationOperation, now: datetime) -> FormationOperation:
    """CANCELLED when QUEUED; cancel_requested when RUNNING; unchanged when done."""
    if operation.done:
        return operation
    if operation.state is OperationState.QUEUED:
        return _ended(operation, now, None)
    if operation.cancel_requested:
        return operation
    return operation.model_copy(update={"cancel_requested": True, "update_time": _utc(now)})


def _ended(
    operation: FormationOperation, now: datetime, error: OperationError | None
) -> FormationOperation:
    """Done with `error` (the client-closed error when None): FAILED, or CANCELLED
    when the error's code is CANCELLED."""
    error = error or client_closed_error()
    state = OperationState.CANCELLED if error.code == CANCELLED else OperationState.FAILED
    return _cleared(operation, now).model_copy(update={"state": state, "error": error})


def _cleared(operation: FormationOperation, now: datetime) -> FormationOperation:
    return operation.model_copy(
        update={"lease_owner": None, "lease_expires_at": None, "update_time": _utc(now)}
    )


def _utc(now: datetime) -> datetime:
    if now.tzinfo is None:
        raise ValueError("operation instants must be timezone-aware")
    return now.astimezone(UTC)


def operation_name(operation_id: str) -> str:
    """The operation's resource name, as the API answers it."""
    return OPERATION_NAME_PREFIX + operation_id


def error_of(exc: errors.JennahError) -> OperationError:
    """An error as an operation records it."""
    return OperationError(
        code=exc.status, message=exc.message, reason=exc.reason, metadata=dict(exc.metadata)
    )


def error_from(error: OperationError) -> errors.JennahError:
    """The error an operation's recorded error stands for (same status, reason, metadata)."""
    return errors.from_status(
        error.code, error.message, reason=error.reason, metadata=dict(error.metadata)
    )


def public_receipt(receipt: FormationReceipt) -> FormationReceipt:
    """The receipt without the operation's own formationKey (the caller sent none)."""
    key = receipt.formation_key
    if key is not None and key.startswith(OPERATION_KEY_PREFIX):
        return receipt.model_copy(update={"formation_key": None})
    return receipt
