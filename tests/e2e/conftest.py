"""A real `jnh serve` process on SQLite (hashing embedder), and real `jnh` processes.

Every `jnh` runs with JENNAH_ENDPOINT and JENNAH_DATA_DIR pointing at the test
server and XDG_CONFIG_HOME inside the test's folder, so a login saved by the
test (or by the person running it) never leaks in or out.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest


def jnh_command() -> list[str]:
    script = Path(sys.executable).with_name("jnh")
    if script.exists():
        return [str(script)]
    found = shutil.which("jnh")
    return [found] if found else [sys.executable, "-m", "jennah.cli"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    endpoint: str
    data_dir: Path
    workdir: Path
    banner: list[str] = field(default_factory=list)
    pid: int = 0

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("JENNAH_")}
        return (
            env
            | {
                "JENNAH_ENDPOINT": self.endpoint,
                "JENNAH_DATA_DIR": str(self.data_dir),
                "XDG_CONFIG_HOME": str(self.workdir / "config"),
            }
            | extra
        )

    def jnh(
        self, *args: str, stdin: str | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*jnh_command(), *args], input=stdin, capture_output=True, text=True, timeout=60,
            env=self.env(**env), cwd=self.workdir,
        )  # fmt: skip

    def ok(self, *args: str, stdin: str | None = None, **env: str) -> str:
        done = self.jnh(*args, stdin=stdin, **env)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done.stdout

    def json(self, *args: str, stdin: str | None = None, **env: str) -> Any:
        return json.loads(self.ok(*args, "-o", "json", stdin=stdin, **env))

    def file(self, name: str, content: str) -> str:
        path = self.workdir / name
        path.write_text(content, encoding="utf-8")
        return str(path)


@contextlib.contextmanager
def serving(workdir: Path, data_dir: Path | None = None, **env: str) -> Iterator[Server]:
    """`jnh serve` on a free port until the block ends; its banner in `Server.banner`;
    `env` adds JENNAH_ settings to its environment. The formation model is `rules` (fast,
    deterministic) unless `env` names another."""
    port = free_port()
    server = Server(f"http://127.0.0.1:{port}", data_dir or workdir / "data", workdir)
    log_path = workdir / f"serve-{port}.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [*jnh_command(), "serve", "--host", "127.0.0.1", "--port", str(port),
             "--data-dir", str(server.data_dir)],
            env=server.env(**({"JENNAH_FORMATION_MODEL": "rules"} | env), JENNAH_EMBEDDER="hashing",
                           JENNAH_STORE="sqlite"),
            stdout=subprocess.PIPE, stderr=log, text=True,
        )  # fmt: skip
        server.pid = process.pid
        try:
            _wait_until_listening(process, port)
            assert process.stdout is not None
            for line in process.stdout:
                server.banner.append(line.rstrip("\n"))
                if line.startswith("Press Ctrl+C"):
                    break
            yield server
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    assert process.returncode in (0, -15), log_path.read_text()


def _wait_until_listening(process: subprocess.Popen[str], port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"jnh serve exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("jnh serve did not start listening within 30 s")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("e2e")) as running:
        yield running
