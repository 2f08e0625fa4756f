"""The Cloud Tasks emulator tooling: scripts/cloud-tasks-emulator (used by scripts/test)
starts the emulator from .venv-tasks, reports where it is, stops it, and fails
loudly when the emulator is missing, dies at startup or its port is taken."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from jennah.adapters.cloud_tasks.queue import ensure_queue, tasks_client
from tests.support.cloud_tasks_emulator import queue_path
from tests.support.emulator_process import free_port, listening

pytestmark = pytest.mark.cloud_tasks

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "cloud-tasks-emulator"


def _script(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )


def _env(state_dir: Path, **extra: str) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "CLOUD_TASKS_EMULATOR_STATE_DIR": str(state_dir), **extra}


def test_script_starts_reports_and_stops_the_emulator(tmp_path: Path) -> None:
    port = free_port()
    env = _env(tmp_path)
    started = _script("start", str(port), env=env)
    try:
        assert started.returncode == 0, started.stderr
        host = f"127.0.0.1:{port}"
        assert listening(host)  # start returns only once it answers
        pid = int((tmp_path / f"jennah-cloud-tasks-emulator-{port}.pid").read_text())
        assert "gcloud-tasks-emulator" in Path(f"/proc/{pid}/cmdline").read_text()
        assert "already running" in _script("start", str(port), env=env).stdout
        assert _script("status", str(port), env=env).returncode == 0
        exports = _script("env", str(port), env=env).stdout
        assert exports.strip() == f"export CLOUD_TASKS_EMULATOR_HOST={host}"

        ensure_queue(tasks_client(host), queue_path("tooling-probe"))  # it answers the API
    finally:
        stopped = _script("stop", str(port), env=env)
    assert stopped.returncode == 0, stopped.stderr
    assert not listening(f"127.0.0.1:{port}")
    assert not (tmp_path / f"jennah-cloud-tasks-emulator-{port}.pid").exists()
    status = _script("status", str(port), env=env)
    assert status.returncode == 1
    assert "not running" in status.stdout


def test_script_fails_loudly_without_the_emulator(tmp_path: Path) -> None:
    missing = tmp_path / "gcloud-tasks-emulator"
    result = _script(
        "start", str(free_port()), env=_env(tmp_path, CLOUD_TASKS_EMULATOR_BINARY=str(missing))
    )
    assert result.returncode != 0
    assert str(missing) in result.stderr


def test_script_fails_loudly_when_the_emulator_dies_at_startup(tmp_path: Path) -> None:
    dying = tmp_path / "gcloud-tasks-emulator"
    dying.write_text("#!/bin/sh\necho 'cannot bind the port' >&2\nexit 3\n")
    dying.chmod(0o755)
    result = _script(
        "start", str(free_port()), env=_env(tmp_path, CLOUD_TASKS_EMULATOR_BINARY=str(dying))
    )
    assert result.returncode != 0
    assert "exited during startup" in result.stderr
    assert "cannot bind the port" in result.stderr


def test_script_refuses_a_port_that_is_taken(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = _script("start", str(port), env=_env(tmp_path))
    assert result.returncode != 0
    assert "already listens" in result.stderr


def test_script_rejects_an_unknown_command(tmp_path: Path) -> None:
    result = _script("restart", env=_env(tmp_path))
    assert result.returncode == 2
    assert "start" in result.stderr
