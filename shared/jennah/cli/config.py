"""The CLI's own configuration: the credential saved by `jnh auth login`.

It lives in `~/.config/jennah/credentials` (`$XDG_CONFIG_HOME/jennah/credentials`
when that is set), mode 0600. Commands use it when neither --token nor
JENNAH_TOKEN gives a credential; the local server's `credentials.json` comes last.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from jennah.auth import write_private_file
from jennah.client.credentials import LOGIN_FILE, SavedLogin, login_path, read_login

__all__ = ["LOGIN_FILE", "SavedLogin", "forget_login", "login_path", "read_login", "save_login"]


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
