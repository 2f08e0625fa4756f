"""TaskQueue in process: the embedded default's stand-in for Cloud Tasks.

A pool of worker threads runs each task's handler (the `form-worker`'s work).
Like Cloud Tasks it delivers at least once: a handler that answers RETRY is
delivered again after a back-off, up to `max_attempts`; then the task is given
to `on_abandon` (the operation is finished with the error). `close` waits for
the tasks in flight and drops those waiting to be retried.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from jennah.errors import Unavailable
from jennah.ports.tasks import FormationTask

log = logging.getLogger(__name__)

Handler = Callable[[FormationTask], bool]  # True: done (acknowledged); False: retry later


class LocalTaskQueue:
    def __init__(
        self,
        handler: Handler,
        *,
        workers: int = 4,
        retry_delay_seconds: float = 1.0,
        max_retry_delay_seconds: float = 60.0,
        max_attempts: int = 100,
        on_abandon: Callable[[FormationTask], None] | None = None,
    ) -> None:
        self._handler = handler
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="form-worker")
        self._retry_delay = retry_delay_seconds
        self._max_retry_delay = max_retry_delay_seconds
        self._max_attempts = max_attempts
        self._on_abandon = on_abandon
        self._timers: set[threading.Timer] = set()
        self._lock = threading.Lock()
        self._closed = False

    def enqueue(self, task: FormationTask) -> None:
        """Deliver the task from a worker thread; UNAVAILABLE once the queue is closed."""
        if not self._submit(task, 1):
            raise Unavailable(
                "the local formation workers are shutting down", reason="QUEUE_CLOSED"
            )

    def _submit(self, task: FormationTask, attempt: int) -> bool:
        with self._lock:
            if self._closed:
                return False
            self._pool.submit(self._deliver, task, attempt)
            return True

    def _deliver(self, task: FormationTask, attempt: int) -> None:
        try:
            done = self._handler(task)
        except Exception:  # the handler's defect: treat like a 500, retry
            log.exception("form-worker task %s failed", task.operation_id)
            done = False
        if done:
            return
        if attempt >= self._max_attempts:
            log.error("form-worker task %s abandoned after %d attempts", task.operation_id, attempt)
            if self._on_abandon is not None:
                self._on_abandon(task)
            return
        delay = min(self._retry_delay * 2 ** (attempt - 1), self._max_retry_delay)
        timer = threading.Timer(delay, self._retry, (task, attempt + 1))
        timer.daemon = True
        with self._lock:
            if self._closed:
                return
            self._timers.add(timer)
        timer.start()

    def _retry(self, task: FormationTask, attempt: int) -> None:
        with self._lock:
            self._timers = {t for t in self._timers if t.is_alive()}
        self._submit(task, attempt)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            timers, self._timers = self._timers, set()
        for timer in timers:
            timer.cancel()
        self._pool.shutdown(wait=True)
