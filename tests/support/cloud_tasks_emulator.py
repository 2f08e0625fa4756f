"""The Cloud Tasks emulator for tests: one emulator per test session, a queue per test.

`session_emulator()` uses the emulator at CLOUD_TASKS_EMULATOR_HOST when set
(scripts/test starts one with scripts/cloud-tasks-emulator), otherwise starts
the emulator from .venv-tasks itself on a free port (building the venv with
`scripts/bootstrap --tasks` if needed) and stops it when the interpreter exits.

Queues are cheap: `new_queue()` makes a fresh one per test and deletes it
afterwards, because the emulator retries a failed delivery every ~0.1 s
without limit, even after the test's worker is gone.

`RecordingWorker` stands in for the form-worker: a local HTTP server that
records each delivery and answers with scripted statuses.

What the emulator (gcloud-tasks-emulator 0.6.2) does, unlike production:
- it starts with no queue; create them through the API (`ensure_queue`);
- it delivers a queue's tasks one at a time, in order, waiting for each answer
  (no dispatch deadline);
- a 4xx/5xx answer or an unreachable worker is retried every ~0.1 s, without
  backoff or limit (queue retry settings are ignored); any answer below 400 acks;
- it ignores task names: a second task with the same name is created (no
  ALREADY_EXISTS) and delivered too;
- it sends no Authorization header (OIDC tokens are ignored), and
  X-CloudTasks-QueueName is the full queue path, not the queue id;
- a missing queue is FAILED_PRECONDITION "Queue … does not exist." (production:
  NOT_FOUND); GetQueue of a missing queue fails with UNKNOWN.
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from google.api_core import exceptions as google_errors

from jennah.adapters.cloud_tasks.queue import ensure_queue, tasks_client
from tests.support.emulator_process import Emulator, free_port, launch, listening

ROOT = Path(__file__).resolve().parents[2]
EMULATOR_BINARY = ROOT / ".venv-tasks" / "bin" / "gcloud-tasks-emulator"
PROJECT = "demo-test"
LOCATION = "us-central1"
STARTUP_SECONDS = 30.0
BOOTSTRAP_SECONDS = 300.0


def emulator_binary() -> Path:
    """The emulator executable of .venv-tasks, built by scripts/bootstrap --tasks when missing."""
    if not EMULATOR_BINARY.is_file():
        built = subprocess.run(
            [str(ROOT / "scripts" / "bootstrap"), "--tasks"],
            capture_output=True,
            text=True,
            timeout=BOOTSTRAP_SECONDS,
            check=False,
        )
        if built.returncode != 0 or not EMULATOR_BINARY.is_file():
            raise RuntimeError(
                f"the Cloud Tasks emulator is not installed: {EMULATOR_BINARY} is missing and "
                f"scripts/bootstrap --tasks failed:\n{built.stdout}{built.stderr}"
            )
    return EMULATOR_BINARY


def start_emulator() -> Emulator:
    """Start the emulator on a free local port and wait until it accepts connections."""
    port = free_port()
    command = [str(emulator_binary()), "start", "--port", str(port)]
    return launch("Cloud Tasks emulator", command, f"127.0.0.1:{port}", listening, STARTUP_SECONDS)


@functools.cache
def session_emulator() -> Emulator:
    """The emulator at CLOUD_TASKS_EMULATOR_HOST, or one started for this test session."""
    host = os.environ.get("CLOUD_TASKS_EMULATOR_HOST")
    if not host:
        return start_emulator()
    if not listening(host):
        raise RuntimeError(
            f"CLOUD_TASKS_EMULATOR_HOST={host} does not accept connections; start it with "
            "scripts/cloud-tasks-emulator start, or unset it to let the tests start one"
        )
    return Emulator(host)


@functools.cache
def cloud_tasks_test_client() -> Any:
    """The session's google.cloud.tasks_v2.CloudTasksClient on the emulator."""
    return tasks_client(session_emulator().host)


def queue_path(queue_id: str) -> str:
    return f"projects/{PROJECT}/locations/{LOCATION}/queues/{queue_id}"


@contextlib.contextmanager
def new_queue(client: Any = None) -> Iterator[str]:
    """A fresh queue on the emulator (its path), deleted when the block ends."""
    client = client or cloud_tasks_test_client()
    path = queue_path(f"test-{uuid.uuid4().hex[:12]}")
    ensure_queue(client, path)
    try:
        yield path
    finally:
        with contextlib.suppress(google_errors.GoogleAPICallError):
            client.delete_queue(name=path, timeout=10)


@dataclass(frozen=True)
class Delivery:
    """One request the stand-in worker received."""

    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: bytes


class RecordingWorker:
    """A local HTTP server standing in for the form-worker.

    Answers each request with the next of `statuses` (then 200) and records it
    in `deliveries`; `url` is where tasks should be sent.
    """

    def __init__(self, statuses: list[int] | None = None) -> None:
        self.statuses = list(statuses or [])
        self.deliveries: list[Delivery] = []
        self._changed = threading.Condition()
        worker = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                worker._answer(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}/form-worker"

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Delivery]:
        """The deliveries once there are at least `count` (AssertionError after `timeout`)."""
        with self._changed:
            if not self._changed.wait_for(lambda: len(self.deliveries) >= count, timeout):
                raise AssertionError(
                    f"expected {count} deliveries within {timeout:g} s, got {len(self.deliveries)}"
                )
            return list(self.deliveries)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _answer(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length)
        headers = {name.lower(): value for name, value in request.headers.items()}
        with self._changed:
            status = self.statuses.pop(0) if self.statuses else 200
            self.deliveries.append(Delivery(request.command, request.path, headers, body))
            self._changed.notify_all()
        request.send_response(status)
        request.send_header("Content-Length", "0")
        request.end_headers()


@contextlib.contextmanager
def recording_worker(*statuses: int) -> Iterator[RecordingWorker]:
    worker = RecordingWorker(list(statuses))
    try:
        yield worker
    finally:
        worker.close()
