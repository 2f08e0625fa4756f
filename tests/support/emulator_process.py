"""Starting and stopping a local emulator process for one test session.

Shared by the Spanner and Firestore test supports: each says how to build its
command and how to tell it is ready; this module runs it on a free local port,
waits, logs to a temporary file, and stops it when the interpreter exits.
"""

from __future__ import annotations

import atexit
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Emulator:
    """A running emulator: `host` is its address; `stop()` ends it if we started it."""

    host: str
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None

    def stop(self) -> None:
        """Stop the emulator we started and delete its log; a no-op for one we did not start."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if self.log_path is not None:
            self.log_path.unlink(missing_ok=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def launch(
    name: str,
    command: list[str],
    host: str,
    ready: Callable[[str], bool],
    startup_seconds: float,
) -> Emulator:
    """Run `command` (serving on `host`), wait until `ready(host)`, stop it at exit."""
    log_path = Path(tempfile.mkstemp(prefix=f"{name.lower().replace(' ', '-')}-", suffix=".log")[1])
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    emulator = Emulator(host, process, log_path)
    atexit.register(emulator.stop)
    deadline = time.monotonic() + startup_seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"the {name} exited with {process.returncode} at startup; see {log_path}"
            )
        if ready(host):
            return emulator
        time.sleep(0.1)
    process.kill()
    process.wait(timeout=10)
    raise RuntimeError(
        f"the {name} did not answer on {host} within {startup_seconds:g} s; see {log_path}"
    )


def listening(host: str) -> bool:
    """True when something accepts TCP connections at `host` ("address:port")."""
    address, port = host.rsplit(":", 1)
    try:
        with socket.create_connection((address, int(port)), timeout=1):
            return True
    except OSError:
        return False
