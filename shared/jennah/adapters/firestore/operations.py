"""The operation store of the production deployment: Firestore control documents.

One document per operation:

    enterprises/{enterpriseId}/operations/{operationId}

Its fields are the operation's (`documents.to_fields`: camelCase, timestamps as
Firestore timestamps). The collection id `operations` and the timestamp field
`expireTime` are what the TTL policy in `infra/` names (collection group
`operations`, field `expireTime`): Firestore deletes expired operations itself,
typically within a day of expiry, and `sweep` deletes them on demand with a
collection-group query on `expireTime`. `unfinished` runs two collection-group
queries, on `state` and on (`state`, `leaseExpiresAt`), whose indexes `infra/`
declares too.

Each change is one atomic read-modify-write of the document: read it, apply the
transition (`jennah.domain.operations`), and update it on the condition that it
has not changed since the read (its update time). Of concurrent writers the
first wins; the others read again and decide anew (a second claimer then finds
the lease taken). Optimistic, like the identity adapter, rather than a
server-side transaction, so every call keeps its own timeout and no lock is
held between the read and the write.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from google.api_core import exceptions as google_errors
from google.cloud.firestore_v1.base_query import FieldFilter
from google.cloud.firestore_v1.field_path import FieldPath
from google.cloud.firestore_v1.query import Query

from jennah.adapters.firestore.calls import DEFAULT_TIMEOUT_SECONDS, CallBounds
from jennah.adapters.firestore.documents import document_id, from_fields, to_fields
from jennah.domain.operations import (
    Claim,
    FormationOperation,
    OperationError,
    OperationState,
    after_cancel,
    after_claim,
    after_finish,
    after_release,
    check_outcome,
)
from jennah.errors import Aborted, AlreadyExists

ENTERPRISES = "enterprises"
OPERATIONS = "operations"  # the collection group of the TTL policy
EXPIRE_TIME = "expireTime"  # the TTL policy's field
# What `unfinished` queries across the collection group (the indexes in infra/firestore.tf).
STATE = "state"
LEASE_EXPIRES_AT = "leaseExpiresAt"

# What a transition may change; the rest is fixed when the operation is created.
_CHANGING = (
    "state",
    "cancelRequested",
    "attempts",
    "leaseOwner",
    "leaseExpiresAt",
    "receiptJson",
    "error",
    "updateTime",
)
# Rounds of read-then-conditional-write before a contended change gives up.
_CONDITIONAL_WRITE_ROUNDS = 5
_BATCH_WRITES = 500  # Firestore's limit on the writes of one batch

_Result = TypeVar("_Result")
# A transition: from the stored operation (None when absent), the result to
# return and the operation to store (None or unchanged: nothing to write).
_Transition = Callable[[FormationOperation | None], tuple[_Result, FormationOperation | None]]


class FirestoreOperationStore:
    """OperationStore on a google.cloud.firestore.Client (see the module docstring).

    `timeout_seconds` bounds each Firestore call (idempotent ones also retry
    UNAVAILABLE within it); errors surface as `jennah.errors`.
    """

    def __init__(self, client: Any, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self._client = client
        self._calls = CallBounds(timeout_seconds)

    def create(self, operation: FormationOperation) -> None:
        ref = self._document(operation.enterprise_id, operation.operation_id)
        with self._calls.mapped("create operation"):
            try:
                ref.create(to_fields(operation), **self._calls.once)
            except google_errors.AlreadyExists as exc:
                raise AlreadyExists(
                    f"operation {operation.operation_id!r} already exists",
                    field="operationId",
                ) from exc

    def get(self, enterprise_id: str, operation_id: str) -> FormationOperation | None:
        return self._read(self._document(enterprise_id, operation_id))[0]

    def claim(
        self, enterprise_id: str, operation_id: str, worker: str, now: datetime, lease: timedelta
    ) -> Claim:
        def transition(operation: FormationOperation | None) -> tuple[Claim, Any]:
            claim = after_claim(operation, worker, now, lease)
            return claim, claim.operation

        return self._change(enterprise_id, operation_id, "claim operation", transition)

    def finish(
        self,
        enterprise_id: str,
        operation_id: str,
        now: datetime,
        *,
        receipt_json: str | None = None,
        error: OperationError | None = None,
    ) -> FormationOperation | None:
        check_outcome(receipt_json, error)
        return self._change_present(
            enterprise_id,
            operation_id,
            "finish operation",
            lambda operation: after_finish(operation, now, receipt_json, error),
        )

    def release(self, enterprise_id: str, operation_id: str, worker: str, now: datetime) -> None:
        self._change_present(
            enterprise_id,
            operation_id,
            "release operation",
            lambda operation: after_release(operation, worker, now),
        )

    def cancel(
        self, enterprise_id: str, operation_id: str, now: datetime
    ) -> FormationOperation | None:
        return self._change_present(
            enterprise_id,
            operation_id,
            "cancel operation",
            lambda operation: after_cancel(operation, now),
        )

    def list_newest(
        self, enterprise_id: str, limit: int, before: tuple[datetime, str] | None = None
    ) -> list[FormationOperation]:
        """Ordered by `createTime`, then the document id (the operation id), both
        descending: the automatic single-field index on createTime serves it."""
        query = (
            self._enterprise(enterprise_id)
            .collection(OPERATIONS)
            .order_by("createTime", direction=Query.DESCENDING)
            .order_by(FieldPath.document_id(), direction=Query.DESCENDING)
        )
        if before is not None:
            query = query.start_after(
                {"createTime": before[0], "__name__": document_id(before[1], "operationId")}
            )
        with self._calls.mapped("list operations"):
            found = query.limit(limit).get(**self._calls.idempotent)
        return [from_fields(FormationOperation, snapshot.to_dict()) for snapshot in found]

    def unfinished(self, now: datetime, limit: int = 500) -> list[FormationOperation]:
        group = self._client.collection_group(OPERATIONS)
        queued = group.where(filter=FieldFilter(STATE, "==", OperationState.QUEUED.value))
        expired = group.where(filter=FieldFilter(STATE, "==", OperationState.RUNNING.value)).where(
            filter=FieldFilter(LEASE_EXPIRES_AT, "<=", now)
        )
        found: list[FormationOperation] = []
        with self._calls.mapped("list unfinished operations"):
            for query in (queued, expired):
                if len(found) < limit:
                    snapshots = query.limit(limit - len(found)).get(**self._calls.idempotent)
                    found += [from_fields(FormationOperation, s.to_dict()) for s in snapshots]
        return found

    def sweep(self, now: datetime, limit: int = 500) -> int:
        query = (
            self._client.collection_group(OPERATIONS)
            .where(filter=FieldFilter(EXPIRE_TIME, "<=", now))
            .limit(limit)
        )
        return self._delete_all(query, "sweep expired operations")

    def delete_scope(self, enterprise_id: str, scope_id: str) -> int:
        operations = self._enterprise(enterprise_id).collection(OPERATIONS)
        query = operations.where(filter=FieldFilter("scopeId", "==", scope_id)).limit(_BATCH_WRITES)
        deleted = 0
        while count := self._delete_all(query, "erase scope operations"):
            deleted += count
            if count < _BATCH_WRITES:
                break
        return deleted

    # documents

    def _change_present(
        self,
        enterprise_id: str,
        operation_id: str,
        what: str,
        step: Callable[[FormationOperation], FormationOperation],
    ) -> FormationOperation | None:
        """Apply `step` to the operation; None (nothing written) when it is absent."""

        def transition(operation: FormationOperation | None) -> tuple[Any, Any]:
            after = None if operation is None else step(operation)
            return after, after

        result: FormationOperation | None = self._change(
            enterprise_id, operation_id, what, transition
        )
        return result

    def _change(
        self,
        enterprise_id: str,
        operation_id: str,
        what: str,
        transition: _Transition[_Result],
    ) -> _Result:
        """One read-modify-write of the operation, conditional on its update time."""
        ref = self._document(enterprise_id, operation_id)
        for _ in range(_CONDITIONAL_WRITE_ROUNDS):
            before, read_at = self._read(ref)
            result, after = transition(before)
            if after is None or after == before:
                return result
            fields = to_fields(after)
            with self._calls.mapped(what):
                try:
                    ref.update(
                        {name: fields[name] for name in _CHANGING},
                        option=self._client.write_option(last_update_time=read_at),
                        **self._calls.idempotent,
                    )
                except (google_errors.FailedPrecondition, google_errors.NotFound):
                    # Changed or deleted since the read: decide again. So does a retried
                    # update whose first attempt landed (a claim then counts one more attempt).
                    continue
            return result
        raise Aborted(
            f"Firestore {what} kept conflicting with concurrent writes; retry",
            reason="WRITE_CONFLICT",
        )

    def _read(self, ref: Any) -> tuple[FormationOperation | None, Any]:
        """The operation and the update time it was read at; (None, None) when absent."""
        with self._calls.mapped("read operation"):
            snapshot = ref.get(**self._calls.idempotent)
        if not snapshot.exists:
            return None, None
        return from_fields(FormationOperation, snapshot.to_dict()), snapshot.update_time

    def _delete_all(self, query: Any, what: str) -> int:
        """Delete what `query` finds (names only are read); how many documents."""
        with self._calls.mapped(what):
            found = query.select([FieldPath.document_id()]).get(**self._calls.idempotent)
            for start in range(0, len(found), _BATCH_WRITES):
                batch = self._client.batch()
                for snapshot in found[start : start + _BATCH_WRITES]:
                    batch.delete(snapshot.reference)
                batch.commit(**self._calls.idempotent)  # deleting twice is harmless
        return len(found)

    def _enterprise(self, enterprise_id: str) -> Any:
        return self._client.collection(ENTERPRISES).document(
            document_id(enterprise_id, "enterprise")
        )

    def _document(self, enterprise_id: str, operation_id: str) -> Any:
        return (
            self._enterprise(enterprise_id)
            .collection(OPERATIONS)
            .document(document_id(operation_id, "operationId"))
        )
