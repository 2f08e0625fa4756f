"""The identity store contract: every test here runs against BOTH identity stores.

`identity` is parametrized over the embedded SQLite store (in the memory
store's file) and Firestore (on the local emulator, marked `firestore`). Each
test uses fresh, unique enterprise ids, principals and key ids, so tests need
no reset and may share one emulator.
"""

from __future__ import annotations

import base64
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta, timezone
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from jennah import errors
from jennah.domain.access import (
    ApiKey,
    Caller,
    Enterprise,
    Permission,
    Role,
    RoleBinding,
    ScopeKind,
    User,
)
from jennah.ports.identity import IdentityStore
from jennah.services.access import (
    Access,
    api_key_token,
    create_enterprise,
    hash_secret,
    new_secret,
)

NOW = datetime(2030, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)
CONTENTION_WRITERS = 5  # the Firestore emulator is slow under contention


def _sqlite_identity(tmp_path: Path) -> Iterator[IdentityStore]:
    from jennah.adapters.sqlite.identity import SqliteIdentityStore

    store = SqliteIdentityStore(tmp_path / "memory.db")
    yield store
    store.close()


def _firestore_identity() -> Iterator[IdentityStore]:
    from jennah.adapters.firestore.identity import FirestoreIdentityStore
    from tests.support.firestore_emulator import firestore_test_client

    yield FirestoreIdentityStore(firestore_test_client())


