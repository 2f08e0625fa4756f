"""A dependency-free bag-of-words embedder, for fast tests and the `hashing` setting."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Sequence

DIMENSIONS = 384
MODEL_NAME = "hashing-bow-384"
_WORD = re.compile(r"\w+")


class HashingEmbedder:
    """Embedder port by feature hashing: deterministic, unit length, no model.

    Each lowercase word token adds +1 or -1 to one of `dimensions` buckets,
    both chosen from its SHA-1; the sum is scaled to unit length. Texts that
    share words are therefore closer than texts that share none. A text with
    no word token (empty, blanks, punctuation) gets a fixed unit vector, the
    first basis vector, so every result is a valid unit-length embedding.
    """

    model_name: str = MODEL_NAME

    def __init__(self, dimensions: int = DIMENSIONS) -> None:
        if dimensions < 1:
            raise ValueError("dimensions must be at least 1")
        self.dimensions = dimensions

    def embed(self, text: str) -> list[float]:
        counts = [0.0] * self.dimensions
        for token in _WORD.findall(text.lower()):
            bucket, sign = _bucket(token, self.dimensions)
            counts[bucket] += sign
        norm = math.sqrt(sum(c * c for c in counts))
        if norm == 0.0:
            # no token, or tokens that cancelled out: a fixed, valid unit vector
            return [1.0] + [0.0] * (self.dimensions - 1)
        return [c / norm for c in counts]

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.embed(text) for text in texts]

    def embed_soon(self, text: str) -> Callable[[], list[float]]:
        vector = self.embed(text)
        return lambda: vector


def _bucket(token: str, dimensions: int) -> tuple[int, float]:
    digest = hashlib.sha1(token.encode("utf-8"), usedforsecurity=False).digest()
    value = int.from_bytes(digest[:8], "big")
    sign = 1.0 if digest[8] & 1 else -1.0
    return value % dimensions, sign
