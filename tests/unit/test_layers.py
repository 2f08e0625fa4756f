"""Everything in its layer: domain <- ports <- services, and adapters beside services.

Domain imports only jennah.errors; ports only domain and errors; services and
adapters only ports, domain and errors (adapters never services, api, bootstrap
or settings: only bootstrap wires them, from Settings). Imports inside functions
count too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "shared" / "jennah"

ALLOWED = {
    "domain": {"domain", "errors"},
    "ports": {"ports", "domain", "errors"},
    "services": {"services", "ports", "domain", "errors"},
    "adapters": {"adapters", "ports", "domain", "errors"},
}


def jennah_imports(path: Path) -> set[str]:
    """The jennah modules `path` imports, as their first part below jennah (e.g. "ports")."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
            if node.module == "jennah":  # from jennah import errors
                names = [f"jennah.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {name.split(".")[1] for name in names if name.startswith("jennah.")}
    return found


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_a_layer_imports_only_the_layers_below_it(layer: str) -> None:
    offending = {
        str(path.relative_to(PACKAGE)): sorted(jennah_imports(path) - ALLOWED[layer])
        for path in sorted((PACKAGE / layer).rglob("*.py"))
    }
    assert {path: bad for path, bad in offending.items() if bad} == {}


def test_imports_inside_functions_are_seen() -> None:
    source = PACKAGE / "bootstrap.py"  # it imports adapters lazily, inside functions
    assert "adapters" in jennah_imports(source)
