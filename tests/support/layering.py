"""import-linter contract types that read the composition root's name from one place.

The wiring module (the composition root) appears in several layering contracts. They
write it as `{composition_root}`, and `composition_root` in `[tool.importlinter]`
(pyproject.toml) names it once, relative to the root package: renaming the module means
changing that one line. Registered under the built-in type names through `contract_types`,
so every contract of that file may use the placeholder; nothing else differs from the
built-in contracts.
"""

from __future__ import annotations

from typing import Any

from importlinter.contracts.acyclic_siblings import AcyclicSiblingsContract
from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.contracts.layers import LayersContract
from importlinter.contracts.protected import ProtectedContract

PLACEHOLDER = "{composition_root}"
SESSION_OPTION = "composition_root"


def substituted(value: Any, root: str) -> Any:
    """`value` with every `{composition_root}` replaced by `root`, in strings and lists."""
    if isinstance(value, str):
        return value.replace(PLACEHOLDER, root)
    if isinstance(value, list):
        return [substituted(each, root) for each in value]
    return value


class _NamesTheRoot:
    """Mixin: substitutes the placeholder in the contract's options before they are parsed."""

    def __init__(
        self, name: str, session_options: dict[str, Any], contract_options: dict[str, Any]
    ) -> None:
        root = session_options[SESSION_OPTION]
        options = {key: substituted(value, root) for key, value in contract_options.items()}
        super().__init__(name, session_options, options)  # type: ignore[call-arg]


class Forbidden(_NamesTheRoot, ForbiddenContract):
    """The built-in `forbidden` contract, with the placeholder."""


class Layers(_NamesTheRoot, LayersContract):
    """The built-in `layers` contract, with the placeholder."""


class Protected(_NamesTheRoot, ProtectedContract):
    """The built-in `protected` contract, with the placeholder."""


class AcyclicSiblings(_NamesTheRoot, AcyclicSiblingsContract):
    """The built-in `acyclic_siblings` contract, with the placeholder."""
