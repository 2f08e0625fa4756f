"""Administration: API keys, role bindings, users, scopes, and the caller's own view.

The entrypoint has already authenticated the caller and checked the route's
permission (`Access.require`, or `Access.open_scope` on a route naming a
scope). These use cases add the rules that depend on the request: only a root
grants or revokes `root`; nobody grants reach wider than its own (each selector of a
new binding or key is covered by one of the granter's: `access.selector_covers`);
principals, roles and selectors are well formed
(each error names its field); every read and write stays inside the caller's
enterprise: a principal is a user of each enterprise separately, so another
enterprise's user of the same name is neither seen nor touched.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, Field

from jennah.domain import claims, rules
from jennah.domain.access import (
    API_KEY_PRINCIPAL,
    KEY_ID_PATTERN,
    MAX_DISPLAY_NAME,
    MAX_SELECTORS,
    USER_ONLY_PERMISSIONS,
    USER_PRINCIPAL,
    ApiKey,
    Caller,
    CallerKind,
    Grants,
    Permission,
    Role,
    RoleBinding,
    ScopeKind,
    User,
    grants_for,
    reaches,
    uncovered,
    validate_selector,
)
from jennah.domain.models import CommitPlan, ScopeRecord, ScopeRef
from jennah.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
)
from jennah.ports.identity import IdentityStore
from jennah.ports.operations import OperationStore
from jennah.ports.store import MemoryStore
from jennah.ports.vocabulary import VocabularyStore
from jennah.services.access import (
    Access,
    OpenedScope,
    api_key_token,
    hash_secret,
    new_secret,
    user_token,
)
from jennah.services.paging import Key, Page, Paging, fill, page_request

KeyState = Literal["ACTIVE", "REVOKED", "EXPIRED"]


class KeySpec(BaseModel):
    """What apiKeys.create asks for."""

    display_name: str = ""
    role: str
    agent_selectors: list[str] = Field(default_factory=list)
    subject_selectors: list[str] = Field(default_factory=list)
    expire_time: datetime | None = None
    ttl: timedelta | None = None


class GrantSpec(BaseModel):
    """What roleBindings.grant asks for."""

    principal: str
    role: str
    agent_selectors: list[str] = Field(default_factory=list)
    subject_selectors: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class KeyView:
    """A key with the bindings that give it its roles and reach."""

    key: ApiKey
    bindings: tuple[RoleBinding, ...]
    state: KeyState


@dataclass(frozen=True)
class CreatedKey:
    view: KeyView
    key_string: str  # shown once; only its hash is stored


@dataclass(frozen=True)
class CallerView:
    caller: Caller
    roles: tuple[Role, ...]
    usable: Grants  # management-class permissions removed for an API key


# validation


def validate_principal(principal: str, field: str) -> str:
    """`user:<id>` or `api_key:<keyId>`."""
    if USER_PRINCIPAL.match(principal) or API_KEY_PRINCIPAL.match(principal):
        return principal
    raise InvalidArgument(
        f"{field} {principal[:80]!r} must be user:<id> (letters, digits and '._%+@-') "
        "or api_key:<keyId>",
        field=field,
    )


def validate_user_principal(principal: str, field: str) -> str:
    """`user:<id>`."""
    if not USER_PRINCIPAL.match(principal):
        raise InvalidArgument(
            f"{field} {principal[:80]!r} must be user:<id> (letters, digits and '._%+@-')",
            field=field,
        )
    return principal


def parse_role(name: str, field: str = "role") -> Role:
    try:
        return Role(name)
    except ValueError:
        choices = ", ".join(r.value for r in Role)
        raise InvalidArgument(
            f"{field} {name[:80]!r} is not a role; choose one of {choices}", field=field
        ) from None


def validate_selectors(selectors: list[str], field: str) -> list[str]:
    if len(selectors) > MAX_SELECTORS:
        raise InvalidArgument(
            f"{field} has {len(selectors)} selectors; at most {MAX_SELECTORS} are allowed",
            field=field,
        )
    for i, selector in enumerate(selectors):
        validate_selector(selector, f"{field}[{i}]")
    return list(dict.fromkeys(selectors))


def validate_key_id(key_id: str, field: str = "keyId") -> str:
    if not KEY_ID_PATTERN.match(key_id):
        raise InvalidArgument(
            f"{field} {key_id[:80]!r} must be 1-64 letters, digits or '-'", field=field
        )
    return key_id


def _expiry(spec: KeySpec, now: datetime) -> datetime | None:
    if spec.expire_time is not None and spec.ttl is not None:
        raise InvalidArgument("give expireTime or ttl, not both", field="ttl")
    if spec.ttl is not None:
        if spec.ttl <= timedelta(0):
            raise InvalidArgument("ttl must be positive, such as 86400s", field="ttl")
        return now + spec.ttl
    if spec.expire_time is not None and spec.expire_time <= now:
        raise InvalidArgument(
            f"expireTime {spec.expire_time.isoformat()} is not in the future", field="expireTime"
        )
    return spec.expire_time


def _require_root_for(identity: IdentityStore, caller: Caller, role: Role) -> None:
    if role is Role.ROOT and not is_root(identity, caller):
        raise PermissionDenied(
            "only a root may grant or revoke the root role",
            reason="ROOT_ONLY",
            metadata={"role": Role.ROOT.value},
        )


def _require_covered(
    identity: IdentityStore, caller: Caller, agents: list[str], subjects: list[str]
) -> None:
    """Nobody grants reach wider than its own (a root reaches everything): each selector
    granted must be covered by one of the caller's own (`access.selector_covers`)."""
    own = grants_for(identity.list_bindings(caller.enterprise_id, caller.principal))
    for field, own_selectors, granted in (
        ("agentSelectors", own.agent_selectors, agents),
        ("subjectSelectors", own.subject_selectors, subjects),
    ):
        wider = uncovered(own_selectors, granted)
        if wider:
            index = granted.index(wider[0])
            raise PermissionDenied(
                f"{field}[{index}] {wider[0]!r} reaches scopes that {caller.principal} does "
                "not reach; grant only selectors your own selectors cover",
                reason="SELECTOR_NOT_COVERED",
                metadata={"selector": wider[0], "field": f"{field}[{index}]"},
            )


