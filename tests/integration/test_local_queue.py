"""LocalTaskQueue, the embedded default's Cloud Tasks: at-least-once delivery to a pool,
retries with back-off, abandonment after max_attempts, and a close that drops
pending retries but waits for the work in flight.

Integration: a real thread pool and timers. The short sleeps left only give a wrong retry
the chance to show (a loaded machine can hide it, never fail a correct queue)."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable

import pytest

from jennah.adapters.local_queue import LocalTaskQueue
from jennah.errors import Unavailable
from jennah.ports.tasks import FormationTask

TASK = FormationTask(enterprise_id="local", operation_id="op_" + "a" * 32)
OTHER = FormationTask(enterprise_id="local", operation_id="op_" + "b" * 32)
# Seconds a test waits for something the pool does in milliseconds: a bound on a wait for a
# condition, never a sleep, so it is generous (a loaded 2-core CI machine) and costs nothing
# when the condition comes sooner.
PATIENCE = 60.0


class Handler:
    """Records each delivery (task, monotonic time) and answers from `answer`."""

    def __init__(self, answer: Callable[[FormationTask, int], bool]) -> None:
        self.answer = answer
        self.deliveries: list[tuple[FormationTask, float]] = []
        self._lock = threading.Lock()

    def __call__(self, task: FormationTask) -> bool:
        with self._lock:
            self.deliveries.append((task, time.monotonic()))
            count = sum(1 for t, _ in self.deliveries if t == task)
        return self.answer(task, count)

    def count(self, task: FormationTask = TASK) -> int:
        with self._lock:
            return sum(1 for t, _ in self.deliveries if t == task)

    def gaps(self) -> list[float]:
        times = [at for _, at in self.deliveries]
        return [b - a for a, b in itertools.pairwise(times)]


def eventually(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert time.monotonic() < deadline, "the pool did not get there in time"
        time.sleep(0.005)


def test_a_task_is_delivered_once_when_its_handler_succeeds() -> None:
    handler = Handler(lambda task, n: True)
    abandoned: list[FormationTask] = []
    queue = LocalTaskQueue(handler, retry_delay_seconds=0.01, on_abandon=abandoned.append)
    queue.enqueue(TASK)
    queue.enqueue(OTHER)
    eventually(lambda: handler.count(TASK) == 1 and handler.count(OTHER) == 1)
    time.sleep(0.05)  # no retry follows an acknowledged delivery
    queue.close()
    assert (handler.count(TASK), handler.count(OTHER), abandoned) == (1, 1, [])


def test_a_retry_backs_off_and_is_abandoned_after_max_attempts() -> None:
    handler = Handler(lambda task, n: False)
    abandoned: list[FormationTask] = []
    gone = threading.Event()

    def abandon(task: FormationTask) -> None:
        abandoned.append(task)
        gone.set()

    queue = LocalTaskQueue(
        handler, retry_delay_seconds=0.02, max_retry_delay_seconds=0.04, max_attempts=4,
        on_abandon=abandon,
    )  # fmt: skip
    queue.enqueue(TASK)
    assert gone.wait(PATIENCE)
    queue.close()
    assert handler.count() == 4 and abandoned == [TASK]
    # delays 0.02, 0.04, then capped at 0.04 (timers never fire early)
    for gap, delay in zip(handler.gaps(), (0.02, 0.04, 0.04), strict=True):
        assert gap >= delay * 0.9, handler.gaps()


def test_a_task_that_succeeds_on_a_retry_is_not_abandoned() -> None:
    handler = Handler(lambda task, n: n == 2)
    abandoned: list[FormationTask] = []
    queue = LocalTaskQueue(
        handler, retry_delay_seconds=0.01, max_attempts=3, on_abandon=abandoned.append
    )
    queue.enqueue(TASK)
    eventually(lambda: handler.count() == 2)
    time.sleep(0.05)
    queue.close()
    assert handler.count() == 2 and abandoned == []


def test_a_raising_handler_is_retried(caplog: pytest.LogCaptureFixture) -> None:
    def answer(task: FormationTask, n: int) -> bool:
        if n == 1:
            raise RuntimeError("a defect in the worker")
        return True

    handler = Handler(answer)
    queue = LocalTaskQueue(handler, retry_delay_seconds=0.01, max_attempts=3)
    queue.enqueue(TASK)
    eventually(lambda: handler.count() == 2)
    queue.close()
    assert handler.count() == 2
    assert "a defect in the worker" in caplog.text


def test_without_on_abandon_a_task_is_dropped_after_max_attempts() -> None:
    handler = Handler(lambda task, n: False)
    queue = LocalTaskQueue(handler, retry_delay_seconds=0.005, max_attempts=2)
    queue.enqueue(TASK)
    eventually(lambda: handler.count() == 2)
    time.sleep(0.05)
    queue.close()
    assert handler.count() == 2


def test_close_waits_for_work_in_flight_and_drops_pending_retries() -> None:
    release = threading.Event()

    def answer(task: FormationTask, n: int) -> bool:
        if task == TASK:  # in flight until the test releases it
            release.wait(PATIENCE)
            return True
        return False  # OTHER: a retry is pending when the queue closes

    handler = Handler(answer)
    queue = LocalTaskQueue(handler, retry_delay_seconds=0.1, max_attempts=10)
    queue.enqueue(TASK)
    queue.enqueue(OTHER)
    eventually(lambda: handler.count(TASK) == 1 and handler.count(OTHER) == 1)
    eventually(lambda: bool(queue._timers))  # OTHER's retry timer is set (was a 10 ms sleep)

    closing = threading.Thread(target=queue.close)
    closing.start()
    closing.join(0.1)
    assert closing.is_alive()  # close waits for TASK, still in flight
    release.set()
    closing.join(PATIENCE)
    assert not closing.is_alive()

    time.sleep(0.2)  # past OTHER's retry delay: the retry was dropped
    with pytest.raises(Unavailable) as refused:  # a closed queue takes nothing more
        queue.enqueue(TASK)
    assert refused.value.reason == "QUEUE_CLOSED"
    assert (handler.count(TASK), handler.count(OTHER)) == (1, 1)
