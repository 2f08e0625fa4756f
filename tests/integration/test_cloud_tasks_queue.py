"""The Cloud Tasks queue adapter on the emulator: a formation task reaches a
stand-in form-worker as a POST with its JSON body; queue errors map to ours.

The emulator's delivery behaviour is asserted as it is (see
tests/support/cloud_tasks_emulator.py), so the worker's tests can rely on it:
a failed delivery is retried, a 2xx acks, a duplicate task name is delivered twice.
"""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest

from jennah import errors
from jennah.adapters.cloud_tasks.queue import CloudTasksQueue, ensure_queue, tasks_client
from jennah.bootstrap import build_cloud_tasks_queue
from jennah.ports.tasks import FormationTask, task_body, task_from_body
from jennah.settings import Settings
from tests.support.cloud_tasks_emulator import (
    cloud_tasks_test_client,
    new_queue,
    queue_path,
    recording_worker,
    session_emulator,
)
from tests.support.emulator_process import free_port

needs_emulator = pytest.mark.cloud_tasks

# How long to keep watching for deliveries that must NOT come: the emulator
# polls its queues every 0.1 s, so a redelivery would show well within this.
QUIET_SECONDS = 1.0


def _task(operation_id: str = "op-1") -> FormationTask:
    return FormationTask(enterprise_id="ent-1", operation_id=operation_id)


def _queue(
    path: str,
    worker_url: str,
    *,
    service_account_email: str | None = None,
    dispatch_deadline: timedelta = timedelta(minutes=30),
) -> CloudTasksQueue:
    return CloudTasksQueue(
        cloud_tasks_test_client(),
        path,
        worker_url,
        service_account_email=service_account_email,
        dispatch_deadline=dispatch_deadline,
    )


def test_the_task_body_is_compact_camel_case_json_and_reads_back() -> None:
    task = _task("op-7")
    assert task_body(task) == b'{"enterpriseId":"ent-1","operationId":"op-7"}'
    assert task_from_body(task_body(task)) == task


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"[]",
        b'{"enterpriseId":"ent-1"}',
        b'{"enterpriseId":"","operationId":"o"}',
    ],
)
def test_a_malformed_task_body_is_invalid_argument(body: bytes) -> None:
    with pytest.raises(errors.InvalidArgument, match="formation task body"):
        task_from_body(body)


@needs_emulator
def test_a_task_reaches_the_worker_as_a_post_with_its_json_body() -> None:
    task = _task("op-delivered")
    with new_queue() as path, recording_worker() as worker:
        _queue(path, worker.url).enqueue(task)
        [delivery] = worker.wait_for(1)
        time.sleep(QUIET_SECONDS)
        assert len(worker.deliveries) == 1  # a 200 acks: no redelivery

    assert delivery.method == "POST"
    assert delivery.path == "/form-worker"
    assert delivery.headers["content-type"] == "application/json"
    assert delivery.body == b'{"enterpriseId":"ent-1","operationId":"op-delivered"}'
    assert json.loads(delivery.body) == {"enterpriseId": "ent-1", "operationId": "op-delivered"}
    assert task_from_body(delivery.body) == task
    # Cloud Tasks' own headers: the task id is the operation id.
    assert delivery.headers["x-cloudtasks-taskname"] == "op-delivered"
    assert delivery.headers["x-cloudtasks-taskretrycount"] == "0"
    assert delivery.headers["x-cloudtasks-taskexecutioncount"] == "0"
    # Unlike production, the emulator sends the full queue path (production: the queue id)
    # and no Authorization header (it ignores OIDC tokens).
    assert delivery.headers["x-cloudtasks-queuename"] == path
    assert "authorization" not in delivery.headers


@needs_emulator
def test_the_emulator_retries_a_task_the_worker_answers_503_until_a_2xx() -> None:
    with new_queue() as path, recording_worker(503, 503, 200) as worker:
        started = time.monotonic()
        _queue(path, worker.url).enqueue(_task("op-retried"))
        deliveries = worker.wait_for(3)
        elapsed = time.monotonic() - started
        time.sleep(QUIET_SECONDS)
        assert len(worker.deliveries) == 3  # the 200 acked it

    assert [d.headers["x-cloudtasks-taskretrycount"] for d in deliveries] == ["0", "1", "2"]
    assert {d.body for d in deliveries} == {task_body(_task("op-retried"))}
    # No backoff: the emulator retries on its next 0.1 s poll (production backs off).
    assert elapsed < 5


