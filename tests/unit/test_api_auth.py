"""Local credentials and bearer-token authentication."""

from __future__ import annotations

import hashlib
import json
import stat
from pathlib import Path

import pytest

from jennah import bootstrap
from jennah.auth import (
    Caller,
    LocalCredentials,
    TokenAuthenticator,
    credentials_path,
    ensure_local_credentials,
    read_local_credentials,
)
from jennah.errors import FailedPrecondition, Unauthenticated
from jennah.settings import Settings
from tests.unit.fakes import Api


def test_first_use_creates_a_private_credentials_file(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    credentials = ensure_local_credentials(data_dir)
    path = credentials_path(data_dir)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    stored = json.loads(path.read_text())
    assert stored == {"enterprise_id": "local", "principal": "user:root",
                      "token": credentials.token}  # fmt: skip
    assert len(credentials.token) >= 32


def test_later_starts_reuse_the_credentials(tmp_path: Path) -> None:
    first = ensure_local_credentials(tmp_path)
    assert ensure_local_credentials(tmp_path) == first
    assert ensure_local_credentials(tmp_path / "other").token != first.token


def test_reading_missing_or_broken_credentials_is_a_failed_precondition(tmp_path: Path) -> None:
    with pytest.raises(FailedPrecondition):
        read_local_credentials(tmp_path)
    credentials_path(tmp_path).write_text("not json")
    with pytest.raises(FailedPrecondition):
        read_local_credentials(tmp_path)


def test_the_authenticator_resolves_the_caller_and_keeps_only_hashes() -> None:
    authenticator = TokenAuthenticator.from_credentials(LocalCredentials(token="s3cret"))
    assert authenticator.authenticate("Bearer s3cret") == Caller("local", "user:root")
    assert authenticator.authenticate("bearer  s3cret ") == Caller("local", "user:root")
    assert "s3cret" not in repr(vars(authenticator))
    assert hashlib.sha256(b"s3cret").digest() in vars(authenticator)["_tokens"]


@pytest.mark.parametrize("header", [None, "", "Bearer", "Bearer other", "Basic s3cret", "s3cret"])
def test_anything_else_is_unauthenticated(header: str | None) -> None:
    authenticator = TokenAuthenticator.from_credentials(LocalCredentials(token="s3cret"))
    with pytest.raises(Unauthenticated):
        authenticator.authenticate(header)


def test_bootstrap_authenticates_with_the_data_dirs_token(tmp_path: Path) -> None:
    container = bootstrap.Container(Settings(data_dir=tmp_path, embedder="hashing"))
    token = ensure_local_credentials(tmp_path).token
    assert container.authenticator.authenticate(f"Bearer {token}").principal == "user:root"


def test_the_first_bootstrap_creates_the_credentials(tmp_path: Path) -> None:
    container = bootstrap.Container(Settings(data_dir=tmp_path / "fresh"))
    with pytest.raises(Unauthenticated):
        container.authenticator.authenticate("Bearer nope")
    assert credentials_path(tmp_path / "fresh").exists()


def test_every_scope_takes_the_callers_enterprise(tmp_path: Path) -> None:
    api = Api.create(tmp_path)
    other = LocalCredentials(enterprise_id="acme", principal="user:ann", token="ann-token")
    api.container._authenticator = TokenAuthenticator.from_credentials(other)
    response = api.post("/v1/scopes/bot/memory:commit", {"chunks": [{"text": "x"}]},
                        token="ann-token")  # fmt: skip
    assert response.status_code == 200
    assert api.store.plans[-1].scope.enterprise_id == "acme"
