"""Operator use cases on whole enterprises (`jnh enterprises`, straight in the stores).

Nothing here goes through the HTTP API: an enterprise's first credential, and
the credential that recovers an enterprise nobody can manage any more, cannot
come from a request that needs one.
"""

from __future__ import annotations

from datetime import datetime

from jennah.domain import rules
from jennah.domain.access import Role, RoleBinding, User
from jennah.errors import NotFound
from jennah.ports.identity import IdentityStore
from jennah.services.access import hash_secret, new_secret, user_token
from jennah.services.admin import validate_user_principal


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
    identity.put_user(
        User(
            enterprise_id=enterprise_id,
            principal=principal,
            token_hash=hash_secret(secret),
            created_at=known.created_at if known is not None else now,
        )
    )
    identity.put_binding(RoleBinding(enterprise_id=enterprise_id, principal=principal,
                                     role=Role.ROOT))  # fmt: skip
    return user_token(enterprise_id, principal, secret)