def is_root(identity: IdentityStore, caller: Caller) -> bool:
    bindings = identity.list_bindings(caller.enterprise_id, caller.principal)
    return any(b.role is Role.ROOT for b in bindings)


# API keys


def create_api_key(
    identity: IdentityStore, caller: Caller, spec: KeySpec, now: datetime
) -> CreatedKey:
    """A new key and its role binding (principal api_key:<keyId>); the key acts as itself."""
    if len(spec.display_name) > MAX_DISPLAY_NAME:
        raise InvalidArgument(
            f"displayName has {len(spec.display_name)} characters; at most "
            f"{MAX_DISPLAY_NAME} are allowed",
            field="displayName",
        )
    role = parse_role(spec.role)
    binding_spec = (
        validate_selectors(spec.agent_selectors, "agentSelectors"),
        validate_selectors(spec.subject_selectors, "subjectSelectors"),
    )
    expire_time = _expiry(spec, now)
    _require_root_for(identity, caller, role)
    _require_covered(identity, caller, *binding_spec)
    key_id = _new_key_id(identity)
    secret = new_secret()
    key = ApiKey(
        enterprise_id=caller.enterprise_id,
        key_id=key_id,
        secret_hash=hash_secret(secret),
        display_name=spec.display_name,
        created_by=caller.principal,
        created_at=now,
        expire_time=expire_time,
    )
    binding = RoleBinding(
        enterprise_id=caller.enterprise_id,
        principal=key.principal,
        role=role,
        agent_selectors=binding_spec[0],
        subject_selectors=binding_spec[1],
    )
    # the binding first: a key never exists without it, and a binding without its key
    # authenticates nobody
    identity.put_binding(binding)
    identity.create_api_key(key)
    view = KeyView(key=key, bindings=(binding,), state=key_state(key, now))
    return CreatedKey(view=view, key_string=api_key_token(key_id, secret))


def _new_key_id(identity: IdentityStore) -> str:
    while True:
        key_id = secrets.token_hex(8)
        if identity.get_api_key(key_id) is None:
            return key_id


def key_state(key: ApiKey, now: datetime) -> KeyState:
    if key.revoked_at is not None:
        return "REVOKED"
    if key.expire_time is not None and key.expire_time <= now:
        return "EXPIRED"
    return "ACTIVE"


def list_api_keys(
    identity: IdentityStore, caller: Caller, now: datetime, paging: Paging
) -> Page[KeyView]:
    """A page of the caller's enterprise's keys, revoked and expired ones included, by
    key id, each with its bindings."""
    enterprise_id = caller.enterprise_id
    request = page_request("apiKeys", _bound_to(caller), paging)
    page = fill(
        request,
        lambda after, limit: identity.list_api_keys(enterprise_id, _first(after), limit),
        key=lambda key: (key.key_id,),
    )
    views = [
        KeyView(key=key, bindings=tuple(identity.list_bindings(enterprise_id, key.principal)),
                state=key_state(key, now))
        for key in page.items
    ]  # fmt: skip
    return Page(views, page.next_page_token)


