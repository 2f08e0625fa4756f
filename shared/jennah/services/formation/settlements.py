"""Waking a memory:form request when its operation is done in the same process.

A synchronous memory:form waits for its operation (`Formation.wait`). When the
worker runs in the same process (the embedded default's in-process pool), the
worker settles the operation here as soon as it has finished it, and the waiting
request reads it at once instead of at its next poll. A worker in another process
(Cloud Tasks in production) settles nothing here: its waiter keeps polling.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

OperationKey = tuple[str, str]  # (enterprise id, operation id)


class Settlements:
    """Events of the operations awaited in this process, set when they are done."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._awaited: dict[OperationKey, threading.Event] = {}

    @contextmanager
    def watch(self, enterprise_id: str, operation_id: str) -> Iterator[threading.Event]:
        """An event set once the operation is settled here, while the block runs."""
        key = (enterprise_id, operation_id)
        with self._lock:
            event = self._awaited.setdefault(key, threading.Event())
        try:
            yield event
        finally:
            with self._lock:
                self._awaited.pop(key, None)

    def settle(self, enterprise_id: str, operation_id: str) -> None:
        """The operation is done (finished in its store): wake its waiter, if any."""
        with self._lock:
            event = self._awaited.get((enterprise_id, operation_id))
        if event is not None:
            event.set()
