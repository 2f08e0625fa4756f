"""Tests that coordinate threads: wait for a condition (never for a while), start a thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

WAIT_S = 60.0  # a bound on a wait for a condition that comes true at once when all is well


def until(condition: Callable[[], bool], timeout: float = WAIT_S) -> None:
    """Return once `condition()` holds; fail the test if it never does within `timeout`."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition never came true"
        time.sleep(0.001)


def started(target: Callable[[], None]) -> threading.Thread:
    """A daemon thread running `target`, started."""
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread
