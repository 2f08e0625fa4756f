"""The embedder port: text to unit-length vectors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Embedder(Protocol):
    dimensions: int
    model_name: str

    def embed(self, text: str) -> list[float]:
        """One unit-length vector of `dimensions` floats; deterministic."""
        ...

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        """The same as `embed` for each text, computed in batches."""
        ...
