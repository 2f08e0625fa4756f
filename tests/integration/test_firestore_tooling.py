"""The Firestore emulator tooling: scripts/firestore-emulator (used by scripts/test)
and the test support module start the emulator, report where it is, reset and
stop it, and fail loudly when java or the emulator jar is missing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support import firestore_emulator
from tests.support.emulator_process import free_port, listening

pytestmark = pytest.mark.firestore

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "firestore-emulator"


def _script(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=90, check=False
    )


def _listening(port: int) -> bool:
    return listening(f"127.0.0.1:{port}")


def test_support_refuses_to_start_without_the_jar(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    missing = tmp_path / "cloud-firestore-emulator.jar"
    monkeypatch.setattr(firestore_emulator, "EMULATOR_JAR", missing)
    with pytest.raises(RuntimeError, match=str(missing)):
        firestore_emulator.start_emulator()


def test_support_refuses_to_start_without_java(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(RuntimeError, match="java"):
        firestore_emulator.start_emulator()


def test_script_fails_loudly_without_the_jar(tmp_path: Path) -> None:
    missing = tmp_path / "cloud-firestore-emulator.jar"
    env = {"PATH": "/usr/bin:/bin", "FIRESTORE_EMULATOR_JAR": str(missing),
           "FIRESTORE_EMULATOR_STATE_DIR": str(tmp_path)}  # fmt: skip
    result = _script("start", str(free_port()), env=env)
    assert result.returncode != 0
    assert str(missing) in result.stderr


def test_script_fails_loudly_without_java(tmp_path: Path) -> None:
    empty = tmp_path / "bin"  # a PATH without java (the check needs only bash builtins)
    empty.mkdir()
    env = {"PATH": str(empty), "FIRESTORE_EMULATOR_STATE_DIR": str(tmp_path)}
    result = subprocess.run(
        ["/bin/bash", str(SCRIPT), "start", str(free_port())],
        env=env, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "java is not on PATH" in result.stderr


def test_script_starts_reports_and_stops_the_emulator(tmp_path: Path) -> None:
    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "FIRESTORE_EMULATOR_STATE_DIR": str(tmp_path)}
    started = _script("start", str(port), env=env)
    try:
        assert started.returncode == 0, started.stderr
        host = f"127.0.0.1:{port}"
        assert firestore_emulator.ready(host)  # start returns only once it serves
        pid = int((tmp_path / f"jennah-firestore-emulator-{port}.pid").read_text())
        assert firestore_emulator.EMULATOR_MAIN in Path(f"/proc/{pid}/cmdline").read_text()
        assert "already running" in _script("start", str(port), env=env).stdout
        exports = _script("env", str(port), env=env).stdout
        assert exports.strip() == f"export FIRESTORE_EMULATOR_HOST={host}"

        client = firestore_emulator.emulator_client(host)
        client.collection("probe").document("one").set({"n": 1})
        firestore_emulator.reset(host)
        assert not client.collection("probe").document("one").get().exists
    finally:
        stopped = _script("stop", str(port), env=env)
    assert stopped.returncode == 0, stopped.stderr
    assert not _listening(port)
    assert not (tmp_path / f"jennah-firestore-emulator-{port}.pid").exists()


def test_script_rejects_an_unknown_command(tmp_path: Path) -> None:
    result = _script("restart", env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 2
    assert "start" in result.stderr
