"""Authentication over HTTP, the wiring of identity and access, and the local root
credential that `jnh serve` creates on its first start and reuses afterwards."""

from __future__ import annotations

import json
import stat
import sys
import types
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from jennah import bootstrap
from jennah.adapters.google_id_token import GoogleIdTokenVerifier
from jennah.api.app import create_app
from jennah.auth import (
    LocalCredentials,
    credentials_path,
    read_local_credentials,
    write_local_credentials,
)
from jennah.cli.serve import ensure_local_root
from jennah.domain.access import ApiKey, Role, RoleBinding
from jennah.domain.billing import Plan
from jennah.errors import FailedPrecondition, Unauthenticated
from jennah.services.access import api_key_token, hash_secret
from jennah.settings import Settings
from tests.unit.fakes import Api, FakeIdentityStore, FakeStore, add_enterprise, make_container
from tests.unit.fakes import FakeVerifier as StubVerifier

SECRET = "ab" * 32


def add_key(api: Api, key_id: str, **fields: Any) -> str:
    api.identity.create_api_key(
        ApiKey(enterprise_id="local", key_id=key_id, secret_hash=hash_secret(SECRET),
               created_by="user:root", created_at=datetime.now(UTC), **fields)
    )  # fmt: skip
    api.identity.put_binding(
        RoleBinding(enterprise_id="local", principal=f"api_key:{key_id}", role=Role.MEMBER,
                    agent_selectors=["*"], subject_selectors=["*"])
    )  # fmt: skip
    return api_key_token(key_id, SECRET)


def whoami(api: Api, token: str | None) -> Any:
    return api.get("/v1/caller", token=token)


# credentials over HTTP


def test_an_api_key_acts_as_itself_never_as_its_creator(tmp_path: Path) -> None:
    api = Api.create(tmp_path)
    token = add_key(api, "k1")
    body = whoami(api, token).get_json()
    assert (body["principal"], body["kind"], body["roles"]) == ("api_key:k1", "API_KEY", ["member"])
    committed = api.post("/v1/scopes/bot/memory:commit", {"chunks": [{"text": "x"}]}, token=token)
    assert committed.status_code == 200
    assert api.store.get_scope(api.store.plans[-1].scope).created_by == "api_key:k1"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"revoked_at": datetime(2026, 1, 1, tzinfo=UTC)}, "API key k1 has been revoked"),
        ({"expire_time": datetime(2026, 1, 1, tzinfo=UTC)}, "API key k1 expired at 2026-01-01"),
    ],
)
def test_a_revoked_or_expired_key_is_unauthenticated(
    tmp_path: Path, fields: dict[str, Any], message: str
) -> None:
    api = Api.create(tmp_path)
    response = whoami(api, add_key(api, "k1", **fields))
    assert response.status_code == 401
    assert response.get_json()["error"]["message"].startswith(message)
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="jennah"'


@pytest.mark.parametrize(
    "header",
    [
        "Bearer wrong",
        "Basic dXNlcjpwYXNz",
        "Bearer",
        "token",
        f"Bearer jk_k1_{'cd' * 32}",  # right key id, wrong secret
        "Bearer jk_k1",
        "Bearer ju_%%%_x",
        "Bearer ju_dXNlcjpyb290_wrong",  # user:root with a wrong secret
    ],
)
def test_a_malformed_or_wrong_credential_is_unauthenticated(tmp_path: Path, header: str) -> None:
    api = Api.create(tmp_path)
    add_key(api, "k1")
    response = api.app.test_client().get("/v1/caller", headers={"Authorization": header})
    assert response.status_code == 401
    error = response.get_json()["error"]
    assert error["status"] == "UNAUTHENTICATED"
    assert "k1" not in error["message"] and "root" not in error["message"]


def test_a_google_id_token_is_accepted_only_with_a_verifier(tmp_path: Path) -> None:
    api = Api.create(tmp_path)
    api.identity.put_user(api.identity.get_user("local", "user:root").model_copy(  # type: ignore[union-attr]
        update={"principal": "user:ana@example.com", "token_hash": None}))  # fmt: skip
    assert whoami(api, "google-id-token").status_code == 401  # no audience configured
    with_verifier = make_container(tmp_path, identity=api.identity, verifier=StubVerifier())
    client = create_app(with_verifier).test_client()
    answer = client.get("/v1/caller", headers={"Authorization": "Bearer google-id-token"})
    assert answer.get_json()["principal"] == "user:ana@example.com"
    refused = client.get("/v1/caller", headers={"Authorization": "Bearer forged"})
    assert refused.status_code == 401
    assert "bad signature" in refused.get_json()["error"]["message"]


def test_every_scope_takes_the_callers_enterprise(tmp_path: Path) -> None:
    api = Api.create(tmp_path)
    acme = add_enterprise(api.identity, "acme", "user:ann", "ef" * 32)
    response = api.post("/v1/scopes/bot/memory:commit", {"chunks": [{"text": "x"}]}, token=acme)
    assert response.status_code == 200
    assert api.store.plans[-1].scope.enterprise_id == "acme"
    assert [s.scope.enterprise_id for s in api.store.list_scopes("acme")] == ["acme"]
    assert api.store.list_scopes("local") == []


