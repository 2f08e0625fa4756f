"""Helpers for testing the Cloud Functions artifacts that scripts/package builds: what a
function's main.py declares, the runtime dependency closure of the project, and a
functions-framework server run from an artifact."""

from __future__ import annotations

import ast
import contextlib
import importlib.metadata
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

SIGNATURES = {"http": "http", "cloud_event": "cloudevent"}


@dataclass(frozen=True)
class Entrypoint:
    """The function a main.py exposes, and the route groups (`routes.X_ROUTES`) it serves."""

    target: str
    signature: str  # functions-framework's --signature-type
    route_groups: tuple[str, ...]


def entrypoint(main: Path) -> Entrypoint:
    """Read main.py's `@functions_framework.http` (or `.cloud_event`) function."""
    tree = ast.parse(main.read_text(encoding="utf-8"), filename=str(main))
    found: list[tuple[str, str]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                if (
                    isinstance(decorator, ast.Attribute)
                    and isinstance(decorator.value, ast.Name)
                    and decorator.value.id == "functions_framework"
                    and decorator.attr in SIGNATURES
                ):
                    found.append((node.name, SIGNATURES[decorator.attr]))
    assert len(found) == 1, f"{main}: expected one functions_framework entry point, found {found}"
    groups = sorted(
        {
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "routes"
            and node.attr.endswith("_ROUTES")
        }
    )
    (target, signature) = found[0]
    return Entrypoint(target, signature, tuple(groups))


def runtime_closure(roots: Iterable[str]) -> set[str]:
    """Canonical names of the installed distributions `roots` need, transitively,
    extras included, with markers evaluated for this interpreter."""
    stack: list[tuple[str, str]] = []

    def push(spec: Requirement) -> None:
        name = canonicalize_name(spec.name)
        stack.extend((name, extra) for extra in ("", *sorted(spec.extras)))

    for root in roots:
        push(Requirement(root))
    seen: set[tuple[str, str]] = set()
    while stack:
        name, extra = stack.pop()
        if (name, extra) in seen:
            continue
        seen.add((name, extra))
        for spec in importlib.metadata.distribution(name).requires or []:
            requirement = Requirement(spec)
            if requirement.marker is None or requirement.marker.evaluate({"extra": extra}):
                push(requirement)
    return {name for name, _ in seen}


def pins(requirements: str) -> dict[str, str]:
    """`NAME==VERSION` lines of a requirements file: canonical name -> version."""
    found: dict[str, str] = {}
    for line in requirements.splitlines():
        if line.strip() and not line.startswith("#"):
            match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", line.strip())
            assert match, f"not an exact pin: {line!r}"
            found[canonicalize_name(match[1])] = match[2]
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class FunctionServer:
    """`functions-framework` serving one artifact on 127.0.0.1, in its own process group;
    stopped (the group signalled) on exit."""

    def __init__(
        self, venv: Path, artifact: Path, entry: Entrypoint, env: Mapping[str, str], log: Path
    ) -> None:
        self.port = free_port()
        self.log = log
        command = [
            str(venv / "bin" / "functions-framework"),
            "--source", str(artifact / "main.py"),
            "--target", entry.target,
            "--signature-type", entry.signature,
            "--host", "127.0.0.1",
            "--port", str(self.port),
        ]  # fmt: skip
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                command,
                cwd=artifact,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(
                    f"the server exited ({self.process.returncode}):\n{self.output}"
                )
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"the server did not listen within {timeout}s:\n{self.output}")

    @property
    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-4000:]

    def stop(self) -> None:
        """Signal the server's process group (gunicorn's master and its worker)."""
        self._signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self.process.wait(timeout=15)

    def _signal(self, number: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, number)

    def __enter__(self) -> FunctionServer:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
