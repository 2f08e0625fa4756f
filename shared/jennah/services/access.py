"""Authentication, authorization and scope resolution: every route goes through here.

Bearer credentials take three forms:
- an API key, `jk_<keyId>_<secret>`: the caller is `api_key:<keyId>`, never its creator
  (key ids are random and unique across enterprises, so the key names its enterprise);
- a development user credential, `ju_<principal>.<enterpriseId>_<secret>`, both
  base64url without padding (local servers). A principal is a user of each enterprise
  separately, so the credential names the enterprise it is for. The earlier form
  without the enterprise, `ju_<principal>_<secret>`, still works: the principal's
  users in every enterprise are looked up and the one whose credential hash matches
  the secret (256 random bits, so at most one) is the caller;
- a Google-signed ID token (production), verified by an `IdTokenVerifier`; the
  caller is `user:<email>` in the one enterprise it is a user of, or, when it is a
  user of several, in the one the request names (`enterprise`; refused otherwise).

A request naming a scope needs reach over it (checked first) and the permission.
Without reach it is answered exactly as though the scope did not exist.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from jennah.domain import rules
from jennah.domain.access import (
    API_KEY_PREFIX,
    MANAGEMENT_PERMISSIONS,
    MEMORY_CHANGE_PERMISSIONS,
    Caller,
    CallerKind,
    Enterprise,
    Grants,
    Permission,
    Role,
    RoleBinding,
    ScopeKind,
    User,
    grants_for,
    reaches,
)
from jennah.domain.models import ScopeRecord, ScopeRef
from jennah.errors import NotFound, PermissionDenied, Unauthenticated
from jennah.ports.id_token import IdTokenVerifier
from jennah.ports.identity import IdentityStore
from jennah.ports.store import MemoryStore

USER_TOKEN_PREFIX = "ju_"
_BEARER_HINT = "send 'Authorization: Bearer <token>'"


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _same(secret: str, stored_hash: str | None) -> bool:
    return stored_hash is not None and hmac.compare_digest(hash_secret(secret), stored_hash)


def api_key_token(key_id: str, secret: str) -> str:
    return f"{API_KEY_PREFIX}{key_id}_{secret}"


def user_token(enterprise_id: str, principal: str, secret: str) -> str:
    """The development credential of a user of one enterprise (see the module doc)."""
    return f"{USER_TOKEN_PREFIX}{_b64(principal)}.{_b64(enterprise_id)}_{secret}"


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode("utf-8")).decode("ascii").rstrip("=")


def _unb64(encoded: str) -> str:
    """The text; "" when `encoded` is not base64url of UTF-8."""
    try:
        padded = encoded + "=" * (-len(encoded) % 4)
        return base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError):
        return ""


def new_secret() -> str:
    # token_hex, not token_urlsafe: '_' separates the parts of a credential
    return secrets.token_hex(32)


@dataclass(frozen=True)
class OpenedScope:
    """A scope a request may act on; `registration` is set when its first write creates it."""

    ref: ScopeRef
    kind: ScopeKind
    registration: ScopeRecord | None


class Access:
    """The one place where credentials become callers and callers are checked."""

    def __init__(
        self,
        identity: IdentityStore,
        store: MemoryStore,
        now: Callable[[], datetime],
        verifier: IdTokenVerifier | None = None,
    ) -> None:
        self._identity = identity
        self._store = store
        self._now = now
        self._verifier = verifier

    # authentication

    def authenticate(self, authorization: str | None, enterprise: str | None = None) -> Caller:
        """The caller an Authorization header proves; Unauthenticated otherwise.

        `enterprise` names the enterprise a Google ID token acts in when its user
        belongs to several (credentials of the other forms name their own)."""
        if not authorization or not authorization.strip():
            raise Unauthenticated(f"the request has no credential; {_BEARER_HINT}")
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthenticated(
                f"the Authorization header is not a bearer credential; {_BEARER_HINT}"
            )
        if token.startswith(API_KEY_PREFIX):
            return self._api_key_caller(token)
        if token.startswith(USER_TOKEN_PREFIX):
            return self._user_caller(token)
        if self._verifier is not None:
            return self._id_token_caller(token, enterprise)
        raise Unauthenticated("the bearer credential is not valid")

    def _api_key_caller(self, token: str) -> Caller:
        key_id, _, secret = token[len(API_KEY_PREFIX) :].partition("_")
        key = self._identity.get_api_key(key_id) if key_id and secret else None
        if key is None or not _same(secret, key.secret_hash):
            raise Unauthenticated("the bearer credential is not valid")
        if key.revoked_at is not None:
            raise Unauthenticated(f"API key {key_id} has been revoked")
        if key.expire_time is not None and key.expire_time <= self._now():
            raise Unauthenticated(f"API key {key_id} expired at {key.expire_time.isoformat()}")
        return Caller(enterprise_id=key.enterprise_id, principal=key.principal)

    def _user_caller(self, token: str) -> Caller:
        names, _, secret = token[len(USER_TOKEN_PREFIX) :].rpartition("_")
        encoded_principal, dot, encoded_enterprise = names.partition(".")
        principal, enterprise = _unb64(encoded_principal), _unb64(encoded_enterprise)
        if not principal or not secret or (dot and not enterprise):
            raise Unauthenticated("the bearer credential is not valid")
        if dot:
            found = self._identity.get_user(enterprise, principal)
            candidates = [] if found is None else [found]
        else:  # the earlier form, without the enterprise
            candidates = self._identity.find_users(principal)
        matching = [user for user in candidates if _same(secret, user.token_hash)]
        if len(matching) != 1:
            raise Unauthenticated("the bearer credential is not valid")
        return Caller(enterprise_id=matching[0].enterprise_id, principal=principal)

    def _id_token_caller(self, token: str, enterprise: str | None) -> Caller:
        assert self._verifier is not None
        principal = f"user:{self._verifier.verify(token)}"
        users = self._identity.find_users(principal)
        if enterprise is not None:
            users = [user for user in users if user.enterprise_id == enterprise]
        if not users:
            where = "any enterprise" if enterprise is None else f"enterprise {enterprise!r}"
            raise Unauthenticated(f"{principal} is not a user of {where}")
        if len(users) > 1:
            raise Unauthenticated(
                f"{principal} is a user of several enterprises; name the one to act in with "
                "the X-Jennah-Enterprise header (jnh: JENNAH_ENTERPRISE)",
                reason="ENTERPRISE_AMBIGUOUS",
            )
        return Caller(enterprise_id=users[0].enterprise_id, principal=principal)

    # authorization

    def grants(self, caller: Caller) -> Grants:
        return grants_for(self._identity.list_bindings(caller.enterprise_id, caller.principal))

    def require(self, caller: Caller, permission: Permission) -> Grants:
        """The caller's grants, if they include `permission` usable by this kind of caller."""
        return self._require(caller, permission, None)

    def _require(self, caller: Caller, permission: Permission, grants: Grants | None) -> Grants:
        """`require`, with the caller's grants when already read in this request."""
        if permission in MEMORY_CHANGE_PERMISSIONS and caller.kind is CallerKind.API_KEY:
            raise PermissionDenied(
                f"{permission} changes memory by hand and can never be used with an API "
                "key: an agent reads memory, it does not rewrite it; call as a user",
                reason="MEMORY_CHANGE_WITH_API_KEY",
                metadata={"permission": str(permission)},
            )
        if permission in MANAGEMENT_PERMISSIONS and caller.kind is CallerKind.API_KEY:
            raise PermissionDenied(
                f"{permission} is a management permission and can never be used with an "
                "API key; call as a user",
                reason="MANAGEMENT_PERMISSION_WITH_API_KEY",
                metadata={"permission": str(permission)},
            )
        grants = self.grants(caller) if grants is None else grants
        if permission not in grants.permissions:
            raise PermissionDenied(
                f"{caller.principal} does not have the permission {permission}",
                reason="PERMISSION_MISSING",
                metadata={"permission": str(permission)},
            )
        return grants

    def open_scope(
        self,
        caller: Caller,
        scope_id: str,
        route_kind: ScopeKind | None,
        permission: Permission,
        *,
        create: bool,
    ) -> OpenedScope:
        """Resolve the scope a request names, or answer as though it did not exist.

        `route_kind` is AGENT on /v1/agents/… (agent workspaces only) and None on
        /v1/scopes/… (any scope; one written there first becomes a subject scope).
        With `create`, a scope that does not exist yet is registered by the write.
        """
        field = "agentInstanceId" if route_kind is ScopeKind.AGENT else "scopeId"
        rules.validate_identifier(scope_id, field)
        ref = ScopeRef(enterprise_id=caller.enterprise_id, scope_id=scope_id)
        registered = self._store.get_scope(ref)
        if registered is not None:
            kind = ScopeKind(registered.kind)
            if route_kind is not None and kind is not route_kind:
                raise self._not_found(route_kind, scope_id)
        else:
            kind = route_kind or ScopeKind.SUBJECT
        # reach first: without it, the caller learns nothing about the scope
        grants = self.grants(caller)
        if not reaches(grants, kind, scope_id):
            raise self._not_found(route_kind, scope_id)
        self._require(caller, permission, grants)
        if registered is not None:
            return OpenedScope(ref=ref, kind=kind, registration=None)
        if not create:
            raise self._not_found(route_kind, scope_id)
        record = ScopeRecord(scope=ref, kind=kind.value, created_by=caller.principal)
        return OpenedScope(ref=ref, kind=kind, registration=record)

    @staticmethod
    def _not_found(route_kind: ScopeKind | None, scope_id: str) -> NotFound:
        noun = "agent workspace" if route_kind is ScopeKind.AGENT else "scope"
        return NotFound(f"{noun} {scope_id!r} was not found")


def create_enterprise(
    identity: IdentityStore, enterprise_id: str, root_principal: str, now: datetime
) -> str:
    """Create an enterprise with its root user and the user's root binding, all or nothing
    (AlreadyExists, nothing written, when the id is taken); returns the root's
    development credential."""
    rules.validate_identifier(enterprise_id, "enterprise")
    secret = new_secret()
    identity.create_enterprise(
        Enterprise(enterprise_id=enterprise_id, created_at=now),
        users=[
            User(
                enterprise_id=enterprise_id,
                principal=root_principal,
                token_hash=hash_secret(secret),
                created_at=now,
            )
        ],
        bindings=[
            RoleBinding(enterprise_id=enterprise_id, principal=root_principal, role=Role.ROOT)
        ],
    )
    return user_token(enterprise_id, root_principal, secret)
