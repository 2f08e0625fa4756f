"""Cloud Functions as real processes for tests: `functions-framework` serving one
function (of `functions/` in this checkout, or of a packaged artifact), and a tap that
records what the Cloud Tasks emulator delivers to the form-worker.

`FunctionProcess` runs `functions-framework --source functions/<name>/main.py --target
<target>` (or another `source`, `executable` and `cwd`) on 127.0.0.1 in its own process
group (gunicorn's master and its worker), so `kill()` ends both at once, as a crashed
instance would, and `start()` may bring it back on the same port.

`DeliveryTap` sits between the emulator and the form-worker (point the queue's worker
URL at `tap.url`): it forwards each POST unchanged and records the task's operation, its
queue and the status the worker answered, 502 when the worker could not be reached or
dropped the connection (the emulator then retries, as it does for any failure).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.support.emulator_process import free_port

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = ROOT / "functions"
STARTUP_SECONDS = 30.0
FORWARD_TIMEOUT_SECONDS = 120.0


def functions_framework() -> str:
    """The functions-framework script of the interpreter running the tests."""
    script = Path(sys.executable).with_name("functions-framework")
    return str(script if script.exists() else ROOT / ".venv" / "bin" / "functions-framework")


class FunctionProcess:
    """Function `name` served by functions-framework on 127.0.0.1:`port`: by default
    `functions/<name>/main.py` run from this checkout with the test interpreter's
    functions-framework; `source`, `cwd` and `executable` serve it from elsewhere (an
    artifact, with a venv of its own)."""

    def __init__(
        self,
        name: str,
        target: str,
        env: Mapping[str, str],
        log_dir: Path,
        *,
        port: int | None = None,
        source: Path | None = None,
        cwd: Path = ROOT,
        executable: Path | None = None,
        signature: str | None = None,  # --signature-type; functions-framework's default: http
    ) -> None:
        self.name = name
        self.target = target
        self.env = dict(env)
        self.port = port or free_port()
        self.source = source or FUNCTIONS / name / "main.py"
        self.cwd = cwd
        self.executable = str(executable) if executable else functions_framework()
        self.signature = signature
        self.log_path = log_dir / f"{name}-{self.port}.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FunctionProcess:
        """Start the server (without waiting for it: `wait_ready`); its log is appended to."""
        command = [
            self.executable,
            "--source", str(self.source),
            "--target", self.target,
            *(["--signature-type", self.signature] if self.signature else []),
            "--host", "127.0.0.1",
            "--port", str(self.port),
        ]  # fmt: skip
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                command,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    def wait_ready(self, timeout: float = STARTUP_SECONDS) -> FunctionProcess:
        """Wait until the server accepts connections (a GET would run the function)."""
        assert self.process is not None, f"{self.name} was not started"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(
                    f"{self.name} exited with {self.process.returncode}:\n{self.output}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        raise AssertionError(f"{self.name} did not listen within {timeout:g} s:\n{self.output}")

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL the whole server (master and worker) at once, as a crash would."""
        self._signal(signal.SIGKILL)
        if self.process is not None:
            self.process.wait(timeout=10)

    def stop(self) -> None:
        """SIGTERM the server; SIGKILL it if it does not end within 10 s."""
        stop_all([self])

    def _signal(self, number: int) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, number)

    @property
    def output(self) -> str:
        """The end of the server's log."""
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-6000:]
        except OSError:
            return ""


def stop_all(functions: Iterable[FunctionProcess], timeout: float = 10.0) -> None:
    """SIGTERM every running server at once, then wait; SIGKILL those still running."""
    running = [f for f in functions if f.running]
    for function in running:
        function._signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for function in running:
        assert function.process is not None
        try:
            function.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            function.kill()


@dataclass(frozen=True)
class TapDelivery:
    """One delivery the tap forwarded."""

    operation_id: str | None  # from the task body
    queue: str  # X-CloudTasks-QueueName (the emulator sends the full queue path)
    status: int  # what the worker answered; 502 when it could not be reached or hung up
    started: float  # time.monotonic()
    ended: float


class DeliveryTap:
    """A recording HTTP proxy in front of the form-worker at `target` ("http://host:port")."""

    def __init__(self, target: str) -> None:
        parts = urlsplit(target)
        self._target = (parts.hostname or "127.0.0.1", parts.port or 80)
        self._deliveries: list[TapDelivery] = []
        self._changed = threading.Condition()
        tap = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                tap._forward(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}/"

    def deliveries(self, operation_id: str | None = None) -> list[TapDelivery]:
        with self._changed:
            return [
                d
                for d in self._deliveries
                if operation_id is None or d.operation_id == operation_id
            ]

    def wait_for(
        self,
        done: Callable[[list[TapDelivery]], bool],
        operation_id: str,
        timeout: float = 30.0,
    ) -> list[TapDelivery]:
        """The deliveries of `operation_id` once `done(deliveries)` holds."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                mine = [d for d in self._deliveries if d.operation_id == operation_id]
                if done(mine):
                    return mine
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"deliveries of {operation_id} within {timeout:g} s: "
                        f"{[(d.queue.rsplit('/', 1)[-1], d.status) for d in mine]}"
                    )
                self._changed.wait(left)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _forward(self, request: BaseHTTPRequestHandler) -> None:
        started = time.monotonic()
        body = request.rfile.read(int(request.headers.get("Content-Length") or 0))
        headers = {k: v for k, v in request.headers.items() if k.lower() != "host"}
        try:
            connection = http.client.HTTPConnection(*self._target, timeout=FORWARD_TIMEOUT_SECONDS)
            try:
                connection.request("POST", request.path, body=body, headers=headers)
                answer = connection.getresponse()
                status, payload = answer.status, answer.read()
                content_type = answer.getheader("Content-Type") or "application/json"
            finally:
                connection.close()
        except (OSError, http.client.HTTPException) as exc:
            status, content_type = 502, "text/plain"
            payload = f"the tap could not reach the form-worker: {exc!r}".encode()
        try:
            operation_id = json.loads(body).get("operationId")
        except (ValueError, AttributeError):
            operation_id = None
        delivery = TapDelivery(
            operation_id=operation_id,
            queue=request.headers.get("X-CloudTasks-QueueName", ""),
            status=status,
            started=started,
            ended=time.monotonic(),
        )
        with self._changed:
            self._deliveries.append(delivery)
            self._changed.notify_all()
        with contextlib.suppress(OSError):
            request.send_response(status)
            request.send_header("Content-Type", content_type)
            request.send_header("Content-Length", str(len(payload)))
            request.end_headers()
            request.wfile.write(payload)
