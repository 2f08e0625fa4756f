"""The operation store port: formation operations, claimed and finished once.

`memory:form` is an operation. The `form` function creates one (QUEUED) and
enqueues a task; the `form-worker` (Cloud Tasks in production, an in-process
pool locally) claims it, runs the formation and finishes it; `form` polls it
and returns its receipt. Deliveries are at least once, even concurrently, and a
worker may crash: a claim takes a lease, so only one worker runs an operation
at a time, and one whose lease ran out may be claimed again. The first finish
wins. A client that disconnects cancels the operation; a running worker sees
`cancel_requested` before its commit and finishes it CANCELLED, writing nothing.

States and transitions are domain (`jennah.domain.operations`): each adapter
applies one transition to the stored operation in one atomic read-modify-write,
so the adapters share the rules and differ only in storage.

Control documents: Firestore in production (a TTL policy on `expireTime`
deletes expired operations), the SQLite file in the embedded default (`sweep`
deletes them). Deletion is lazy in both: an operation past its `expire_time`
and not yet deleted is still returned by `get`, and may still be claimed. The
creator sets `expire_time` well past the 30-minute formation ceiling.

Every method is confined to one enterprise, except `unfinished` and `sweep`:
another enterprise's operation is absent (None, MISSING). Instants passed in must be
timezone-aware; they are stored in UTC with microsecond precision.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol

from jennah.domain.operations import Claim, FormationOperation, OperationError


class OperationStore(Protocol):
    def create(self, operation: FormationOperation) -> None:
        """Store a new operation; AlreadyExists when its enterprise has that id."""
        ...

    def get(self, enterprise_id: str, operation_id: str) -> FormationOperation | None:
        """The operation; None when absent (another enterprise's included).

        An operation past its expire_time that is not yet deleted is returned.
        """
        ...

    def claim(
        self, enterprise_id: str, operation_id: str, worker: str, now: datetime, lease: timedelta
    ) -> Claim:
        """Take the operation for `worker` until now + lease, in one transaction (`after_claim`).

        MISSING when absent; FINISHED when done, or when a cancel was requested
        (it is then made CANCELLED); BUSY while another worker's lease is live;
        else CLAIMED: RUNNING, attempts + 1, leased to `worker`.
        """
        ...

    def finish(
        self,
        enterprise_id: str,
        operation_id: str,
        now: datetime,
        *,
        receipt_json: str | None = None,
        error: OperationError | None = None,
    ) -> FormationOperation | None:
        """End the operation with exactly one of a receipt or an error (`after_finish`).

        The first finish wins: a done operation is returned unchanged. One
        transaction; ValueError unless exactly one outcome is given; None when absent.
        """
        ...

    def release(self, enterprise_id: str, operation_id: str, worker: str, now: datetime) -> None:
        """Give a transient failure back to the queue (`after_release`): QUEUED, lease
        cleared, but only while `worker` holds the lease and it is not done (CANCELLED
        instead when a cancel was requested meanwhile)."""
        ...

    def cancel(
        self, enterprise_id: str, operation_id: str, now: datetime
    ) -> FormationOperation | None:
        """The client went away (`after_cancel`), in one transaction: a QUEUED operation
        is CANCELLED at once; a RUNNING one gets cancel_requested, for its worker to
        finish; a done one is unchanged. The operation as it now is; None when absent."""
        ...

    def list_newest(
        self, enterprise_id: str, limit: int, before: tuple[datetime, str] | None = None
    ) -> list[FormationOperation]:
        """Up to `limit` of the enterprise's operations, newest first: ordered by
        create_time, then operation id, both descending; only those before
        (create_time, operation id) `before` when given (a page). Expired operations
        not yet deleted are listed."""

    def unfinished(self, now: datetime, limit: int = 500) -> list[FormationOperation]:
        """Up to `limit` operations, in every enterprise and in no particular order, that
        are not done and that no worker holds at `now`: QUEUED ones, and RUNNING ones
        whose lease ended at or before `now` (`stranded`). What a crash left behind, for
        `services.formation.recovery` to deliver again."""
        ...

    def sweep(self, now: datetime, limit: int = 500) -> int:
        """Delete up to `limit` operations whose expire_time <= now, in every enterprise;
        how many were deleted. (In Firestore production a TTL policy deletes them too.)"""
        ...

    def delete_scope(self, enterprise_id: str, scope_id: str) -> int:
        """Erase the operations of a destroyed scope (they hold its turns); how many."""
        ...
