"""A `jnh serve` process for the benchmarks: a temporary data directory, a free loopback
port, the server chosen by JENNAH_HTTP_SERVER; its token, pid and memory figures."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

DEFAULT_JNH = Path(sys.executable).with_name("jnh")
READY_TIMEOUT_S = 120.0


@dataclass
class Served:
    base: str
    port: int
    pid: int
    token: str


@contextlib.contextmanager
def jnh_serve(
    server: str, embedder: str, jnh: Path = DEFAULT_JNH, source: Path | None = None
) -> Iterator[Served]:
    """`jnh serve` with JENNAH_HTTP_SERVER=server until the block ends (then SIGTERM);
    with `source`, the build in that source tree (its `shared/` first on PYTHONPATH)."""
    with tempfile.TemporaryDirectory(prefix="jennah-bench-") as tmp:
        port = free_port()
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("JENNAH_")},
            "JENNAH_EMBEDDER": embedder,
            "JENNAH_HTTP_SERVER": server,
            "JENNAH_FORMATION_MODEL": "rules",  # instant: the benchmarks measure the platform
        }
        if source is not None:
            env["PYTHONPATH"] = str((source / "shared").resolve())
        process = subprocess.Popen(
            [str(jnh), "serve", "--port", str(port), "--data-dir", tmp],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            _wait_ready(process, base)
            token = subprocess.run(
                [str(jnh), "auth", "print-token", "--data-dir", tmp],
                env=env, check=True, capture_output=True, text=True,
            ).stdout.strip()  # fmt: skip
            yield Served(base, port, process.pid, token)
        finally:
            _stop(process)


def status_kib(pid: int, name: str) -> int:
    """A memory figure of /proc/PID/status (VmRSS, VmHWM), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{name}:"):
            return int(line.split()[1])
    return 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_ready(process: subprocess.Popen[bytes], base: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"jnh serve exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{base}/openapi.json", timeout=2):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    raise SystemExit(f"jnh serve did not answer within {READY_TIMEOUT_S:g} s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
