"""The embedded default's own enterprise: `jnh serve` makes sure it exists, with a root
user whose development credential works, on the Enterprise plan.

The credential itself lives in a file the server writes (`jennah.auth`); this module
decides what that file must hold, given what it holds now.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from jennah.domain.access import LOCAL_ENTERPRISE_ID, ROOT_PRINCIPAL, User
from jennah.domain.billing import EnterpriseBilling, Plan
from jennah.errors import AlreadyExists, JennahError
from jennah.ports.identity import IdentityStore
from jennah.ports.ledger import UsageLedger
from jennah.services.access import Access, hash_secret, new_secret, user_token
from jennah.services.enterprises import create_enterprise

# The local enterprise is on the Enterprise plan (input cap 100,000 tokens, 25,000
# formation units a month): the embedded default is for development.
LOCAL_BILLING = EnterpriseBilling(enterprise_id=LOCAL_ENTERPRISE_ID, plan=Plan.ENTERPRISE)


@dataclass(frozen=True)
class LocalRoot:
    """The local root's credential, and what `ensure_local_root` had to do to have it."""

    token: str
    created_enterprise: bool = False
    rotated: bool = False

    @property
    def changed(self) -> bool:
        """The credential is new: the file that holds it must be written."""
        return self.created_enterprise or self.rotated


def ensure_local_root(
    identity: IdentityStore,
    ledger: UsageLedger,
    access: Access,
    now: datetime,
    known_token: str | None,
) -> LocalRoot:
    """A working root credential of the local enterprise: `known_token` (what the
    credential file holds, if anything) when it still authenticates as the local root;
    else the first start creates the enterprise (on LOCAL_BILLING's plan) and its root
    user, and later starts give the root user a new credential."""
    enterprise = identity.get_enterprise(LOCAL_ENTERPRISE_ID)
    if known_token is not None and enterprise is not None and _works(access, known_token):
        return LocalRoot(known_token)
    if enterprise is not None:
        return LocalRoot(_rotate_root(identity, now), rotated=True)
    try:
        token = create_enterprise(identity, ledger, ROOT_PRINCIPAL, LOCAL_BILLING, now)
    except AlreadyExists:  # another process created it first: take a credential of our own
        return LocalRoot(_rotate_root(identity, now), rotated=True)
    return LocalRoot(token, created_enterprise=True)


def _works(access: Access, token: str) -> bool:
    try:
        caller = access.authenticate(f"Bearer {token}")
    except JennahError:
        return False
    return (caller.enterprise_id, caller.principal) == (LOCAL_ENTERPRISE_ID, ROOT_PRINCIPAL)


def _rotate_root(identity: IdentityStore, now: datetime) -> str:
    """A new development credential for the local root user (its bindings stay as they are)."""
    secret = new_secret()
    known = identity.get_user(LOCAL_ENTERPRISE_ID, ROOT_PRINCIPAL)
    identity.put_user(
        User(
            enterprise_id=LOCAL_ENTERPRISE_ID,
            principal=ROOT_PRINCIPAL,
            token_hash=hash_secret(secret),
            created_at=known.created_at if known is not None else now,
        )
    )
    return user_token(LOCAL_ENTERPRISE_ID, ROOT_PRINCIPAL, secret)
