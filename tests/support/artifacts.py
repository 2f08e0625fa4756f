"""Helpers for testing the Cloud Functions artifacts that scripts/package builds: what a
function's main.py declares and the runtime dependency closure of the project (an
artifact is served by tests.support.functions_process.FunctionProcess)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

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