@needs_emulator
def test_the_emulator_delivers_a_duplicate_task_name_twice() -> None:
    # Production refuses the second task with ALREADY_EXISTS (which enqueue takes
    # as success), so it delivers once; the emulator ignores task names and
    # delivers both. The worker must be idempotent either way.
    with new_queue() as path, recording_worker() as worker:
        queue = _queue(path, worker.url)
        queue.enqueue(_task("op-twice"))
        queue.enqueue(_task("op-twice"))
        deliveries = worker.wait_for(2)
        time.sleep(QUIET_SECONDS)
        assert len(worker.deliveries) == 2

    assert [d.headers["x-cloudtasks-taskname"] for d in deliveries] == ["op-twice", "op-twice"]
    assert [d.headers["x-cloudtasks-taskretrycount"] for d in deliveries] == ["0", "0"]


@needs_emulator
def test_the_created_task_carries_the_deadline_and_the_oidc_token_of_the_service_account() -> None:
    client = cloud_tasks_test_client()
    with new_queue() as path:
        client.pause_queue(name=path, timeout=10)  # keep the tasks in the queue to read them
        worker_url = "http://127.0.0.1:9/form-worker"
        _queue(
            path,
            worker_url,
            service_account_email="form-worker@demo-test.iam.gserviceaccount.com",
            dispatch_deadline=timedelta(minutes=30),
        ).enqueue(_task("op-signed"))
        _queue(path, worker_url).enqueue(_task("op-unsigned"))
        tasks = {t.name.rsplit("/", 1)[-1]: t for t in client.list_tasks(parent=path, timeout=10)}

    signed, unsigned = tasks["op-signed"], tasks["op-unsigned"]
    assert signed.name == f"{path}/tasks/op-signed"
    assert signed.dispatch_deadline == timedelta(minutes=30)
    assert signed.http_request.url == worker_url
    assert signed.http_request.oidc_token.service_account_email == (
        "form-worker@demo-test.iam.gserviceaccount.com"
    )
    assert signed.http_request.oidc_token.audience == worker_url
    assert "oidc_token" not in unsigned.http_request  # no service account: no token
    assert unsigned.http_request.headers["Content-Type"] == "application/json"


@needs_emulator
def test_a_queue_that_does_not_exist_is_not_found_naming_it() -> None:
    missing = queue_path("never-created")
    with pytest.raises(errors.NotFound, match=missing) as raised:
        _queue(missing, "http://127.0.0.1:9/form-worker").enqueue(_task())
    assert raised.value.metadata == {"queue": missing}


def test_an_unreachable_queue_is_unavailable_naming_it() -> None:
    path = queue_path("formations")
    nobody = tasks_client(f"127.0.0.1:{free_port()}")
    queue = CloudTasksQueue(
        nobody, path, "http://127.0.0.1:9/form-worker",
        service_account_email=None, timeout_seconds=1,
    )  # fmt: skip
    started = time.monotonic()
    with pytest.raises(errors.Unavailable, match=path):
        queue.enqueue(_task())
    assert time.monotonic() - started < 5  # bounded by timeout_seconds, not the client's default


def test_an_operation_id_that_cannot_name_a_task_is_invalid_argument() -> None:
    nobody = tasks_client(f"127.0.0.1:{free_port()}")  # never called
    queue = CloudTasksQueue(
        nobody, queue_path("formations"), "http://127.0.0.1:9/form-worker",
        service_account_email=None,
    )  # fmt: skip
    with pytest.raises(errors.InvalidArgument, match="operation id"):
        queue.enqueue(_task("operations/op 1"))


@needs_emulator
def test_ensure_queue_is_idempotent() -> None:
    client = cloud_tasks_test_client()
    with new_queue() as path:
        ensure_queue(client, path)
        ensure_queue(client, path)
        names = [q.name for q in client.list_queues(parent=path.rsplit("/queues/", 1)[0])]
    assert names.count(path) == 1


@needs_emulator
def test_the_queue_is_built_from_settings_and_the_emulator_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CLOUD_TASKS_EMULATOR_HOST", session_emulator().host)
    with new_queue() as path, recording_worker() as worker:
        settings = Settings(
            tasks_project=path.split("/")[1],
            tasks_location=path.split("/")[3],
            tasks_queue=path.rsplit("/", 1)[-1],
            form_worker_url=worker.url,
        )
        queue = build_cloud_tasks_queue(settings)
        assert isinstance(queue, CloudTasksQueue)
        assert queue.queue_path == path
        assert queue.worker_url == worker.url
        queue.enqueue(_task("op-from-settings"))
        [delivery] = worker.wait_for(1)
    assert delivery.body == task_body(_task("op-from-settings"))


def test_the_queue_needs_the_worker_url() -> None:
    with pytest.raises(errors.FailedPrecondition, match="JENNAH_FORM_WORKER_URL"):
        build_cloud_tasks_queue(Settings(form_worker_url=""))