# wiring


def test_the_container_builds_the_verifier_only_with_an_audience(tmp_path: Path) -> None:
    assert bootstrap.build_verifier(Settings(data_dir=tmp_path)) is None
    verifier = bootstrap.build_verifier(Settings(data_dir=tmp_path, oidc_audience="aud-1"))
    assert isinstance(verifier, GoogleIdTokenVerifier)
    assert verifier._audience == "aud-1"


def test_the_sqlite_identity_store_shares_the_memory_file(tmp_path: Path) -> None:
    from jennah.adapters.sqlite.identity import SqliteIdentityStore

    identity = bootstrap.build_identity(Settings(data_dir=tmp_path / "data"))
    assert isinstance(identity, SqliteIdentityStore)
    assert identity.path == tmp_path / "data" / "memory.db"


def test_the_firestore_identity_store_gets_the_configured_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[dict[str, Any]] = []

    class Client:
        def __init__(self, **kwargs: Any) -> None:
            made.append(kwargs)

    import google.cloud

    fake = types.ModuleType("google.cloud.firestore")
    fake.Client = Client  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "google.cloud.firestore", fake)
    monkeypatch.setattr(google.cloud, "firestore", fake, raising=False)
    settings = Settings(control="firestore", firestore_project="p1", firestore_database="db1")
    identity = bootstrap.build_identity(settings)
    assert type(identity).__name__ == "FirestoreIdentityStore"
    assert made == [{"project": "p1", "database": "db1"}]


def test_nothing_is_built_before_it_is_used(tmp_path: Path) -> None:
    container = bootstrap.Container(Settings(data_dir=tmp_path / "lazy"))
    assert not (tmp_path / "lazy").exists()
    _ = container.access
    assert (tmp_path / "lazy" / "memory.db").exists()
    container.close()


# the local root credential


def local(tmp_path: Path, identity: FakeIdentityStore | None = None) -> bootstrap.Container:
    return bootstrap.Container(
        Settings(data_dir=tmp_path, embedder="hashing"),
        store=FakeStore(),
        identity=identity or FakeIdentityStore(),
    )


def test_the_first_start_creates_the_local_enterprise_and_a_private_credential(
    tmp_path: Path,
) -> None:
    container = local(tmp_path)
    assert container.ledger.get_billing("local").plan is Plan.FREE  # no settings yet
    root = ensure_local_root(container)
    assert root.created_enterprise and not root.rotated
    assert container.ledger.get_billing("local").plan is Plan.ENTERPRISE  # for development
    path = credentials_path(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    stored = json.loads(path.read_text())
    assert stored == {"enterprise_id": "local", "principal": "user:root",
                      "token": root.token}  # fmt: skip
    caller = container.access.authenticate(f"Bearer {root.token}")
    assert (caller.enterprise_id, caller.principal) == ("local", "user:root")
    assert container.access.grants(caller).agent_selectors == ("*",)
    user = container.identity.get_user("local", "user:root")
    assert user is not None and root.token not in user.model_dump_json()


def test_later_starts_reuse_the_credential(tmp_path: Path) -> None:
    identity = FakeIdentityStore()
    first = ensure_local_root(local(tmp_path, identity))
    again = ensure_local_root(local(tmp_path, identity))
    assert again.token == first.token
    assert not again.created_enterprise and not again.rotated


@pytest.mark.parametrize("damage", ["delete", "garble", "foreign"])
def test_a_missing_or_stale_file_gets_a_new_root_credential(tmp_path: Path, damage: str) -> None:
    identity = FakeIdentityStore()
    first = ensure_local_root(local(tmp_path, identity))
    path = credentials_path(tmp_path)
    if damage == "delete":
        path.unlink()
    elif damage == "garble":
        path.write_text("not json")
    else:  # a credentials.json from an older version: a bare random token
        write_local_credentials(tmp_path, LocalCredentials(token="old-random-token"))
    container = local(tmp_path, identity)
    again = ensure_local_root(container)
    assert again.rotated and not again.created_enterprise
    assert read_local_credentials(tmp_path).token == again.token
    with pytest.raises(Unauthenticated):
        container.access.authenticate(f"Bearer {first.token}")
    assert container.access.authenticate(f"Bearer {again.token}").principal == ("user:root")


def test_reading_missing_or_broken_credentials_is_a_failed_precondition(tmp_path: Path) -> None:
    with pytest.raises(FailedPrecondition):
        read_local_credentials(tmp_path)
    credentials_path(tmp_path).write_text("not json")
    with pytest.raises(FailedPrecondition):
        read_local_credentials(tmp_path)


def test_a_key_expiring_now_is_refused(tmp_path: Path) -> None:
    api = Api.create(tmp_path)
    soon = datetime.now(UTC) + timedelta(hours=1)
    token = add_key(api, "k1", expire_time=soon)
    assert whoami(api, token).status_code == 200
    api.container.now = lambda: soon  # the clock reaches the expiry
    api.container._access = None
    assert whoami(api, token).status_code == 401
