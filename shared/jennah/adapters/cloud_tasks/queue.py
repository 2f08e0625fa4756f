"""The task queue on Cloud Tasks: each formation task is an HTTP task to the form-worker.

An emulator host (CLOUD_TASKS_EMULATOR_HOST, read into Settings) points the client
at a local emulator (scripts/cloud-tasks-emulator). Unlike the Spanner and Firestore
libraries, google-cloud-tasks does not read such a variable itself: `tasks_client`
takes it.
"""

from __future__ import annotations

import re
from datetime import timedelta

from google.api_core import exceptions as google_errors
from google.api_core.retry import Retry, if_exception_type
from google.cloud import tasks_v2

from jennah import errors
from jennah.ports.tasks import FormationTask, task_body

DEFAULT_DISPATCH_DEADLINE = timedelta(minutes=30)
DEFAULT_TIMEOUT_SECONDS = 10.0

# Cloud Tasks task ids: letters, digits, hyphens and underscores, at most 500.
_TASK_ID = re.compile(r"[A-Za-z0-9_-]{1,500}")


class CloudTasksQueue:
    """A `TaskQueue` that creates one HTTP task (POST `worker_url`) per enqueue.

    The task is named after the operation, so production Cloud Tasks refuses a
    second task for the same operation with ALREADY_EXISTS, which counts as
    success. Correctness never relies on that: the emulator ignores task names
    (it delivers a duplicate twice), and production forgets a name some time
    after the task ran. The form-worker is idempotent.
    """

    def __init__(
        self,
        client: tasks_v2.CloudTasksClient,
        queue_path: str,
        worker_url: str,
        *,
        service_account_email: str | None,
        dispatch_deadline: timedelta = DEFAULT_DISPATCH_DEADLINE,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        self._client = client
        self.queue_path = queue_path
        self.worker_url = worker_url
        self._service_account_email = service_account_email or None
        self._dispatch_deadline = dispatch_deadline
        self._timeout_seconds = timeout_seconds
        # Creating a named task is safe to repeat: a repeat that finds the
        # first one answers ALREADY_EXISTS. So UNAVAILABLE is retried.
        self._retry = Retry(
            predicate=if_exception_type(google_errors.ServiceUnavailable),
            initial=0.1,
            maximum=1.0,
            multiplier=2.0,
            timeout=timeout_seconds,
        )

    def enqueue(self, task: FormationTask) -> None:
        if not _TASK_ID.fullmatch(task.operation_id):
            raise errors.InvalidArgument(
                f"operation id {task.operation_id!r} cannot name a Cloud Tasks task: "
                "it must be 1-500 letters, digits, hyphens or underscores",
                field="operation_id",
            )
        try:
            self._client.create_task(
                parent=self.queue_path,
                task=self._http_task(task),
                retry=self._retry,
                timeout=self._timeout_seconds,
            )
        except google_errors.AlreadyExists:
            return  # production: this operation's task is already queued
        except (google_errors.GoogleAPICallError, google_errors.RetryError) as exc:
            raise _mapped(exc, self.queue_path, self._timeout_seconds) from exc

    def _http_task(self, task: FormationTask) -> tasks_v2.Task:
        oidc_token = (
            tasks_v2.OidcToken(
                service_account_email=self._service_account_email, audience=self.worker_url
            )
            if self._service_account_email
            else None
        )
        return tasks_v2.Task(
            name=f"{self.queue_path}/tasks/{task.operation_id}",
            http_request=tasks_v2.HttpRequest(
                url=self.worker_url,
                http_method=tasks_v2.HttpMethod.POST,
                headers={"Content-Type": "application/json"},
                body=task_body(task),
                oidc_token=oidc_token,
            ),
            dispatch_deadline=self._dispatch_deadline,
        )


def ensure_queue(
    client: tasks_v2.CloudTasksClient,
    queue_path: str,
    *,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
) -> None:
    """Create the queue `queue_path` unless it exists (for the emulator and tests;
    production queues are Terraform's)."""
    parent = queue_path.rsplit("/queues/", 1)[0]
    try:
        client.create_queue(
            parent=parent,
            queue=tasks_v2.Queue(name=queue_path),
            retry=None,
            timeout=timeout_seconds,
        )
    except google_errors.AlreadyExists:
        return
    except google_errors.GoogleAPICallError as exc:
        raise _mapped(exc, queue_path, timeout_seconds) from exc


def tasks_client(emulator_host: str | None = None) -> tasks_v2.CloudTasksClient:
    """A Cloud Tasks client: on the emulator at `emulator_host` (plain-text gRPC,
    no credentials) when given, else the default client (Application Default
    Credentials)."""
    if not emulator_host:
        return tasks_v2.CloudTasksClient()
    import grpc  # type: ignore[import-untyped]
    from google.cloud.tasks_v2.services.cloud_tasks.transports import CloudTasksGrpcTransport

    channel = grpc.insecure_channel(emulator_host)
    return tasks_v2.CloudTasksClient(transport=CloudTasksGrpcTransport(channel=channel))


def make_queue(
    *,
    project: str,
    location: str,
    queue: str,
    worker_url: str,
    service_account_email: str | None = None,
    dispatch_deadline: timedelta = DEFAULT_DISPATCH_DEADLINE,
    emulator_host: str | None = None,
    client: tasks_v2.CloudTasksClient | None = None,
) -> CloudTasksQueue:
    """The queue `queue` of `project` in `location`, its tasks POSTed to `worker_url`
    (with an OIDC token of `service_account_email` when given); its client on the
    emulator at `emulator_host` when given, unless `client` is passed."""
    if client is None:
        client = tasks_client(emulator_host)
    return CloudTasksQueue(
        client,
        tasks_v2.CloudTasksClient.queue_path(project, location, queue),
        worker_url,
        service_account_email=service_account_email or None,
        dispatch_deadline=dispatch_deadline,
    )


def _mapped(
    exc: google_errors.GoogleAPICallError | google_errors.RetryError,
    queue_path: str,
    timeout_seconds: float,
) -> errors.JennahError:
    """The jennah error for a failed call on the queue `queue_path`."""
    metadata = {"queue": queue_path}
    if isinstance(exc, google_errors.RetryError):  # the bounded retry of UNAVAILABLE gave up
        last = exc.cause.message if isinstance(exc.cause, google_errors.GoogleAPICallError) else ""
        return errors.Unavailable(
            f"Cloud Tasks queue {queue_path} could not be reached within {timeout_seconds:g} s"
            + (f": {last}" if last else ""),
            metadata=metadata,
        )
    if isinstance(exc, google_errors.ServiceUnavailable):
        return errors.Unavailable(
            f"Cloud Tasks queue {queue_path} could not be reached: {exc.message}",
            metadata=metadata,
        )
    if isinstance(exc, google_errors.DeadlineExceeded):
        return errors.Unavailable(
            f"Cloud Tasks queue {queue_path} did not answer within {timeout_seconds:g} s",
            metadata=metadata,
        )
    # The emulator reports a missing queue as FAILED_PRECONDITION "Queue … does not exist.";
    # production as NOT_FOUND.
    if isinstance(exc, google_errors.NotFound) or (
        isinstance(exc, google_errors.FailedPrecondition) and "does not exist" in exc.message
    ):
        return errors.NotFound(f"Cloud Tasks queue {queue_path} does not exist", metadata=metadata)
    if isinstance(exc, google_errors.ResourceExhausted):
        return errors.ResourceExhausted(
            f"Cloud Tasks queue {queue_path} is over quota: {exc.message}", metadata=metadata
        )
    # Anything else (permission denied, a task the API rejects, a disabled queue)
    # is a deployment fault, not the caller's.
    status = exc.grpc_status_code.name if exc.grpc_status_code else exc.code
    return errors.Internal(
        f"Cloud Tasks queue {queue_path} refused the call ({status}): {exc.message}",
        metadata=metadata,
    )
