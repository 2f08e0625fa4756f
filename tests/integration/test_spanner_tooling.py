"""The emulator tooling: scripts/spanner-emulator (used by .ci/run) and the test
support module start the emulator, report where it is, stop it, and fail
loudly when its binary is missing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support import spanner_emulator
from tests.support.emulator_process import free_port, listening

pytestmark = pytest.mark.spanner

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "spanner-emulator"


def _script(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def _listening(port: int) -> bool:
    return listening(f"127.0.0.1:{port}")


def test_support_refuses_to_start_without_the_binary(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    missing = tmp_path / "emulator_main"
    monkeypatch.setattr(spanner_emulator, "EMULATOR_BINARY", missing)
    with pytest.raises(RuntimeError, match=str(missing)):
        spanner_emulator.start_emulator()


def test_script_fails_loudly_without_the_binary(tmp_path: Path) -> None:
    missing = tmp_path / "emulator_main"
    env = {"PATH": "/usr/bin:/bin", "SPANNER_EMULATOR_BINARY": str(missing),
           "SPANNER_EMULATOR_STATE_DIR": str(tmp_path)}  # fmt: skip
    result = _script("start", str(free_port()), env=env)
    assert result.returncode != 0
    assert str(missing) in result.stderr


def test_script_starts_reports_and_stops_the_emulator(tmp_path: Path) -> None:
    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "SPANNER_EMULATOR_STATE_DIR": str(tmp_path)}
    started = _script("start", str(port), env=env)
    try:
        assert started.returncode == 0, started.stderr
        assert _listening(port)  # start returns only once the port accepts connections
        pid = int((tmp_path / f"jennah-spanner-emulator-{port}.pid").read_text())
        assert "emulator_main" in Path(f"/proc/{pid}/cmdline").read_text()
        exports = _script("env", str(port), env=env).stdout
        assert f"export SPANNER_EMULATOR_HOST=127.0.0.1:{port}" in exports
        assert "export GOOGLE_CLOUD_SPANNER_MULTIPLEXED_SESSIONS_FOR_RW=false" in exports
    finally:
        stopped = _script("stop", str(port), env=env)
    assert stopped.returncode == 0, stopped.stderr
    assert not _listening(port)
    assert not (tmp_path / f"jennah-spanner-emulator-{port}.pid").exists()


def test_script_rejects_an_unknown_command(tmp_path: Path) -> None:
    result = _script("restart", env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 2
    assert "start" in result.stderr
