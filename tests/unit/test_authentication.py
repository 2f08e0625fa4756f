"""services.access: credentials become callers; callers are checked before any scope."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import pytest

from jennah.domain.access import (
    ApiKey,
    Caller,
    Permission,
    Role,
    RoleBinding,
    ScopeKind,
    User,
)
from jennah.domain.models import ScopeRecord, ScopeRef
from jennah.errors import (
    AlreadyExists,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unauthenticated,
)
from jennah.services.access import (
    Access,
    api_key_token,
    create_enterprise,
    hash_secret,
    user_token,
)
from tests.unit.fakes import FakeIdentityStore

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)


Identity = FakeIdentityStore


class Registry:
    def __init__(self) -> None:
        self.scopes: dict[ScopeRef, ScopeRecord] = {}

    def get_scope(self, scope: ScopeRef) -> ScopeRecord | None:
        return self.scopes.get(scope)


class Verifier:
    def verify(self, token: str) -> str:
        if token != "google-signed":
            raise Unauthenticated("the ID token is not valid")
        return "ana@example.com"


@pytest.fixture
def world() -> tuple[Access, Identity, Registry, str]:
    identity, registry = Identity(), Registry()
    root_token = create_enterprise(identity, "acme", "user:root", NOW)  # type: ignore[arg-type]
    access = Access(identity, registry, lambda: NOW, Verifier())  # type: ignore[arg-type]
    return access, identity, registry, root_token


def add_key(identity: Identity, key_id: str, **fields: object) -> str:
    identity.keys[key_id] = ApiKey(
        enterprise_id="acme",
        key_id=key_id,
        secret_hash=hash_secret("s3cret"),
        created_by="user:root",
        created_at=NOW,
        **fields,  # type: ignore[arg-type]
    )
    return api_key_token(key_id, "s3cret")


def bind(
    identity: Identity, principal: str, role: Role, agents: list[str], subjects: list[str]
) -> None:
    identity.put_binding(
        RoleBinding(
            enterprise_id="acme",
            principal=principal,
            role=role,
            agent_selectors=agents,
            subject_selectors=subjects,
        )
    )


def test_root_credential_from_create_enterprise_authenticates(world) -> None:  # type: ignore[no-untyped-def]
    access, _, _, token = world
    assert access.authenticate(f"Bearer {token}") == Caller(
        enterprise_id="acme", principal="user:root"
    )


def test_duplicate_enterprise_is_refused(world) -> None:  # type: ignore[no-untyped-def]
    _, identity, _, _ = world
    with pytest.raises(AlreadyExists):
        create_enterprise(identity, "acme", "user:other", NOW)


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (None, "no credential"),
        ("", "no credential"),
        ("Basic abc", "not a bearer credential"),
        ("Bearer", "not a bearer credential"),
        ("Bearer jk_nokey_s3cret", "not valid"),
        ("Bearer jk_", "not valid"),
        ("Bearer ju_!!!_x", "not valid"),
        ("Bearer garbage", "ID token is not valid"),
    ],
)
def test_bad_credentials_are_unauthenticated(world, header: str | None, message: str) -> None:  # type: ignore[no-untyped-def]
    access, _, _, _ = world
    with pytest.raises(Unauthenticated, match=message):
        access.authenticate(header)


def test_wrong_secret_is_refused_for_keys_and_users(world) -> None:  # type: ignore[no-untyped-def]
    access, identity, _, _ = world
    add_key(identity, "k1")
    with pytest.raises(Unauthenticated):
        access.authenticate(f"Bearer {api_key_token('k1', 'wrong')}")
    with pytest.raises(Unauthenticated):
        access.authenticate(f"Bearer {user_token('acme', 'user:root', 'wrong')}")
    with pytest.raises(Unauthenticated):
        access.authenticate(f"Bearer {legacy_user_token('user:root', 'wrong')}")


def test_api_key_is_recorded_as_itself(world) -> None:  # type: ignore[no-untyped-def]
    access, identity, _, _ = world
    token = add_key(identity, "k1")
    assert access.authenticate(f"Bearer {token}").principal == "api_key:k1"


def test_revoked_and_expired_keys_are_refused(world) -> None:  # type: ignore[no-untyped-def]
    access, identity, _, _ = world
    revoked = add_key(identity, "k1", revoked_at=NOW - timedelta(seconds=1))
    expired = add_key(identity, "k2", expire_time=NOW)
    alive = add_key(identity, "k3", expire_time=NOW + timedelta(seconds=1))
    with pytest.raises(Unauthenticated, match="revoked"):
        access.authenticate(f"Bearer {revoked}")
    with pytest.raises(Unauthenticated, match="expired"):
        access.authenticate(f"Bearer {expired}")
    assert access.authenticate(f"Bearer {alive}").principal == "api_key:k3"


def test_google_id_token_maps_to_a_known_user(world) -> None:  # type: ignore[no-untyped-def]
    access, identity, _, _ = world
    with pytest.raises(Unauthenticated, match="not a user"):
        access.authenticate("Bearer google-signed")
    identity.put_user(User(enterprise_id="acme", principal="user:ana@example.com"))
    assert access.authenticate("Bearer google-signed").principal == "user:ana@example.com"


def legacy_user_token(principal: str, secret: str) -> str:
    """The development credential of earlier builds: it does not name its enterprise."""
    encoded = base64.urlsafe_b64encode(principal.encode()).decode().rstrip("=")
    return f"ju_{encoded}_{secret}"


def test_a_principal_is_a_user_of_each_enterprise_separately(world) -> None:  # type: ignore[no-untyped-def]
    access, identity, _, _ = world
    create_enterprise(identity, "globex", "user:ada", NOW)
    identity.put_user(User(enterprise_id="acme", principal="user:ada",
                           token_hash=hash_secret("a" * 64)))  # fmt: skip
    identity.put_user(User(enterprise_id="globex", principal="user:ada",
                           token_hash=hash_secret("b" * 64)))  # fmt: skip
    for enterprise, secret in (("acme", "a" * 64), ("globex", "b" * 64)):
        caller = Caller(enterprise_id=enterprise, principal="user:ada")
        assert access.authenticate(f"Bearer {user_token(enterprise, 'user:ada', secret)}") == caller
        # the earlier form finds the enterprise whose credential the secret is
        assert access.authenticate(f"Bearer {legacy_user_token('user:ada', secret)}") == caller
    # a credential names its enterprise: the other enterprise's secret does not work there
    refused = (
        user_token("acme", "user:ada", "b" * 64),
        user_token("nowhere", "user:ada", "a" * 64),
        "ju_dXNlcjphZGE._" + "a" * 64,  # an empty enterprise
        "ju_dXNlcjphZGE.!!!_" + "a" * 64,  # not base64url
    )
    for token in refused:
        with pytest.raises(Unauthenticated, match="not valid"):
            access.authenticate(f"Bearer {token}")


def test_an_id_token_user_of_several_enterprises_names_one(world) -> None:  # type: ignore[no-untyped-def]
    access, identity, _, _ = world
    create_enterprise(identity, "globex", "user:groot", NOW)
    for enterprise in ("acme", "globex"):
        identity.put_user(User(enterprise_id=enterprise, principal="user:ana@example.com"))
    with pytest.raises(Unauthenticated) as ambiguous:
        access.authenticate("Bearer google-signed")
    assert ambiguous.value.reason == "ENTERPRISE_AMBIGUOUS"
    for enterprise in ("acme", "globex"):
        caller = access.authenticate("Bearer google-signed", enterprise)
        assert caller == Caller(enterprise_id=enterprise, principal="user:ana@example.com")
    with pytest.raises(Unauthenticated, match="not a user of enterprise 'initech'"):
        access.authenticate("Bearer google-signed", "initech")


def test_management_permission_is_never_usable_with_an_api_key(world) -> None:  # type: ignore[no-untyped-def]
    access, identity, _, _ = world
    bind(identity, "api_key:k1", Role.ROOT, [], [])
    key = Caller(enterprise_id="acme", principal="api_key:k1")
    with pytest.raises(PermissionDenied) as err:
        access.require(key, Permission.VOCABULARY_MANAGE)
    assert err.value.reason == "MANAGEMENT_PERMISSION_WITH_API_KEY"
    access.require(key, Permission.MEMORY_COMMIT)  # non-management permissions still work


def test_editing_and_forgetting_memory_are_never_usable_with_an_api_key(world) -> None:  # type: ignore[no-untyped-def]
    access, identity, _, _ = world
    bind(identity, "api_key:k1", Role.ROOT, ["*"], ["*"])
    bind(identity, "user:m", Role.MEMBER, ["*"], ["*"])
    key = Caller(enterprise_id="acme", principal="api_key:k1")
    for permission in (Permission.MEMORY_EDIT, Permission.MEMORY_FORGET):
        with pytest.raises(PermissionDenied) as err:
            access.require(key, permission)
        assert err.value.reason == "MEMORY_CHANGE_WITH_API_KEY"
        access.require(Caller(enterprise_id="acme", principal="user:m"), permission)
    access.require(key, Permission.MEMORY_READ)  # an agent may read its memory


def test_missing_permission_is_denied(world) -> None:  # type: ignore[no-untyped-def]
    access, identity, _, _ = world
    bind(identity, "user:m", Role.MEMBER, ["*"], ["*"])
    with pytest.raises(PermissionDenied, match=r"billing\.usage:read"):
        access.require(
            Caller(enterprise_id="acme", principal="user:m"), Permission.BILLING_USAGE_READ
        )


def test_first_write_registers_the_scope_with_the_routes_kind(world) -> None:  # type: ignore[no-untyped-def]
    access, _, _, _ = world
    root = Caller(enterprise_id="acme", principal="user:root")
    opened = access.open_scope(
        root, "bot.1", ScopeKind.AGENT, Permission.MEMORY_COMMIT, create=True
    )
    assert opened.ref == ScopeRef(enterprise_id="acme", scope_id="bot.1")
    assert opened.registration is not None and opened.registration.kind == "agent"
    assert opened.registration.created_by == "user:root"
    subject = access.open_scope(root, "ana", None, Permission.MEMORY_COMMIT, create=True)
    assert subject.kind is ScopeKind.SUBJECT


def test_reading_a_missing_scope_is_not_found(world) -> None:  # type: ignore[no-untyped-def]
    access, _, _, _ = world
    root = Caller(enterprise_id="acme", principal="user:root")
    with pytest.raises(NotFound, match=r"agent workspace 'bot\.1' was not found"):
        access.open_scope(root, "bot.1", ScopeKind.AGENT, Permission.MEMORY_QUERY, create=False)


def test_no_reach_is_answered_exactly_like_a_missing_scope(world) -> None:  # type: ignore[no-untyped-def]
    access, identity, registry, _ = world
    ref = ScopeRef(enterprise_id="acme", scope_id="bot.secret")
    registry.scopes[ref] = ScopeRecord(scope=ref, kind="agent")
    bind(identity, "user:m", Role.MEMBER, ["bot.public*"], [])
    member = Caller(enterprise_id="acme", principal="user:m")
    with pytest.raises(NotFound) as existing:
        access.open_scope(
            member, "bot.secret", ScopeKind.AGENT, Permission.MEMORY_QUERY, create=False
        )
    with pytest.raises(NotFound) as missing:
        access.open_scope(
            member, "bot.nothing", ScopeKind.AGENT, Permission.MEMORY_QUERY, create=False
        )
    assert existing.value.message.replace("bot.secret", "X") == missing.value.message.replace(
        "bot.nothing", "X"
    )
    assert (
        existing.value.reason == missing.value.reason
        and existing.value.metadata == missing.value.metadata
    )
    # and no reach wins over no permission: a caller with neither learns nothing either
    bind(identity, "user:none", Role.MEMBER, [], [])
    with pytest.raises(NotFound):
        access.open_scope(
            Caller(enterprise_id="acme", principal="user:none"),
            "bot.secret",
            ScopeKind.AGENT,
            Permission.VOCABULARY_MANAGE,
            create=False,
        )


def test_reach_is_checked_in_the_namespace_of_the_scopes_kind(world) -> None:  # type: ignore[no-untyped-def]
    access, identity, registry, _ = world
    ref = ScopeRef(enterprise_id="acme", scope_id="ana")
    registry.scopes[ref] = ScopeRecord(scope=ref, kind="subject")
    bind(identity, "user:m", Role.MEMBER, ["*"], [])  # agent reach only
    member = Caller(enterprise_id="acme", principal="user:m")
    with pytest.raises(NotFound):
        access.open_scope(member, "ana", None, Permission.MEMORY_QUERY, create=False)
    # a subject scope is not an agent workspace, whoever asks
    root = Caller(enterprise_id="acme", principal="user:root")
    with pytest.raises(NotFound):
        access.open_scope(root, "ana", ScopeKind.AGENT, Permission.MEMORY_QUERY, create=False)
    assert (
        access.open_scope(root, "ana", None, Permission.MEMORY_QUERY, create=False).registration
        is None
    )


def test_reach_without_permission_is_denied(world) -> None:  # type: ignore[no-untyped-def]
    access, identity, _, _ = world
    bind(identity, "user:m", Role.MEMBER, ["*"], ["*"])
    member = Caller(enterprise_id="acme", principal="user:m")
    with pytest.raises(PermissionDenied):
        access.open_scope(member, "bot.1", ScopeKind.AGENT, Permission.SCOPES_DESTROY, create=False)


def test_bad_scope_id_names_the_path_field(world) -> None:  # type: ignore[no-untyped-def]
    access, _, _, _ = world
    root = Caller(enterprise_id="acme", principal="user:root")
    with pytest.raises(InvalidArgument) as err:
        access.open_scope(root, "bad id", ScopeKind.AGENT, Permission.MEMORY_QUERY, create=False)
    assert err.value.metadata["field"] == "agentInstanceId"
