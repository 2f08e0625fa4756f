"""The embedder port: text to unit-length vectors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
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

    def embed_soon(self, text: str) -> Callable[[], list[float]]:
        """`embed(text)` started now, its vector when the answer is called (errors raised
        then). An adapter that embeds off the calling thread lets the caller work
        meanwhile; one that cannot embeds before returning."""
        ...