def _bound_to(caller: Caller, **filters: str | None) -> dict[str, str | None]:
    """What a list's page tokens are bound to: the caller, and the request's filters."""
    return {"enterprise": caller.enterprise_id, "principal": caller.principal, **filters}


def _first(after: Key | None) -> str | None:
    return None if after is None else after[0]


def revoke_api_key(identity: IdentityStore, caller: Caller, key_id: str, now: datetime) -> KeyView:
    """Revoke a key of the caller's enterprise; it authenticates no more. Idempotent."""
    validate_key_id(key_id)
    key = identity.revoke_api_key(caller.enterprise_id, key_id, now)
    if key is None:
        raise NotFound(f"API key {key_id!r} was not found", metadata={"keyId": key_id})
    bindings = tuple(identity.list_bindings(caller.enterprise_id, key.principal))
    return KeyView(key=key, bindings=bindings, state=key_state(key, now))


# role bindings and users


def grant_role(
    identity: IdentityStore, caller: Caller, spec: GrantSpec, now: datetime
) -> RoleBinding:
    """Bind a role and reach to a principal of the caller's enterprise, replacing its
    binding of that role. A user not known yet is created, without a credential (in
    production such a user signs in with a Google ID token)."""
    principal = validate_principal(spec.principal, "principal")
    role = parse_role(spec.role)
    binding = RoleBinding(
        enterprise_id=caller.enterprise_id,
        principal=principal,
        role=role,
        agent_selectors=validate_selectors(spec.agent_selectors, "agentSelectors"),
        subject_selectors=validate_selectors(spec.subject_selectors, "subjectSelectors"),
    )
    _require_root_for(identity, caller, role)
    _require_covered(identity, caller, binding.agent_selectors, binding.subject_selectors)
    _ensure_principal(identity, caller, principal, now)
    identity.put_binding(binding)
    return binding


def _ensure_principal(
    identity: IdentityStore, caller: Caller, principal: str, now: datetime
) -> None:
    key_match = API_KEY_PRINCIPAL.match(principal)
    if key_match is not None:
        key = identity.get_api_key(key_match.group(1))
        if key is None or key.enterprise_id != caller.enterprise_id:
            raise NotFound(
                f"principal {principal!r}: no such API key", metadata={"principal": principal}
            )
        return
    if identity.get_user(caller.enterprise_id, principal) is None:
        identity.put_user(User(enterprise_id=caller.enterprise_id, principal=principal,
                               created_at=now))  # fmt: skip


def revoke_role(identity: IdentityStore, caller: Caller, principal: str, role_name: str) -> None:
    """Remove a principal's binding of one role; the enterprise keeps at least one root
    that can manage it (`managing_roots`)."""
    validate_principal(principal, "principal")
    role = parse_role(role_name)
    _require_root_for(identity, caller, role)
    if role is Role.ROOT and managing_roots(identity, caller.enterprise_id) == {principal}:
        raise FailedPrecondition(
            f"{principal} is the enterprise's last root user; grant root to another user "
            "first (a root API key cannot manage the enterprise)",
            reason="LAST_ROOT",
        )
    if not identity.delete_binding(caller.enterprise_id, principal, role):
        raise NotFound(
            f"{principal} has no {role.value} binding",
            metadata={"principal": principal, "role": role.value},
        )


def managing_roots(identity: IdentityStore, enterprise_id: str) -> set[str]:
    """The enterprise's root users that can still manage it: users (an API key can never
    use a management permission, revoked or not) that exist in the enterprise."""
    bound = {
        b.principal
        for b in identity.list_bindings(enterprise_id)
        if b.role is Role.ROOT and b.principal.startswith("user:")
    }
    return {p for p in bound if identity.get_user(enterprise_id, p) is not None}


def list_role_bindings(
    identity: IdentityStore, caller: Caller, principal: str | None, paging: Paging
) -> Page[RoleBinding]:
    """A page of the enterprise's bindings (of one principal when given), by principal
    and role."""
    if principal is not None:
        validate_principal(principal, "principal")
    request = page_request("roleBindings", _bound_to(caller, of=principal), paging, key_length=2)

    def fetch(after: Key | None, limit: int) -> list[RoleBinding]:
        start = None if after is None else (after[0], after[1])
        return identity.list_bindings(caller.enterprise_id, principal, start, limit)

    return fill(request, fetch, key=lambda b: (b.principal, b.role.value))