@pytest.fixture(params=["sqlite", pytest.param("firestore", marks=pytest.mark.firestore)])
def identity(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[IdentityStore]:
    if request.param == "sqlite":
        yield from _sqlite_identity(tmp_path)
    else:
        yield from _firestore_identity()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def new_enterprise(identity: IdentityStore, **fields: Any) -> str:
    enterprise_id = unique("ent")
    identity.create_enterprise(Enterprise(enterprise_id=enterprise_id, created_at=NOW, **fields))
    return enterprise_id


def api_key(enterprise_id: str, key_id: str | None = None, **fields: Any) -> ApiKey:
    values: dict[str, Any] = {
        "enterprise_id": enterprise_id,
        "key_id": key_id or uuid.uuid4().hex,
        "secret_hash": hash_secret(new_secret()),
        "display_name": "ci bot",
        "created_by": "user:root@example.com",
        "created_at": NOW,
    }
    values.update(fields)
    return ApiKey(**values)


def binding(enterprise_id: str, principal: str, role: Role, **fields: Any) -> RoleBinding:
    return RoleBinding(enterprise_id=enterprise_id, principal=principal, role=role, **fields)


def in_parallel(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run the calls at once (a barrier lines them up); each one's result or exception."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], Any]) -> Any:
        barrier.wait()
        try:
            return call()
        except Exception as exc:
            return exc

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


# -- enterprises ----------------------------------------------------------------


def test_an_enterprise_round_trips(identity: IdentityStore) -> None:
    enterprise_id = new_enterprise(identity, display_name="Acme")
    assert identity.get_enterprise(enterprise_id) == Enterprise(
        enterprise_id=enterprise_id, display_name="Acme", created_at=NOW
    )


def test_a_taken_enterprise_id_is_refused_and_the_first_kept(identity: IdentityStore) -> None:
    enterprise_id = new_enterprise(identity, display_name="first")
    with pytest.raises(errors.AlreadyExists, match=enterprise_id):
        identity.create_enterprise(Enterprise(enterprise_id=enterprise_id, display_name="second"))
    stored = identity.get_enterprise(enterprise_id)
    assert stored is not None and stored.display_name == "first"


def test_an_enterprise_is_created_with_its_users_and_bindings_at_once(
    identity: IdentityStore,
) -> None:
    enterprise_id = unique("ent")
    root = User(enterprise_id=enterprise_id, principal=f"user:{unique('root')}", token_hash="h")
    root_binding = binding(enterprise_id, root.principal, Role.ROOT)
    identity.create_enterprise(
        Enterprise(enterprise_id=enterprise_id, created_at=NOW), [root], [root_binding]
    )
    assert identity.get_user(enterprise_id, root.principal) == root
    assert identity.find_users(root.principal) == [root]
    assert identity.list_bindings(enterprise_id) == [root_binding]


def test_creating_a_taken_enterprise_writes_none_of_its_users_or_bindings(
    identity: IdentityStore,
) -> None:
    enterprise_id = unique("ent")
    root = User(enterprise_id=enterprise_id, principal=f"user:{unique('root')}", token_hash="h")
    kept = binding(enterprise_id, root.principal, Role.ROOT)
    identity.create_enterprise(Enterprise(enterprise_id=enterprise_id), [root], [kept])
    intruder = User(enterprise_id=enterprise_id, principal=f"user:{unique('x')}")
    with pytest.raises(errors.AlreadyExists):
        identity.create_enterprise(
            Enterprise(enterprise_id=enterprise_id, display_name="second"),
            [root.model_copy(update={"token_hash": "stolen"}), intruder],
            [binding(enterprise_id, intruder.principal, Role.ROOT)],
        )
    assert identity.get_user(enterprise_id, root.principal) == root
    assert identity.get_user(enterprise_id, intruder.principal) is None
    assert identity.find_users(intruder.principal) == []
    assert identity.list_bindings(enterprise_id) == [kept]


def test_deleting_an_enterprise_erases_what_it_holds_and_nothing_else(
    identity: IdentityStore,
) -> None:
    doomed, kept = unique("ent"), new_enterprise(identity)
    principal = f"user:{unique('ada')}/x"
    users = [User(enterprise_id=e, principal=principal) for e in (doomed, kept)]
    identity.create_enterprise(
        Enterprise(enterprise_id=doomed), [users[0]], [binding(doomed, principal, Role.ROOT)]
    )
    identity.put_user(users[1])
    identity.put_binding(binding(kept, principal, Role.MEMBER))
    doomed_key, kept_key = api_key(doomed), api_key(kept)
    identity.create_api_key(doomed_key)
    identity.create_api_key(kept_key)
    identity.delete_enterprise(doomed)
    assert identity.get_enterprise(doomed) is None
    assert identity.get_user(doomed, principal) is None
    assert identity.find_users(principal) == [users[1]]
    assert identity.get_api_key(doomed_key.key_id) is None
    assert identity.list_bindings(doomed) == [] and identity.list_api_keys(doomed) == []
    assert identity.get_api_key(kept_key.key_id) == kept_key
    assert identity.list_bindings(kept) == [binding(kept, principal, Role.MEMBER)]
    identity.delete_enterprise(doomed)  # again: nothing to do
    identity.create_enterprise(Enterprise(enterprise_id=doomed))  # the id is free again


def _unavailable(billing: Any) -> None:
    raise errors.Unavailable("the usage ledger is unavailable")


def test_an_enterprise_whose_billing_fails_is_not_left_behind(identity: IdentityStore) -> None:
    from jennah.domain.billing import EnterpriseBilling, Plan
    from jennah.services import enterprises

    enterprise_id, root = unique("ent"), f"user:{unique('root')}"
    billing = EnterpriseBilling(enterprise_id=enterprise_id, plan=Plan.TEAM)
    with pytest.raises(errors.Unavailable):
        failing = SimpleNamespace(put_billing=_unavailable)  # the enterprise's other half
        enterprises.create_enterprise(identity, failing, root, billing, NOW)  # type: ignore[arg-type]
    assert identity.get_enterprise(enterprise_id) is None
    assert identity.find_users(root) == []
    assert identity.list_bindings(enterprise_id) == []

    stored: list[EnterpriseBilling] = []
    ledger = SimpleNamespace(put_billing=stored.append)
    token = enterprises.create_enterprise(identity, ledger, root, billing, NOW)  # type: ignore[arg-type]
    assert _access(identity).authenticate(f"Bearer {token}") == Caller(
        enterprise_id=enterprise_id, principal=root
    )
    assert stored == [billing]


def test_a_missing_enterprise_is_none(identity: IdentityStore) -> None:
    assert identity.get_enterprise(unique("ent")) is None


# -- users ------------------------------------------------------------------------


def test_a_user_round_trips_and_is_found_without_its_enterprise(identity: IdentityStore) -> None:
    enterprise_id = new_enterprise(identity)
    user = User(
        enterprise_id=enterprise_id,
        principal=f"user:{unique('ada')}@example.com",
        token_hash=hash_secret("s"),
        created_at=NOW,
    )
    identity.put_user(user)
    assert identity.get_user(enterprise_id, user.principal) == user
    assert identity.find_users(user.principal) == [user]


def test_putting_a_user_again_replaces_it(identity: IdentityStore) -> None:
    enterprise_id = new_enterprise(identity)
    principal = f"user:{unique('ada')}"
    identity.put_user(User(enterprise_id=enterprise_id, principal=principal, token_hash="old"))
    replacement = User(enterprise_id=enterprise_id, principal=principal, created_at=NOW)
    identity.put_user(replacement)
    assert identity.get_user(enterprise_id, principal) == replacement
    assert identity.find_users(principal) == [replacement]


def test_a_principal_is_a_user_of_each_enterprise_separately(identity: IdentityStore) -> None:
    first, second, third = (new_enterprise(identity) for _ in range(3))
    principal = f"user:{unique('ada')}@example.com"
    ours = User(enterprise_id=first, principal=principal, token_hash="h1")
    theirs = User(enterprise_id=second, principal=principal, token_hash="h2", created_at=NOW)
    identity.put_user(ours)
    identity.put_user(theirs)  # no claim, no refusal: the name is not global
    assert identity.get_user(first, principal) == ours
    assert identity.get_user(second, principal) == theirs
    assert identity.get_user(third, principal) is None
    assert identity.find_users(principal) == sorted([ours, theirs], key=lambda u: u.enterprise_id)
    identity.put_user(ours.model_copy(update={"token_hash": "h3"}))  # replacing one keeps the other
    assert identity.get_user(second, principal) == theirs


def test_concurrent_writes_of_one_principal_in_several_enterprises_all_land(
    identity: IdentityStore,
) -> None:
    enterprises = [new_enterprise(identity) for _ in range(CONTENTION_WRITERS)]
    principal = f"user:{unique('contested')}"
    users = [User(enterprise_id=e, principal=principal) for e in enterprises]
    outcomes = in_parallel([partial(identity.put_user, user) for user in users])
    assert outcomes == [None] * len(users)
    assert identity.find_users(principal) == sorted(users, key=lambda u: u.enterprise_id)


def test_a_missing_user_is_none(identity: IdentityStore) -> None:
    enterprise_id = new_enterprise(identity)
    assert identity.get_user(enterprise_id, f"user:{unique('nobody')}") is None
    assert identity.find_users(f"user:{unique('nobody')}") == []


# -- API keys ---------------------------------------------------------------------


def test_an_api_key_round_trips_and_is_found_without_its_enterprise(
    identity: IdentityStore,
) -> None:
    enterprise_id = new_enterprise(identity)
    key = api_key(enterprise_id, expire_time=NOW + timedelta(days=30, microseconds=7))
    identity.create_api_key(key)
    assert identity.get_api_key(key.key_id) == key


def test_times_round_trip_exactly_as_utc_instants(identity: IdentityStore) -> None:
    enterprise_id = new_enterprise(identity)
    plus_two = timezone(timedelta(hours=2))
    created = datetime(2031, 5, 6, 7, 8, 9, 999999, tzinfo=plus_two)
    key = api_key(enterprise_id, created_at=created, expire_time=created + timedelta(hours=1))
    identity.create_api_key(key)
    stored = identity.get_api_key(key.key_id)
    assert stored is not None
    assert stored.created_at == created and stored.created_at.utcoffset() == timedelta(0)
    assert stored.created_at.microsecond == 999999
    assert stored.expire_time == created + timedelta(hours=1)


def test_a_taken_key_id_is_refused_in_any_enterprise(identity: IdentityStore) -> None:
    first, second = new_enterprise(identity), new_enterprise(identity)
    key = api_key(first)
    identity.create_api_key(key)
    with pytest.raises(errors.AlreadyExists, match=key.key_id):
        identity.create_api_key(api_key(second, key.key_id))
    with pytest.raises(errors.AlreadyExists):
        identity.create_api_key(api_key(first, key.key_id, display_name="again"))
    assert identity.get_api_key(key.key_id) == key
    assert identity.list_api_keys(second) == []


def test_api_keys_are_listed_by_key_id_revoked_ones_included(identity: IdentityStore) -> None:
    enterprise_id = new_enterprise(identity)
    keys = [api_key(enterprise_id, f"{uuid.uuid4().hex[:8]}{n}") for n in range(4)]
    for key in keys:
        identity.create_api_key(key)
    identity.revoke_api_key(enterprise_id, keys[1].key_id, NOW)
    listed = identity.list_api_keys(enterprise_id)
    assert [k.key_id for k in listed] == sorted(k.key_id for k in keys)
    assert [k.key_id for k in listed if k.revoked_at == NOW] == [keys[1].key_id]


def test_revoking_sets_revoked_at_once(identity: IdentityStore) -> None:
    enterprise_id = new_enterprise(identity)
    key = api_key(enterprise_id)
    identity.create_api_key(key)
    first = identity.revoke_api_key(enterprise_id, key.key_id, NOW)
    assert first == key.model_copy(update={"revoked_at": NOW})
    later = identity.revoke_api_key(enterprise_id, key.key_id, NOW + timedelta(hours=1))
    assert later is not None and later.revoked_at == NOW
    stored = identity.get_api_key(key.key_id)
    assert stored is not None and stored.revoked_at == NOW


def test_concurrent_revokes_agree_on_one_time(identity: IdentityStore) -> None:
    enterprise_id = new_enterprise(identity)
    key = api_key(enterprise_id)
    identity.create_api_key(key)
    times = [NOW + timedelta(seconds=n) for n in range(CONTENTION_WRITERS)]
    outcomes = in_parallel(
        [partial(identity.revoke_api_key, enterprise_id, key.key_id, at) for at in times]
    )
    assert all(isinstance(outcome, ApiKey) for outcome in outcomes), outcomes
    revoked = {outcome.revoked_at for outcome in outcomes}
    assert len(revoked) == 1 and revoked <= set(times)
    stored = identity.get_api_key(key.key_id)
    assert stored is not None and {stored.revoked_at} == revoked


def test_revoking_in_another_enterprise_finds_nothing_and_changes_nothing(
    identity: IdentityStore,
) -> None:
    owner, other = new_enterprise(identity), new_enterprise(identity)
    key = api_key(owner)
    identity.create_api_key(key)
    assert identity.revoke_api_key(other, key.key_id, NOW) is None
    assert identity.get_api_key(key.key_id) == key
    assert identity.revoke_api_key(owner, uuid.uuid4().hex, NOW) is None


def test_a_missing_api_key_is_none(identity: IdentityStore) -> None:
    assert identity.get_api_key(uuid.uuid4().hex) is None


# -- role bindings ------------------------------------------------------------------


def test_bindings_are_listed_by_principal_then_role(identity: IdentityStore) -> None:
    enterprise_id = new_enterprise(identity)
    ada, bob = f"user:{unique('ada')}", f"api_key:{unique('b')}"
    written = [
        binding(enterprise_id, bob, Role.MEMBER, agent_selectors=["bot.*"]),
        binding(enterprise_id, ada, Role.ROOT),
        binding(enterprise_id, ada, Role.MEMBER, subject_selectors=["customer.*", "x"]),
        binding(enterprise_id, ada, Role.ADMINISTRATOR),
    ]
    for each in written:
        identity.put_binding(each)
    expected = sorted(written, key=lambda b: (b.principal, b.role.value))
    assert identity.list_bindings(enterprise_id) == expected
    assert identity.list_bindings(enterprise_id, ada) == [b for b in expected if b.principal == ada]
    assert identity.list_bindings(enterprise_id, f"user:{unique('nobody')}") == []


def test_putting_a_binding_of_the_same_role_replaces_it(identity: IdentityStore) -> None:
    enterprise_id = new_enterprise(identity)
    principal = f"user:{unique('ada')}"
    identity.put_binding(binding(enterprise_id, principal, Role.MEMBER, agent_selectors=["a"]))
    replacement = binding(enterprise_id, principal, Role.MEMBER, subject_selectors=["s.*"])
    identity.put_binding(replacement)
    assert identity.list_bindings(enterprise_id, principal) == [replacement]


def test_deleting_a_binding_says_whether_there_was_one(identity: IdentityStore) -> None:
    enterprise_id = new_enterprise(identity)
    principal = f"user:{unique('ada')}"
    kept = binding(enterprise_id, principal, Role.ROOT)
    identity.put_binding(kept)
    identity.put_binding(binding(enterprise_id, principal, Role.MEMBER))
    assert identity.delete_binding(enterprise_id, principal, Role.MEMBER) is True
    assert identity.delete_binding(enterprise_id, principal, Role.MEMBER) is False
    assert identity.delete_binding(enterprise_id, principal, Role.ADMINISTRATOR) is False
    assert identity.list_bindings(enterprise_id) == [kept]


def test_keys_are_listed_page_by_page_after_a_key_id(identity: IdentityStore) -> None:
    enterprise_id = new_enterprise(identity)
    keys = sorted((api_key(enterprise_id) for _ in range(5)), key=lambda k: k.key_id)
    for key in reversed(keys):
        identity.create_api_key(key)
    identity.create_api_key(api_key(new_enterprise(identity)))
    assert identity.list_api_keys(enterprise_id, limit=2) == keys[:2]
    assert identity.list_api_keys(enterprise_id, keys[1].key_id) == keys[2:]
    assert identity.list_api_keys(enterprise_id, keys[1].key_id, 2) == keys[2:4]
    assert identity.list_api_keys(enterprise_id, keys[4].key_id) == []


def test_bindings_are_listed_page_by_page_after_a_principal_and_role(
    identity: IdentityStore,
) -> None:
    enterprise_id = new_enterprise(identity)
    principals = ["user:a", "user:a.b", "user:a/b", "user:a_b", "api_key:k", "user:ü"]
    written = [
        binding(enterprise_id, principal, role)
        for principal in principals
        for role in (Role.MEMBER, Role.ROOT, Role.ADMINISTRATOR)
    ]
    for each in written:
        identity.put_binding(each)
    identity.put_binding(binding(new_enterprise(identity), "user:a", Role.ROOT))
    ordered = sorted(written, key=lambda b: (b.principal, b.role.value))
    assert identity.list_bindings(enterprise_id) == ordered
    pages, after = [], None
    while page := identity.list_bindings(enterprise_id, None, after, 4):
        pages.append(page)
        after = (page[-1].principal, page[-1].role.value)
    assert [len(p) for p in pages] == [4, 4, 4, 4, 2]
    assert [b for p in pages for b in p] == ordered
    of_a = [b for b in ordered if b.principal == "user:a.b"]
    assert identity.list_bindings(enterprise_id, "user:a.b", None, 2) == of_a[:2]
    assert identity.list_bindings(enterprise_id, "user:a.b", ("user:a.b", "member")) == of_a[2:]
    assert identity.list_bindings(enterprise_id, "user:a.b", ("user:a", "root")) == of_a


# -- enterprise isolation and the credential lookups -----------------------------------


def test_nothing_of_one_enterprise_is_listed_or_changed_through_another(
    identity: IdentityStore,
) -> None:
    a, b = new_enterprise(identity), new_enterprise(identity)
    principal = f"user:{unique('shared-name')}"
    key = api_key(a)
    identity.create_api_key(key)
    identity.put_user(User(enterprise_id=a, principal=principal))
    a_binding = binding(a, principal, Role.ADMINISTRATOR, agent_selectors=["*"])
    identity.put_binding(a_binding)

    assert identity.list_api_keys(b) == []
    assert identity.list_bindings(b) == []
    assert identity.list_bindings(b, principal) == []
    assert identity.delete_binding(b, principal, Role.ADMINISTRATOR) is False
    assert identity.revoke_api_key(b, key.key_id, NOW) is None
    # a binding of the same principal and role in b is b's own
    b_binding = binding(b, principal, Role.ADMINISTRATOR, subject_selectors=["b.*"])
    identity.put_binding(b_binding)
    assert identity.list_bindings(a) == [a_binding]
    assert identity.list_bindings(b) == [b_binding]
    assert identity.list_api_keys(a) == [key]


def test_the_lookups_find_each_credential_in_its_own_enterprise(identity: IdentityStore) -> None:
    enterprises = [new_enterprise(identity) for _ in range(3)]
    keys = [api_key(e) for e in enterprises]
    users = [User(enterprise_id=e, principal=f"user:{unique('u')}") for e in enterprises]
    for key, user in zip(keys, users, strict=True):
        identity.create_api_key(key)
        identity.put_user(user)
    for key, user in zip(keys, users, strict=True):
        assert identity.get_api_key(key.key_id) == key
        assert identity.find_users(user.principal) == [user]


@pytest.mark.parametrize(
    "pattern",
    ["a/b{}", "a%2Fb{}", "%{}", "__{}__", "_{}_", "{}__member", "ünï/cödé{}", "user:{}@x.org"],
)
def test_any_principal_and_key_id_round_trip(identity: IdentityStore, pattern: str) -> None:
    enterprise_id = new_enterprise(identity)
    name = pattern.format(uuid.uuid4().hex)
    user = User(enterprise_id=enterprise_id, principal=name)
    identity.put_user(user)
    key = api_key(enterprise_id, name)
    identity.create_api_key(key)
    member = binding(enterprise_id, name, Role.MEMBER)
    identity.put_binding(member)
    assert identity.get_user(enterprise_id, name) == user
    assert identity.find_users(name) == [user]
    assert identity.get_api_key(name) == key
    assert identity.list_api_keys(enterprise_id) == [key]
    assert identity.list_bindings(enterprise_id, name) == [member]
    assert identity.delete_binding(enterprise_id, name, Role.MEMBER) is True


def test_principals_that_are_not_plain_document_ids_bind(identity: IdentityStore) -> None:
    enterprise_id = new_enterprise(identity)
    names = [".", "..", "__x__", "a/b", "%2E", "%"]
    for name in names:
        identity.put_binding(binding(enterprise_id, name, Role.ROOT))
    assert [b.principal for b in identity.list_bindings(enterprise_id)] == sorted(names)
    for name in names:
        assert identity.list_bindings(enterprise_id, name) == [
            binding(enterprise_id, name, Role.ROOT)
        ]


def test_encoded_lookalikes_stay_apart(identity: IdentityStore) -> None:
    enterprise_id = new_enterprise(identity)
    suffix = uuid.uuid4().hex
    slash = User(enterprise_id=enterprise_id, principal=f"user:a/b{suffix}", token_hash="slash")
    encoded = User(enterprise_id=enterprise_id, principal=f"user:a%2Fb{suffix}", token_hash="pct")
    identity.put_user(slash)
    identity.put_user(encoded)
    assert identity.get_user(enterprise_id, slash.principal) == slash
    assert identity.get_user(enterprise_id, encoded.principal) == encoded
    assert identity.find_users(encoded.principal) == [encoded]
    for principal in (slash.principal, encoded.principal):
        identity.put_binding(binding(enterprise_id, principal, Role.MEMBER))
    assert [b.principal for b in identity.list_bindings(enterprise_id)] == sorted(
        [slash.principal, encoded.principal]
    )


# -- the Access flow end to end ------------------------------------------------------


class _NoScopes:
    """The memory store Access needs: no scope is registered yet."""

    def get_scope(self, ref: Any) -> None:
        return None


def _access(identity: IdentityStore, now: datetime = NOW) -> Access:
    return Access(identity, _NoScopes(), lambda: now)  # type: ignore[arg-type]


def _issue_key(
    identity: IdentityStore, caller: Caller, role: Role, **fields: Any
) -> tuple[ApiKey, str]:
    """Record a new key made by `caller` and bind it; returns the key and its token."""
    secret = new_secret()
    key = api_key(
        caller.enterprise_id,
        secret_hash=hash_secret(secret),
        created_by=caller.principal,
        **fields,
    )
    identity.create_api_key(key)
    identity.put_binding(
        binding(caller.enterprise_id, key.principal, role, agent_selectors=["bot.*"])
    )
    return key, api_key_token(key.key_id, secret)


def test_the_access_flow_end_to_end(identity: IdentityStore) -> None:
    access = _access(identity)
    enterprise_id = unique("ent")
    root_principal = f"user:{unique('root')}@example.com"
    root_token = create_enterprise(identity, enterprise_id, root_principal, NOW)

    root = access.authenticate(f"Bearer {root_token}")
    assert root == Caller(enterprise_id=enterprise_id, principal=root_principal)
    access.require(root, Permission.KEYS_MANAGE)

    key, token = _issue_key(identity, root, Role.MEMBER)
    caller = access.authenticate(f"Bearer {token}")
    assert caller == Caller(enterprise_id=enterprise_id, principal=f"api_key:{key.key_id}")
    opened = access.open_scope(
        caller, "bot.alpha", ScopeKind.AGENT, Permission.MEMORY_COMMIT, create=True
    )
    assert opened.registration is not None and opened.registration.created_by == caller.principal
    with pytest.raises(errors.NotFound):
        access.open_scope(
            caller, "elsewhere", ScopeKind.AGENT, Permission.MEMORY_COMMIT, create=True
        )
    with pytest.raises(errors.PermissionDenied):
        access.require(caller, Permission.KEYS_MANAGE)

    assert identity.revoke_api_key(enterprise_id, key.key_id, NOW) is not None
    with pytest.raises(errors.Unauthenticated, match="revoked"):
        access.authenticate(f"Bearer {token}")
    with pytest.raises(errors.Unauthenticated):
        wrong_last = "1" if root_token.endswith("0") else "0"  # always another secret
        access.authenticate(f"Bearer {root_token[:-1]}{wrong_last}")


def test_an_expired_key_is_unauthenticated(identity: IdentityStore) -> None:
    enterprise_id = unique("ent")
    root_token = create_enterprise(identity, enterprise_id, f"user:{unique('root')}", NOW)
    root = _access(identity).authenticate(f"Bearer {root_token}")
    expire = NOW + timedelta(hours=1)
    _, token = _issue_key(identity, root, Role.MEMBER, expire_time=expire)
    assert _access(identity, expire - timedelta(microseconds=1)).authenticate(f"Bearer {token}")
    with pytest.raises(errors.Unauthenticated, match="expired"):
        _access(identity, expire).authenticate(f"Bearer {token}")


def test_a_second_enterprise_with_the_same_id_is_refused(identity: IdentityStore) -> None:
    enterprise_id = unique("ent")
    create_enterprise(identity, enterprise_id, f"user:{unique('root')}", NOW)
    with pytest.raises(errors.AlreadyExists):
        create_enterprise(identity, enterprise_id, f"user:{unique('intruder')}", NOW)
    assert len(identity.list_bindings(enterprise_id)) == 1


def test_one_principal_roots_two_enterprises_each_with_its_own_credential(
    identity: IdentityStore,
) -> None:
    from jennah.services import admin

    first, second = unique("ent"), unique("ent")
    principal = f"user:{unique('ada')}@example.com"
    tokens = [create_enterprise(identity, e, principal, NOW) for e in (first, second)]
    for enterprise_id, token in zip((first, second), tokens, strict=True):
        caller = _access(identity).authenticate(f"Bearer {token}")
        assert caller == Caller(enterprise_id=enterprise_id, principal=principal)
    # granting a name another enterprise uses neither fails nor touches that user
    outsider = f"user:{unique('bob')}"
    identity.put_user(User(enterprise_id=first, principal=outsider, token_hash="theirs"))
    root = Caller(enterprise_id=second, principal=principal)
    admin.grant_role(identity, root, admin.GrantSpec(principal=outsider, role="member"), NOW)
    assert identity.get_user(first, outsider) == User(
        enterprise_id=first, principal=outsider, token_hash="theirs"
    )
    assert identity.list_bindings(first, outsider) == []
    assert identity.get_user(second, outsider) == User(
        enterprise_id=second, principal=outsider, created_at=NOW
    )


def test_an_administrator_grants_no_reach_wider_than_its_own(identity: IdentityStore) -> None:
    from jennah.services import admin

    enterprise_id = unique("ent")
    create_enterprise(identity, enterprise_id, f"user:{unique('root')}", NOW)
    caller = Caller(enterprise_id=enterprise_id, principal=f"user:{unique('admin')}")
    identity.put_user(User(enterprise_id=enterprise_id, principal=caller.principal))
    others = {"agent_selectors": ["other.*"], "subject_selectors": ["other.*"]}
    identity.put_binding(binding(enterprise_id, caller.principal, Role.ADMINISTRATOR, **others))
    before = identity.list_bindings(enterprise_id)
    everything = {"agent_selectors": ["*"], "subject_selectors": ["*"]}
    for attempt in (
        lambda: admin.grant_role(identity, caller, admin.GrantSpec(
            principal=caller.principal, role="administrator", **everything), NOW),
        lambda: admin.create_api_key(identity, caller, admin.KeySpec(role="member", **everything),
                                     NOW),
    ):  # fmt: skip
        with pytest.raises(errors.PermissionDenied) as refused:
            attempt()
        assert refused.value.reason == "SELECTOR_NOT_COVERED"
        assert refused.value.metadata["selector"] == "*"
    assert identity.list_bindings(enterprise_id) == before
    assert identity.list_api_keys(enterprise_id) == []
    narrower = admin.GrantSpec(
        principal=caller.principal, role="member", agent_selectors=["other.a.*"],
        subject_selectors=["other.b"],
    )  # fmt: skip
    assert admin.grant_role(identity, caller, narrower, NOW).agent_selectors == ["other.a.*"]


def test_only_root_users_count_against_revoking_the_last_root(identity: IdentityStore) -> None:
    from jennah.services import admin

    enterprise_id = unique("ent")
    root = Caller(enterprise_id=enterprise_id, principal=f"user:{unique('root')}")
    create_enterprise(identity, enterprise_id, root.principal, NOW)
    key, _ = _issue_key(identity, root, Role.ROOT)
    identity.revoke_api_key(enterprise_id, key.key_id, NOW)
    _issue_key(identity, root, Role.ROOT)  # a live root key
    identity.put_binding(binding(enterprise_id, f"user:{unique('ghost')}", Role.ROOT))
    assert admin.managing_roots(identity, enterprise_id) == {root.principal}
    with pytest.raises(errors.FailedPrecondition) as refused:
        admin.revoke_role(identity, root, root.principal, "root")
    assert refused.value.reason == "LAST_ROOT"
    assert Role.ROOT in [b.role for b in identity.list_bindings(enterprise_id, root.principal)]
    second = f"user:{unique('second')}"
    admin.grant_role(identity, root, admin.GrantSpec(principal=second, role="root"), NOW)
    admin.revoke_role(identity, root, root.principal, "root")
    assert admin.managing_roots(identity, enterprise_id) == {second}


def test_recovering_a_root_binds_it_and_issues_a_working_credential(
    identity: IdentityStore,
) -> None:
    from jennah.services.enterprises import recover_root

    enterprise_id = unique("ent")
    first = f"user:{unique('root')}"
    create_enterprise(identity, enterprise_id, first, NOW)
    identity.delete_binding(enterprise_id, first, Role.ROOT)  # locked out
    token = recover_root(identity, enterprise_id, first, NOW + timedelta(days=1))
    caller = _access(identity).authenticate(f"Bearer {token}")
    assert caller == Caller(enterprise_id=enterprise_id, principal=first)
    _access(identity).require(caller, Permission.ROLES_MANAGE)
    stored = identity.get_user(enterprise_id, first)
    assert stored is not None and stored.created_at == NOW  # the same user, a new credential
    newcomer = f"user:{unique('new')}"
    recover_root(identity, enterprise_id, newcomer, NOW)
    assert [b.role for b in identity.list_bindings(enterprise_id, newcomer)] == [Role.ROOT]
    with pytest.raises(errors.NotFound):
        recover_root(identity, unique("ent"), newcomer, NOW)


# -- SQLite: the memory store's file ------------------------------------------------


def test_sqlite_identity_shares_the_memory_store_file_in_either_order(tmp_path: Path) -> None:
    from jennah.adapters.sqlite.identity import SqliteIdentityStore
    from jennah.adapters.sqlite.store import SqliteStore
    from jennah.domain.models import ScopeRef

    for first in ("memory", "identity"):
        path = tmp_path / first / "memory.db"
        if first == "memory":
            memory, identity = SqliteStore(path), SqliteIdentityStore(path)
        else:
            identity, memory = SqliteIdentityStore(path), SqliteStore(path)
        enterprise_id = new_enterprise(identity)
        assert memory.get_scope(ScopeRef(enterprise_id=enterprise_id, scope_id="s")) is None
        identity.close()
        memory.close()
        reopened = SqliteIdentityStore(path)  # tables exist: opening again is a no-op
        assert reopened.get_enterprise(enterprise_id) is not None
        reopened.close()


def test_sqlite_identity_is_safe_across_threads(tmp_path: Path) -> None:
    from jennah.adapters.sqlite.identity import SqliteIdentityStore

    store = SqliteIdentityStore(tmp_path / "memory.db")
    enterprise_id = new_enterprise(store)
    keys = [api_key(enterprise_id) for _ in range(40)]
    outcomes = in_parallel(
        [partial(store.create_api_key, key) for key in keys]
        + [partial(store.list_api_keys, enterprise_id) for _ in range(10)]
    )
    assert not [o for o in outcomes if isinstance(o, Exception)]
    assert store.list_api_keys(enterprise_id) == sorted(keys, key=lambda k: k.key_id)
    store.close()


def test_an_older_sqlite_file_is_upgraded_keeping_its_users(tmp_path: Path) -> None:
    """A file of an earlier build keyed users by principal alone; opening it rebuilds the
    table keyed by (enterprise, principal), every row and credential kept."""
    from pysqlite3 import dbapi2

    from jennah.adapters.sqlite.identity import SqliteIdentityStore
    from jennah.adapters.sqlite.store import SqliteStore

    path = tmp_path / "memory.db"
    SqliteStore(path).close()  # the memory store's tables, as an earlier `jnh serve` left them
    secret = new_secret()
    raw = dbapi2.connect(str(path))
    raw.executescript(
        "CREATE TABLE users (principal TEXT NOT NULL PRIMARY KEY, enterprise_id TEXT NOT NULL,"
        " token_hash TEXT, created_at INTEGER) WITHOUT ROWID;"
        f"INSERT INTO users VALUES ('user:root', 'local', '{hash_secret(secret)}', 7);"
        "INSERT INTO users VALUES ('user:ana', 'acme', NULL, NULL);"
    )
    raw.close()
    encoded = base64.urlsafe_b64encode(b"user:root").decode().rstrip("=")
    legacy_token = f"ju_{encoded}_{secret}"  # an earlier build's credential: no enterprise

    for _ in range(2):  # the second open finds the upgraded table: nothing to do
        store = SqliteIdentityStore(path)
        root = store.get_user("local", "user:root")
        assert root is not None and root.token_hash == hash_secret(secret)
        ana = store.get_user("acme", "user:ana")
        assert ana == User(enterprise_id="acme", principal="user:ana")
        caller = _access(store).authenticate(f"Bearer {legacy_token}")
        assert caller == Caller(enterprise_id="local", principal="user:root")
        store.put_user(User(enterprise_id="local", principal="user:ana"))  # a second enterprise
        assert [u.enterprise_id for u in store.find_users("user:ana")] == ["acme", "local"]
        store.close()
    memory = SqliteStore(path)  # the memory store still opens the upgraded file
    memory.close()


# -- Firestore: the document layout and outages ------------------------------------------


@pytest.mark.firestore
def test_firestore_document_layout() -> None:
    from jennah.adapters.firestore.identity import FirestoreIdentityStore
    from tests.support.firestore_emulator import firestore_test_client

    client = firestore_test_client()
    store = FirestoreIdentityStore(client)
    enterprise_id = new_enterprise(store)
    principal = f"user:{unique('ada')}/ops"
    store.put_user(User(enterprise_id=enterprise_id, principal=principal))
    key = api_key(enterprise_id)
    store.create_api_key(key)
    store.put_binding(binding(enterprise_id, principal, Role.MEMBER, agent_selectors=["bot.*"]))

    encoded = principal.replace("/", "%2F")
    enterprise = client.collection("enterprises").document(enterprise_id)
    assert enterprise.get().to_dict() == {
        "enterpriseId": enterprise_id,
        "displayName": "",
        "createdAt": NOW,
    }
    assert enterprise.collection("users").document(encoded).get().exists
    stored_key = enterprise.collection("apiKeys").document(key.key_id).get().to_dict()
    assert stored_key["secretHash"] == key.secret_hash and stored_key["revokedAt"] is None
    stored_binding = enterprise.collection("roleBindings").document(f"{encoded}__member").get()
    assert stored_binding.to_dict()["agentSelectors"] == ["bot.*"]
    listed = client.collection("userIndex").document(encoded).collection("memberships")
    assert listed.document(enterprise_id).get().to_dict() == {"enterpriseId": enterprise_id}
    assert not client.collection("userIndex").document(encoded).get().exists  # claims nothing
    assert client.collection("apiKeyIndex").document(key.key_id).get().to_dict() == {
        "enterpriseId": enterprise_id
    }


@pytest.mark.firestore
def test_firestore_finds_users_written_by_the_one_enterprise_index() -> None:
    """Earlier builds indexed a principal as userIndex/{principal} -> {enterpriseId}
    (one enterprise per principal): such users are found, and the name is not claimed."""
    from jennah.adapters.firestore.identity import FirestoreIdentityStore
    from tests.support.firestore_emulator import firestore_test_client

    client = firestore_test_client()
    store = FirestoreIdentityStore(client)
    first, second = new_enterprise(store), new_enterprise(store)
    principal = f"user:{unique('ada')}"
    earlier = User(enterprise_id=first, principal=principal, token_hash=hash_secret("s"),
                   created_at=NOW)  # fmt: skip
    enterprise = client.collection("enterprises").document(first)
    fields = {"enterpriseId": first, "principal": principal, "tokenHash": earlier.token_hash,
              "createdAt": NOW}  # fmt: skip
    enterprise.collection("users").document(principal).set(fields)
    client.collection("userIndex").document(principal).set({"enterpriseId": first})
    assert store.get_user(first, principal) == earlier
    assert store.find_users(principal) == [earlier]
    theirs = User(enterprise_id=second, principal=principal)
    store.put_user(theirs)
    assert store.find_users(principal) == sorted([earlier, theirs], key=lambda u: u.enterprise_id)


def _outage_store(monkeypatch: pytest.MonkeyPatch, host: str) -> IdentityStore:
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import firestore

    from jennah.adapters.firestore.identity import FirestoreIdentityStore

    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", host)
    client = firestore.Client(project="demo-test", credentials=AnonymousCredentials())  # type: ignore[no-untyped-call]
    return FirestoreIdentityStore(client, timeout_seconds=0.5)


def _every_call(store: IdentityStore) -> list[Callable[[], object]]:
    return [
        lambda: store.create_enterprise(Enterprise(enterprise_id="e")),
        lambda: store.delete_enterprise("e"),
        lambda: store.get_enterprise("e"),
        lambda: store.put_user(User(enterprise_id="e", principal="user:a")),
        lambda: store.get_user("e", "user:a"),
        lambda: store.find_users("user:a"),
        lambda: store.create_api_key(api_key("e")),
        lambda: store.get_api_key("k"),
        lambda: store.list_api_keys("e"),
        lambda: store.revoke_api_key("e", "k", NOW),
        lambda: store.put_binding(binding("e", "user:a", Role.MEMBER)),
        lambda: store.delete_binding("e", "user:a", Role.MEMBER),
        lambda: store.list_bindings("e"),
    ]


def _assert_every_call_fails_within_bound(
    store: IdentityStore, expected: tuple[type[errors.JennahError], ...]
) -> None:
    for call in _every_call(store):
        started = time.monotonic()
        with pytest.raises(expected):
            call()
        assert time.monotonic() - started < 5.0


def test_firestore_unreachable_is_unavailable_within_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store = _outage_store(monkeypatch, f"127.0.0.1:{port}")
    _assert_every_call_fails_within_bound(store, (errors.Unavailable, errors.DeadlineExceeded))


def test_firestore_that_never_answers_exceeds_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as silent:  # accepts connections, never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        store = _outage_store(monkeypatch, f"127.0.0.1:{silent.getsockname()[1]}")
        _assert_every_call_fails_within_bound(store, (errors.DeadlineExceeded,))
