"""Background work: what a process's shared resources serve after its interactive calls.

A formation's delivery and the lifecycle pass after a change run as background work
(`background()`); a request's own work is interactive. Where one process does both (`jnh
serve`), the resources they queue for there (the SQLite file's write lock, the embedding
model's runs) serve a waiting interactive caller before a waiting background one, yet a
waiting background caller at least once every BACKGROUND_EVERY grants (`Turns`), so under
any load a formation still moves on. With nothing waiting, the mark changes nothing.
"""

from __future__ import annotations

import threading
from collections import deque
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


class Slots:
    """At most `count` holders at once in this process. A holder may give its slot up for a
    while (`given_up`), while it waits on something that needs no CPU here; taking it back,
    it goes before the callers still waiting to begin (so what is under way finishes
    first), and those begin in the order they asked."""

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError("a Slots needs at least one slot")
        self._changed = threading.Condition(threading.Lock())
        self._free = count
        # tickets: holders taking their slot back, then callers to begin, each in order
        self._returning: deque[object] = deque()
        self._waiting: deque[object] = deque()
        self._holding = threading.local()

    @contextmanager
    def held(self) -> Iterator[None]:
        """A slot for the block, waiting for one first."""
        self._take(self._waiting)
        try:
            yield
        finally:
            self._give()

    @contextmanager
    def given_up(self) -> Iterator[None]:
        """Inside `held` in this thread: the slot is free for the block, then taken back
        (after those already waiting). Elsewhere: nothing."""
        if not getattr(self._holding, "on", False):
            yield
            return
        self._give()
        try:
            yield
        finally:
            self._take(self._returning)

    def waiting(self) -> int:
        """How many callers wait for a slot now (to begin or to take theirs back)."""
        with self._changed:
            return len(self._returning) + len(self._waiting)

    def _take(self, line: deque[object]) -> None:
        ticket = object()
        with self._changed:
            line.append(ticket)
            try:
                while not self._free or self._next() is not ticket:
                    self._changed.wait()
            except BaseException:
                line.remove(ticket)
                self._changed.notify_all()
                raise
            line.popleft()
            self._free -= 1
            self._changed.notify_all()  # the next in line may find a slot too
        self._holding.on = True

    def _next(self) -> object:
        return self._returning[0] if self._returning else self._waiting[0]

    def _give(self) -> None:
        self._holding.on = False
        with self._changed:
            self._free += 1
            self._changed.notify_all()
