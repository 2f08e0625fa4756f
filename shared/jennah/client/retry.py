"""Google-style retries: exponential backoff with full jitter, within a total deadline,
on UNAVAILABLE and ABORTED (and a server that cannot be reached), for idempotent calls.

Each route says whether it is idempotent (`jennah.client.routes`); a call on a route that
is not gets no retry unless the caller passes one explicitly.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import TypeVar

from jennah.client.errors import Aborted, ApiError, Unavailable

T = TypeVar("T")
RETRYABLE: tuple[type[ApiError], ...] = (Unavailable, Aborted)  # ConnectionFailed is Unavailable


@dataclass(frozen=True)
class Retry:
    """Backoff from `initial` seconds, times `multiplier` each attempt, capped at `maximum`;
    each sleep a uniform draw in [0, 2 x backoff] capped at `maximum` (api-core's jitter).
    No attempt starts after `deadline` seconds from the first."""

    initial: float = 0.1
    maximum: float = 10.0
    multiplier: float = 2.0
    deadline: float = 60.0
    retryable: tuple[type[ApiError], ...] = RETRYABLE
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False, compare=False)

    def with_deadline(self, deadline: float) -> Retry:
        return replace(self, deadline=deadline)

    def delays(self) -> Iterator[float]:
        backoff = self.initial
        while True:
            yield min(random.uniform(0.0, backoff * 2.0), self.maximum)
            backoff = min(backoff * self.multiplier, self.maximum)

    def call(self, attempt: Callable[[], T]) -> T:
        """`attempt()` until it succeeds, raises what is not retryable, or the deadline
        would pass before the next try (then the last error is raised)."""
        stop = time.monotonic() + self.deadline
        for delay in self.delays():
            try:
                return attempt()
            except self.retryable as err:
                delay = max(delay, _retry_after(err))
                if time.monotonic() + delay > stop:
                    raise
            self.sleep(delay)
        raise AssertionError("unreachable")  # delays() never ends


DEFAULT_RETRY = Retry()


def _retry_after(err: ApiError) -> float:
    """The server's Retry-After, in seconds (0 when it gives none)."""
    value = err.response.headers.get("Retry-After", "") if err.response is not None else ""
    return float(value) if value.isdigit() else 0.0
