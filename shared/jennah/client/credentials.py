"""Where the client finds its server and credential: the same places `jnh` looks.

The endpoint is the argument, else JENNAH_ENDPOINT, else http://127.0.0.1:8080. The
bearer credential is the argument, else JENNAH_TOKEN, else the one `jnh auth login` saved
(~/.config/jennah/credentials, or under $XDG_CONFIG_HOME), else the local server's root
credential in its data directory (JENNAH_DATA_DIR, else ~/.jennah). The enterprise a
Google ID token acts in is the argument, else JENNAH_ENTERPRISE.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel, ValidationError

from jennah.auth import credentials_path, read_local_credentials
from jennah.errors import JennahError
from jennah.settings import Settings

LOGIN_FILE = "credentials"
TOKEN_VARIABLE = "JENNAH_TOKEN"  # also `jnh --token`'s environment variable


class SavedLogin(BaseModel):
    token: str


def login_path() -> Path:
    """Where `jnh auth login` saves its credential (click's per-user config dir)."""
    return Path(click.get_app_dir("jennah")) / LOGIN_FILE


def read_login() -> SavedLogin | None:
    """The saved login, or None when there is none (or it cannot be read)."""
    try:
        return SavedLogin.model_validate_json(login_path().read_bytes())
    except (OSError, ValidationError):
        return None


def local_token(data_dir: Path) -> str | None:
    """The local server's root token, when its data dir holds credentials."""
    if not credentials_path(data_dir).exists():
        return None
    try:
        return read_local_credentials(data_dir).token
    except JennahError:
        return None


def resolve_token(given: str | None, data_dir: Path) -> str | None:
    """`given` (jnh: --token or JENNAH_TOKEN), else the saved login, else the local
    server's root credential."""
    if given:
        return given
    login = read_login()
    if login is not None:
        return login.token
    return local_token(data_dir)


@dataclass(frozen=True)
class Connection:
    """The server and the credential a client uses."""

    endpoint: str
    token: str | None
    enterprise: str | None

    @classmethod
    def resolve(
        cls,
        endpoint: str | None = None,
        token: str | None = None,
        *,
        enterprise: str | None = None,
        data_dir: Path | None = None,
    ) -> Connection:
        """Each argument given wins; the rest come from the environment (module doc)."""
        overrides: dict[str, Any] = {} if data_dir is None else {"data_dir": data_dir}
        settings = Settings(**overrides)
        return cls(
            endpoint=endpoint or settings.endpoint,
            token=resolve_token(token or os.environ.get(TOKEN_VARIABLE), settings.data_dir),
            enterprise=enterprise or settings.enterprise,
        )
