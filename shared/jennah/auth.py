"""Callers and bearer credentials.

For now one local enterprise and one root credential: the first server start
(or `jnh auth print-token`) with a data dir writes `<data_dir>/credentials.json`
(mode 0600) holding the enterprise id, the principal and a random token; later
starts reuse it. The server keeps only the token's SHA-256 and compares
hashes in constant time.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ValidationError

from jennah.errors import FailedPrecondition, Unauthenticated

CREDENTIALS_FILE = "credentials.json"
LOCAL_ENTERPRISE_ID = "local"
ROOT_PRINCIPAL = "user:root"
_HINT = "send 'Authorization: Bearer <token>'; `jnh auth print-token` prints the local one"


@dataclass(frozen=True)
class Caller:
    """Who is calling: an enterprise and a principal (`user:<id>` or `api_key:<id>`)."""

    enterprise_id: str
    principal: str


class Authenticator(Protocol):
    def authenticate(self, authorization: str | None) -> Caller:
        """The caller an Authorization header proves; raises Unauthenticated otherwise."""
        ...


class LocalCredentials(BaseModel):
    """The content of `credentials.json`."""

    enterprise_id: str = LOCAL_ENTERPRISE_ID
    principal: str = ROOT_PRINCIPAL
    token: str


def credentials_path(data_dir: Path) -> Path:
    return data_dir / CREDENTIALS_FILE


def ensure_local_credentials(data_dir: Path) -> LocalCredentials:
    """Read the data dir's credentials, creating them (mode 0600) on first use."""
    path = credentials_path(data_dir)
    if not path.exists():
        _create(path)
    return read_local_credentials(data_dir)


def read_local_credentials(data_dir: Path) -> LocalCredentials:
    path = credentials_path(data_dir)
    try:
        return LocalCredentials.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        raise FailedPrecondition(
            f"{path} does not exist; start `jnh serve --data-dir {data_dir}` first",
            reason="NO_LOCAL_CREDENTIALS",
        ) from None
    except ValidationError:
        raise FailedPrecondition(
            f"{path} is not a valid credentials file; delete it to create a new one",
            reason="BAD_LOCAL_CREDENTIALS",
        ) from None


def _create(path: Path) -> None:
    """Write new credentials atomically; if another process won the race, keep its file."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    content = LocalCredentials(token=secrets.token_urlsafe(32)).model_dump_json(indent=2)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(content + "\n")
    with contextlib.suppress(OSError):
        os.chmod(path, 0o600)


def _sha256(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


class TokenAuthenticator:
    """Bearer tokens checked against known SHA-256 hashes, in constant time."""

    def __init__(self, tokens: dict[bytes, Caller]) -> None:
        self._tokens = dict(tokens)

    @classmethod
    def from_credentials(cls, *credentials: LocalCredentials) -> TokenAuthenticator:
        return cls({_sha256(c.token): Caller(c.enterprise_id, c.principal) for c in credentials})

    def authenticate(self, authorization: str | None) -> Caller:
        if not authorization:
            raise Unauthenticated(
                f"the request has no Authorization header; {_HINT}", reason="MISSING_CREDENTIALS"
            )
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthenticated(
                f"the Authorization header is not a bearer token; {_HINT}",
                reason="INVALID_CREDENTIALS",
            )
        digest = _sha256(token.strip())
        found: Caller | None = None
        for known, caller in self._tokens.items():
            if hmac.compare_digest(known, digest):
                found = caller
        if found is None:
            raise Unauthenticated(
                f"the bearer token is not valid; {_HINT}", reason="INVALID_CREDENTIALS"
            )
        return found
