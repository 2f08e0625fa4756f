"""The local server's root credential file, `<data_dir>/credentials.json`.

`jnh serve` writes it (mode 0600) when it creates the local enterprise and its
root user, and `jnh auth print-token` and `jnh` read it. It holds a development
user credential (`ju_…`, see `jennah.services.access`); the server keeps only
the credential's hash, in the identity store.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from pydantic import BaseModel, ValidationError

from jennah.domain.access import LOCAL_ENTERPRISE_ID, ROOT_PRINCIPAL
from jennah.errors import FailedPrecondition

CREDENTIALS_FILE = "credentials.json"


class LocalCredentials(BaseModel):
    """The content of `credentials.json`."""

    enterprise_id: str = LOCAL_ENTERPRISE_ID
    principal: str = ROOT_PRINCIPAL
    token: str


def credentials_path(data_dir: Path) -> Path:
    return data_dir / CREDENTIALS_FILE


def read_local_credentials(data_dir: Path) -> LocalCredentials:
    """The data dir's credentials; FailedPrecondition when missing or unreadable."""
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
            f"{path} is not a valid credentials file; the next `jnh serve` replaces it",
            reason="BAD_LOCAL_CREDENTIALS",
        ) from None


def write_private_file(path: Path, content: str) -> None:
    """Replace `path` atomically with `content`, readable by its owner only (0600)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_local_credentials(data_dir: Path, credentials: LocalCredentials) -> Path:
    path = credentials_path(data_dir)
    write_private_file(path, credentials.model_dump_json(indent=2) + "\n")
    return path
