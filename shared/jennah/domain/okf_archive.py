"""OKF files in one gzip-compressed tar: the body of memory:export and memory:import.

`pack` is deterministic (members in path order, every time, owner and mode fixed, the gzip
header without a time or name): the same files pack to the same bytes. `unpack` takes only
regular files under safe relative paths (directory entries are skipped; links, devices and
FIFOs are refused, as are absolute paths and any `..`), and bounds what it inflates: the
number of members, each one's size and the total, counted on the decompressed stream itself
so a small body cannot inflate without limit.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import zlib
from collections.abc import Mapping
from typing import IO, cast

from jennah.errors import InvalidArgument

MEDIA_TYPE = "application/gzip"
MAX_MEMBERS = 5_000
MAX_MEMBER_BYTES = 1024 * 1024  # one file of the export
MAX_UNPACKED_BYTES = 64 * 1024 * 1024  # all of them, with the tar headers
INVALID_ARCHIVE = "INVALID_ARCHIVE"  # ErrorInfo reason


def pack(files: Mapping[str, bytes]) -> bytes:
    """The files (relative path -> content) as a deterministic .tar.gz."""
    buffer = io.BytesIO()
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as zipped,
        tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as archive,
    ):
        for path in sorted(files):
            check_path(path)
            info = tarfile.TarInfo(path)
            info.size = len(files[path])
            info.mtime = 0
            info.mode = 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            archive.addfile(info, io.BytesIO(files[path]))
    return buffer.getvalue()


def unpack(data: bytes) -> dict[str, bytes]:
    """The regular files of a .tar.gz by relative path; INVALID_ARGUMENT naming the member
    (or the bound) at fault."""
    files: dict[str, bytes] = {}
    stream = _Bounded(
        cast(IO[bytes], gzip.GzipFile(fileobj=io.BytesIO(data), mode="rb")), MAX_UNPACKED_BYTES
    )
    try:
        with tarfile.open(fileobj=stream, mode="r|") as archive:
            for member in archive:
                _take(archive, member, files)
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise _refusal(f"the body is not a readable gzip-compressed tar ({exc})") from None
    return files


def check_path(path: str) -> str:
    """A member path made relative (a leading './' dropped); refused when absolute, when
    any part is empty, '.' or '..', or it holds a backslash."""
    name = path.removeprefix("./")
    parts = name.split("/")
    if (
        not name
        or path.startswith("/")
        or "\\" in name
        or any(part in ("", ".", "..") for part in parts)
    ):
        raise _refusal(f"member {path[:200]!r} is not a safe relative path", member=path)
    return name


def _take(archive: tarfile.TarFile, member: tarfile.TarInfo, files: dict[str, bytes]) -> None:
    if member.isdir():
        if member.name.rstrip("/") not in ("", "."):
            check_path(member.name.rstrip("/"))
        return
    if not member.isfile():
        raise _refusal(
            f"member {member.name[:200]!r} is a link or a special file; only regular files "
            "are taken",
            member=member.name,
        )
    name = check_path(member.name)
    if name in files:
        raise _refusal(f"member {name!r} appears twice", member=name)
    if len(files) >= MAX_MEMBERS:
        raise _refusal(f"the archive has more than {MAX_MEMBERS} files")
    if member.size > MAX_MEMBER_BYTES:
        raise _refusal(
            f"member {name!r} is {member.size} bytes; at most {MAX_MEMBER_BYTES} are allowed",
            member=name,
        )
    extracted = archive.extractfile(member)
    assert extracted is not None  # a regular file always has its data
    files[name] = extracted.read()


def _refusal(message: str, member: str | None = None) -> InvalidArgument:
    metadata = {"member": member[:200]} if member is not None else {}
    return InvalidArgument(message, reason=INVALID_ARCHIVE, metadata=metadata)


class _Bounded(io.RawIOBase):
    """A read-only stream that refuses to give more than `limit` bytes in all."""

    def __init__(self, inner: IO[bytes], limit: int) -> None:
        self._inner = inner
        self._left = limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self._inner.read(min(len(buffer), self._left + 1))
        if len(data) > self._left:
            raise _refusal(
                f"the archive inflates past {MAX_UNPACKED_BYTES} bytes; export and import "
                "smaller scopes"
            )
        self._left -= len(data)
        buffer[: len(data)] = data
        return len(data)
