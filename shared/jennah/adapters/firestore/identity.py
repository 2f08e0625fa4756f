"""The identity store of the production deployment: Firestore control documents.

Documents, per enterprise:

    enterprises/{enterpriseId}
    enterprises/{enterpriseId}/users/{principal}
    enterprises/{enterpriseId}/apiKeys/{keyId}
    enterprises/{enterpriseId}/roleBindings/{principal}__{role}

and two enterprise-free lookups, so authentication resolves a credential id
without knowing its enterprise, each written in the same batch as the document
it indexes:

    userIndex/{principal}/memberships/{enterpriseId} -> {enterpriseId}
    apiKeyIndex/{keyId}                              -> {enterpriseId}

A principal is a user of each enterprise separately (in production the same
e-mail address may be a user of several), so its index lists every enterprise
it is a user of and claims nothing. Earlier builds wrote `userIndex/{principal}`
-> {enterpriseId}, one enterprise per principal; `find_users` still reads that
document, so users written then are found without a migration.

Ids are encoded by `documents.document_id`. Every other read and write goes
through one enterprise's subcollections, so nothing can reach across tenants.
No transactions: writes are batches with preconditions (create, exists,
last-update time), so each call has its own timeout.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from google.api_core import exceptions as google_errors
from google.cloud.firestore_v1.base_query import FieldFilter

from jennah.adapters.firestore.calls import DEFAULT_TIMEOUT_SECONDS, CallBounds
from jennah.adapters.firestore.documents import document_id, from_fields, to_fields
from jennah.domain.access import ApiKey, Enterprise, Role, RoleBinding, User
from jennah.errors import Aborted, AlreadyExists

ENTERPRISES = "enterprises"
USERS = "users"
API_KEYS = "apiKeys"
ROLE_BINDINGS = "roleBindings"
USER_INDEX = "userIndex"
MEMBERSHIPS = "memberships"  # under userIndex/{principal}: one document per enterprise
API_KEY_INDEX = "apiKeyIndex"

# Rounds of read-then-conditional-write before a contended write gives up.
_CONDITIONAL_WRITE_ROUNDS = 5
_BATCH_WRITES = 500  # Firestore's limit on the writes of one batch


class FirestoreIdentityStore:
    """IdentityStore on a google.cloud.firestore.Client (see the module docstring).

    `timeout_seconds` bounds each Firestore call (reads also retry UNAVAILABLE
    within it); errors surface as `jennah.errors`.
    """

    def __init__(self, client: Any, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self._client = client
        self._calls = CallBounds(timeout_seconds)

    # enterprises

    def create_enterprise(
        self,
        enterprise: Enterprise,
        users: Sequence[User] = (),
        bindings: Sequence[RoleBinding] = (),
    ) -> None:
        """One batch: the enterprise document (created: the precondition that fails the
        whole batch when the id is taken), its users with their lookups, its bindings."""
        batch = self._client.batch()
        batch.create(self._enterprise(enterprise.enterprise_id), to_fields(enterprise))
        for user in users:
            self._write_user(batch, user)
        for binding in bindings:
            batch.set(
                self._binding(binding.enterprise_id, binding.principal, binding.role),
                to_fields(binding),
            )
        with self._calls.mapped("create enterprise"):
            try:
                batch.commit(**self._calls.once)
            except google_errors.AlreadyExists as exc:
                raise AlreadyExists(
                    f"enterprise {enterprise.enterprise_id!r} already exists", field="enterprise"
                ) from exc

    def delete_enterprise(self, enterprise_id: str) -> None:
        """Batches of deletes: the enterprise's users (and their lookups), keys (and
        theirs) and bindings, then the enterprise document last, so a failure part way
        leaves it to delete again."""
        enterprise = self._enterprise(enterprise_id)
        refs: list[Any] = []
        for fields in self._query(enterprise.collection(USERS), "list users"):
            principal = str(fields["principal"])
            refs.append(self._user(enterprise_id, principal))
            refs.append(self._membership(principal, enterprise_id))
        for fields in self._query(enterprise.collection(API_KEYS), "list API keys"):
            key_id = str(fields["keyId"])
            refs.append(self._api_key(enterprise_id, key_id))
            refs.append(self._index(API_KEY_INDEX, key_id, "keyId"))
        for fields in self._query(enterprise.collection(ROLE_BINDINGS), "list role bindings"):
            binding = from_fields(RoleBinding, fields)
            refs.append(self._binding(enterprise_id, binding.principal, binding.role))
        refs.append(enterprise)
        with self._calls.mapped("delete enterprise"):
            for start in range(0, len(refs), _BATCH_WRITES):
                batch = self._client.batch()
                for ref in refs[start : start + _BATCH_WRITES]:
                    batch.delete(ref)
                batch.commit(**self._calls.idempotent)  # deleting twice is harmless

    def get_enterprise(self, enterprise_id: str) -> Enterprise | None:
        fields = self._read(self._enterprise(enterprise_id), "read enterprise")
        return None if fields is None else from_fields(Enterprise, fields)

    # users

    def put_user(self, user: User) -> None:
        """Create or replace the user and list its enterprise in its principal's index,
        in one batch."""
        batch = self._client.batch()
        self._write_user(batch, user)
        with self._calls.mapped("write user"):
            batch.commit(**self._calls.idempotent)

    def get_user(self, enterprise_id: str, principal: str) -> User | None:
        fields = self._read(self._user(enterprise_id, principal), "read user")
        return None if fields is None else from_fields(User, fields)

    def find_users(self, principal: str) -> list[User]:
        index = self._user_index(principal)
        listed = self._query(index.collection(MEMBERSHIPS), "read user index")
        enterprises = {str(fields["enterpriseId"]) for fields in listed}
        earlier = self._owner(index, "read user index")  # the one-enterprise index
        if earlier is not None:
            enterprises.add(earlier)
        users = (self.get_user(enterprise_id, principal) for enterprise_id in sorted(enterprises))
        return [user for user in users if user is not None]

    # API keys

    def create_api_key(self, key: ApiKey) -> None:
        """Store the key and its lookup in one batch; AlreadyExists when the id is taken."""
        batch = self._client.batch()
        batch.create(self._api_key(key.enterprise_id, key.key_id), to_fields(key))
        batch.create(
            self._index(API_KEY_INDEX, key.key_id, "keyId"), {"enterpriseId": key.enterprise_id}
        )
        with self._calls.mapped("create API key"):
            try:
                batch.commit(**self._calls.once)
            except google_errors.AlreadyExists as exc:
                raise AlreadyExists(f"API key id {key.key_id!r} is taken", field="keyId") from exc

    def get_api_key(self, key_id: str) -> ApiKey | None:
        owner = self._owner(self._index(API_KEY_INDEX, key_id, "keyId"), "read API key index")
        if owner is None:
            return None
        fields = self._read(self._api_key(owner, key_id), "read API key")
        return None if fields is None else from_fields(ApiKey, fields)

    def list_api_keys(
        self, enterprise_id: str, after: str | None = None, limit: int | None = None
    ) -> list[ApiKey]:
        query = self._enterprise(enterprise_id).collection(API_KEYS).order_by("keyId")
        if after is not None:
            query = query.start_after({"keyId": after})
        if limit is not None:
            query = query.limit(limit)
        return [from_fields(ApiKey, fields) for fields in self._query(query, "list API keys")]

    def revoke_api_key(self, enterprise_id: str, key_id: str, at: datetime) -> ApiKey | None:
        """Set revoked_at (kept if already set); None when the enterprise has no such key.

        A conditional update on the read's update time: a concurrent revoke
        makes it fail, and the next round reads the revocation that won.
        """
        ref = self._api_key(enterprise_id, key_id)
        option = self._client.write_option
        for _ in range(_CONDITIONAL_WRITE_ROUNDS):
            with self._calls.mapped("read API key"):
                snapshot = ref.get(**self._calls.idempotent)
            if not snapshot.exists:
                return None
            key = from_fields(ApiKey, snapshot.to_dict())
            if key.revoked_at is not None:
                return key
            with self._calls.mapped("revoke API key"):
                try:
                    ref.update(
                        {"revokedAt": at},
                        option=option(last_update_time=snapshot.update_time),
                        **self._calls.idempotent,
                    )
                except google_errors.FailedPrecondition:
                    continue  # changed since the read
            return key.model_copy(update={"revoked_at": at})
        raise _contended("revoke API key")

    # role bindings

    def put_binding(self, binding: RoleBinding) -> None:
        ref = self._binding(binding.enterprise_id, binding.principal, binding.role)
        with self._calls.mapped("write role binding"):
            ref.set(to_fields(binding), **self._calls.idempotent)

    def delete_binding(self, enterprise_id: str, principal: str, role: Role) -> bool:
        ref = self._binding(enterprise_id, principal, role)
        with self._calls.mapped("delete role binding"):
            try:
                ref.delete(option=self._client.write_option(exists=True), **self._calls.once)
            except google_errors.NotFound:
                return False
        return True

    def list_bindings(
        self,
        enterprise_id: str,
        principal: str | None = None,
        after: tuple[str, str] | None = None,
        limit: int | None = None,
    ) -> list[RoleBinding]:
        """Ordered by the `principal` and `role` fields (the composite index of
        infra/firestore.tf), which Firestore compares as UTF-8 bytes, as Python and
        SQLite compare these strings."""
        query = self._enterprise(enterprise_id).collection(ROLE_BINDINGS)
        if principal is not None:
            query = query.where(filter=FieldFilter("principal", "==", principal))
        query = query.order_by("principal").order_by("role")
        if after is not None:
            query = query.start_after({"principal": after[0], "role": after[1]})
        if limit is not None:
            query = query.limit(limit)
        return [
            from_fields(RoleBinding, fields) for fields in self._query(query, "list role bindings")
        ]

    # documents

    def _enterprise(self, enterprise_id: str) -> Any:
        return self._client.collection(ENTERPRISES).document(
            document_id(enterprise_id, "enterprise")
        )

    def _user(self, enterprise_id: str, principal: str) -> Any:
        return (
            self._enterprise(enterprise_id)
            .collection(USERS)
            .document(document_id(principal, "principal"))
        )

    def _user_index(self, principal: str) -> Any:
        return self._index(USER_INDEX, principal, "principal")

    def _membership(self, principal: str, enterprise_id: str) -> Any:
        return (
            self._user_index(principal)
            .collection(MEMBERSHIPS)
            .document(document_id(enterprise_id, "enterprise"))
        )

    def _write_user(self, batch: Any, user: User) -> None:
        """The user's document and its entry in its principal's index."""
        batch.set(self._user(user.enterprise_id, user.principal), to_fields(user))
        batch.set(
            self._membership(user.principal, user.enterprise_id),
            {"enterpriseId": user.enterprise_id},
        )

    def _api_key(self, enterprise_id: str, key_id: str) -> Any:
        return (
            self._enterprise(enterprise_id)
            .collection(API_KEYS)
            .document(document_id(key_id, "keyId"))
        )

    def _binding(self, enterprise_id: str, principal: str, role: Role) -> Any:
        # roles have no '_', so the id stays one-to-one whatever the principal ends with
        name = f"{document_id(principal, 'principal')}__{role.value}"
        return self._enterprise(enterprise_id).collection(ROLE_BINDINGS).document(name)

    def _index(self, collection: str, value: str, field: str) -> Any:
        return self._client.collection(collection).document(document_id(value, field))

    def _owner(self, index: Any, what: str) -> str | None:
        """The enterprise an index document points at; None when there is none."""
        fields = self._read(index, what)
        return None if fields is None else str(fields["enterpriseId"])

    def _read(self, ref: Any, what: str) -> dict[str, Any] | None:
        with self._calls.mapped(what):
            snapshot = ref.get(**self._calls.idempotent)
        return snapshot.to_dict() if snapshot.exists else None

    def _query(self, query: Any, what: str) -> list[dict[str, Any]]:
        with self._calls.mapped(what):
            return [snapshot.to_dict() for snapshot in query.get(**self._calls.idempotent)]


def _contended(what: str) -> Aborted:
    return Aborted(
        f"Firestore {what} kept conflicting with concurrent writes; resend",
        reason="WRITE_CONFLICT",
    )
