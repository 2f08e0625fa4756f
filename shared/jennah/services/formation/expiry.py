"""Expired formation operations, deleted where nothing else deletes them.

In production Firestore's TTL policy on `expireTime` deletes operation documents;
the embedded default has no such policy, so its workers sweep after a delivery, at
most once per SWEEP_INTERVAL.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta

from jennah.ports.operations import OperationStore

log = logging.getLogger(__name__)

SWEEP_INTERVAL = timedelta(hours=1)


class ExpirySweep:
    """Call it after each delivery: it deletes expired operations when the last sweep is
    SWEEP_INTERVAL old (the first call sweeps)."""

    def __init__(
        self,
        operations: OperationStore,
        now: Callable[[], datetime],
        interval: timedelta = SWEEP_INTERVAL,
    ) -> None:
        self._operations = operations
        self._now = now
        self._interval = interval
        self._last: datetime | None = None
        self._lock = threading.Lock()

    def __call__(self) -> int:
        """Sweep if due; how many operations were deleted."""
        now = self._now()
        with self._lock:
            if self._last is not None and now - self._last < self._interval:
                return 0
            self._last = now
        swept = self._operations.sweep(now)
        if swept:
            log.info("deleted %d expired formation operations", swept)
        return swept