def create_user(
    identity: IdentityStore, caller: Caller, principal: str, now: datetime
) -> tuple[User, str]:
    """A new user of the caller's enterprise with a development credential (returned once).
    It has no role until one is granted."""
    validate_user_principal(principal, "principal")
    if identity.get_user(caller.enterprise_id, principal) is not None:
        raise AlreadyExists(f"{principal} already exists", metadata={"principal": principal})
    secret = new_secret()
    user = User(
        enterprise_id=caller.enterprise_id,
        principal=principal,
        token_hash=hash_secret(secret),
        created_at=now,
    )
    identity.put_user(user)
    return user, user_token(caller.enterprise_id, principal, secret)


def describe_caller(identity: IdentityStore, caller: Caller) -> CallerView:
    """The caller's roles, and the permissions and reach it can actually use."""
    bindings = identity.list_bindings(caller.enterprise_id, caller.principal)
    grants = grants_for(bindings)
    if caller.kind is CallerKind.API_KEY:
        usable = grants.permissions - USER_ONLY_PERMISSIONS
        grants = grants.model_copy(update={"permissions": usable})
    roles = tuple(sorted({b.role for b in bindings}, key=list(Role).index))
    return CallerView(caller=caller, roles=roles, usable=grants)


# scopes


def list_scopes(
    access: Access, store: MemoryStore, caller: Caller, kind: ScopeKind | None, paging: Paging
) -> Page[ScopeRecord]:
    """A page of the enterprise's scopes the caller reaches (of one kind when given),
    by id."""
    grants = access.grants(caller)
    kind_name = None if kind is None else kind.value
    request = page_request("scopes", _bound_to(caller, kind=kind_name), paging)

    def keep(record: ScopeRecord) -> bool:
        return (kind is None or record.kind == kind.value) and reaches(
            grants, ScopeKind(record.kind), record.scope.scope_id
        )

    return fill(
        request,
        lambda after, limit: store.list_scopes(caller.enterprise_id, _first(after), limit),
        key=lambda record: (record.scope.scope_id,),
        keep=keep,
    )


def create_scope(
    access: Access,
    store: MemoryStore,
    caller: Caller,
    scope_id: str,
    kind: ScopeKind,
    time_zone: str = "UTC",
) -> ScopeRecord:
    """Register an empty scope (its calendar in `time_zone`, an IANA name). Without reach
    the answer is the same NOT_FOUND whether or not the scope exists; with reach over an
    existing one it is ALREADY_EXISTS."""
    rules.validate_identifier(scope_id, "scopeId")
    claims.check_time_zone(time_zone)
    ref = ScopeRef(enterprise_id=caller.enterprise_id, scope_id=scope_id)
    try:
        if store.get_scope(ref) is not None:
            access.open_scope(caller, scope_id, None, Permission.MEMORY_COMMIT, create=False)
            raise _exists(scope_id)
        opened = access.open_scope(caller, scope_id, kind, Permission.MEMORY_COMMIT, create=True)
    except NotFound:
        raise NotFound(f"scope {scope_id!r} was not found") from None
    if opened.registration is None:
        raise _exists(scope_id)
    registration = opened.registration.model_copy(update={"time_zone": time_zone})
    store.apply(CommitPlan(scope=ref, registration=registration))
    return store.get_scope(ref) or registration


def set_time_zone(store: MemoryStore, opened: OpenedScope, time_zone: str) -> ScopeRecord:
    """Set the IANA time zone of a registered scope (agent workspace or subject scope);
    InvalidArgument naming timeZone unless the server's tz database knows the name."""
    claims.check_time_zone(time_zone)
    return store.set_time_zone(opened.ref, time_zone)


def get_scope(store: MemoryStore, opened: OpenedScope) -> ScopeRecord:
    """The registration of a scope the caller opened."""
    record = store.get_scope(opened.ref)
    if record is None:
        raise NotFound(f"scope {opened.ref.scope_id!r} was not found")
    return record


def _exists(scope_id: str) -> AlreadyExists:
    return AlreadyExists(f"scope {scope_id!r} already exists", metadata={"scopeId": scope_id})


def destroy_scope(
    store: MemoryStore,
    vocabularies: VocabularyStore,
    opened: OpenedScope,
    operations: OperationStore | None = None,
) -> int:
    """Erase the scope and every row of it (usage records outlive it); rows erased.

    Its scope-level vocabulary and its memory:form operations (which hold the
    turns sent to it) go first, so a failure leaves the scope in place for a retry
    rather than control documents outliving their scope.
    """
    ref = opened.ref
    vocabularies.delete_scope(ref.enterprise_id, ref.scope_id)
    if operations is not None:
        operations.delete_scope(ref.enterprise_id, ref.scope_id)
    return store.destroy_scope(ref)
