"""The CLI's own configuration: the credential saved by `jnh auth login`.

It lives in `~/.config/jennah/credentials` (`$XDG_CONFIG_HOME/jennah/credentials`
when that is set), mode 0600. Commands use it when neither --token nor
JENNAH_TOKEN gives a credential; the local server's `credentials.json` comes last.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import click
from pydantic import BaseModel, ValidationError

from jennah.auth import write_private_file

LOGIN_FILE = "credentials"


class SavedLogin(BaseModel):
    token: str


def login_path() -> Path:
    return Path(click.get_app_dir("jennah")) / LOGIN_FILE


def read_login() -> SavedLogin | None:
    """The saved login, or None when there is none (or it cannot be read)."""
    try:
        return SavedLogin.model_validate_json(login_path().read_bytes())
    except (OSError, ValidationError):
        return None


def save_login(login: SavedLogin) -> Path:
    path = login_path()
    write_private_file(path, login.model_dump_json(indent=2) + "\n")
    return path


def forget_login() -> bool:
    """Remove the saved login; False when there was none."""
    with contextlib.suppress(FileNotFoundError):
        login_path().unlink()
        return True
    return False
