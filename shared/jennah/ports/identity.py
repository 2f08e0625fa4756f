"""The identity store port: enterprises, users, API keys and role bindings.

Control documents: Firestore in production, the SQLite file in the embedded
default; one contract suite runs against both. Every method except the
enterprise-free lookups that authentication needs (`find_users`, `get_api_key`)
is confined to one enterprise. A user is keyed by (enterprise, principal): the
same principal (in production an e-mail address) may be a user of several
enterprises, each its own, and no enterprise learns of another's.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from jennah.domain.access import ApiKey, Enterprise, Role, RoleBinding, User


class IdentityStore(Protocol):
    def create_enterprise(
        self,
        enterprise: Enterprise,
        users: Sequence[User] = (),
        bindings: Sequence[RoleBinding] = (),
    ) -> None:
        """Create it with its first users and role bindings (all of that enterprise), all
        or nothing; AlreadyExists, and nothing written, when the id is taken."""
        ...

    def delete_enterprise(self, enterprise_id: str) -> None:
        """Erase the enterprise with its users, API keys and role bindings (and their
        lookups): what undoes a creation whose other half failed. Idempotent."""
        ...

    def get_enterprise(self, enterprise_id: str) -> Enterprise | None: ...

    def put_user(self, user: User) -> None:
        """Create or replace the user of (enterprise, principal)."""
        ...

    def get_user(self, enterprise_id: str, principal: str) -> User | None:
        """The enterprise's user of that principal; None when it has none."""
        ...

    def find_users(self, principal: str) -> list[User]:
        """The users of that principal in every enterprise, ordered by enterprise id:
        authentication's lookup of a credential that does not name its enterprise."""
        ...

    def create_api_key(self, key: ApiKey) -> None:
        """Store a new key (key ids are unique across enterprises)."""
        ...

    def get_api_key(self, key_id: str) -> ApiKey | None:
        """Look a key up by its public id, in whatever enterprise it belongs to."""
        ...

    def list_api_keys(
        self, enterprise_id: str, after: str | None = None, limit: int | None = None
    ) -> list[ApiKey]:
        """The enterprise's keys, revoked ones included, ordered by key id: only those
        whose id is after `after` when given, at most `limit` when given (a page)."""
        ...

    def revoke_api_key(self, enterprise_id: str, key_id: str, at: datetime) -> ApiKey | None:
        """Set revoked_at (kept if already set); None when the enterprise has no such key."""
        ...

    def put_binding(self, binding: RoleBinding) -> None:
        """Create or replace the binding of (enterprise, principal, role)."""
        ...

    def delete_binding(self, enterprise_id: str, principal: str, role: Role) -> bool:
        """Remove it; False when there was none."""
        ...

    def list_bindings(
        self,
        enterprise_id: str,
        principal: str | None = None,
        after: tuple[str, str] | None = None,
        limit: int | None = None,
    ) -> list[RoleBinding]:
        """The enterprise's bindings (of one principal when given), ordered by principal,
        then role (its value): only those after (principal, role) `after` when given, at
        most `limit` when given (a page)."""
        ...
