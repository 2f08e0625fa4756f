"""Background work: what a process's shared resources serve after its interactive calls.

A formation's delivery and the lifecycle pass after a change run as background work
(`background()`); a request's own work is interactive. Where one process does both (`jnh
serve`), the resources they queue for there (the SQLite file's write lock, the embedding
model's runs) serve a waiting interactive caller before a waiting background one, yet a
waiting background caller at least once every BACKGROUND_EVERY grants (`Turns`), so under
any load a formation still moves on. With nothing waiting, the mark changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# A waiting background caller is served after at most this many interactive ones in a row.
BACKGROUND_EVERY = 4

_BACKGROUND: ContextVar[bool] = ContextVar("jennah_background_work", default=False)


@contextmanager
def background() -> Iterator[None]:
    """Mark the work done inside (in this thread or context) as background work."""
    token = _BACKGROUND.set(True)
    try:
        yield
    finally:
        _BACKGROUND.reset(token)


def in_background() -> bool:
    """Whether the running work is background work."""
    return _BACKGROUND.get()


class Turns:
    """Whose turn it is at one resource: asked once per grant, under the resource's lock."""

    __slots__ = ("_passed",)

    def __init__(self) -> None:
        self._passed = 0  # interactive grants in a row while a background caller waited

    def background_next(self, interactive_waiting: bool, background_waiting: bool) -> bool:
        """Whether a background caller goes next, given who waits."""
        if background_waiting and (not interactive_waiting or self._passed >= BACKGROUND_EVERY):
            self._passed = 0
            return True
        if background_waiting:
            self._passed += 1
        return False
