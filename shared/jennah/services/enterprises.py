"""Operator use cases on whole enterprises (`jnh enterprises`, straight in the stores).

Nothing here goes through the HTTP API: an enterprise's first credential, and
the credential that recovers an enterprise nobody can manage any more, cannot
come from a request that needs one. Each command is all or nothing: everything is
validated before the first write, and a write that fails part way is undone.
"""

from __future__ import annotations

from datetime import datetime

from jennah.domain import rules
from jennah.domain.access import Role, RoleBinding, User
from jennah.domain.billing import EnterpriseBilling, check_billing
from jennah.errors import NotFound
from jennah.ports.identity import IdentityStore
from jennah.ports.ledger import UsageLedger
from jennah.services import access
from jennah.services.access import hash_secret, new_secret, user_token
from jennah.services.admin import validate_user_principal


def create_enterprise(
    identity: IdentityStore,
    ledger: UsageLedger,
    root: str,
    billing: EnterpriseBilling,
    now: datetime,
) -> str:
    """Create `billing.enterprise_id` with its root user (user:<id>), the user's root
    binding and its billing settings; returns the root's development credential.

    The identity store creates the enterprise, user and binding in one transaction
    (SQLite) or batch (Firestore); the settings live in the usage ledger (Spanner in
    production), so when storing them fails the enterprise is deleted again and
    the error raised: a retry starts from nothing, never from "already exists"."""
    enterprise_id = billing.enterprise_id
    rules.validate_identifier(enterprise_id, "enterprise")
    validate_user_principal(root, "root")
    check_billing(billing)
    token = access.create_enterprise(identity, enterprise_id, root, now)
    try:
        ledger.put_billing(billing)
    except BaseException:
        identity.delete_enterprise(enterprise_id)
        raise
    return token


def recover_root(identity: IdentityStore, enterprise_id: str, principal: str, now: datetime) -> str:
    """Give `principal` a root binding in the enterprise and a new development
    credential, returned once (its earlier credential stops working; its other
    bindings stay). A user the enterprise does not have yet is created. Idempotent
    but for the credential: running it again issues another."""
    rules.validate_identifier(enterprise_id, "enterprise")
    validate_user_principal(principal, "root")
    if identity.get_enterprise(enterprise_id) is None:
        raise NotFound(
            f"enterprise {enterprise_id!r} was not found", metadata={"enterprise": enterprise_id}
        )
    known = identity.get_user(enterprise_id, principal)
    secret = new_secret()
    # the binding first: should the user's write fail, nothing the operator did not ask
    # for is left (a root binding alone manages nothing: `admin.managing_roots`), and
    # the user's earlier credential still works; running it again completes it
    identity.put_binding(RoleBinding(enterprise_id=enterprise_id, principal=principal,
                                     role=Role.ROOT))  # fmt: skip
    identity.put_user(
        User(
            enterprise_id=enterprise_id,
            principal=principal,
            token_hash=hash_secret(secret),
            created_at=known.created_at if known is not None else now,
        )
    )
    return user_token(enterprise_id, principal, secret)
