"""Vertex AI text embeddings through google-genai (`embed_content`), 384-d by default.

`text-embedding-005` (and the other `text-embedding-*` / `text-multilingual-*`
models) are called through Vertex AI's `:predict` route, several texts per
request, with `outputDimensionality` so they return `dimensions` floats (the
model truncates its 768-d embedding). Truncated embeddings are not unit
length: every vector is scaled to unit length here, as the port requires. A
vector of any other length is INTERNAL (a model that cannot reduce to
`dimensions`). No task type is sent: memories and queries are embedded alike.
Gemini embedding models after gemini-embedding-001 use another route
(`:embedContent`, one text per request) and are not supported here.

Each request is bounded by `timeout_seconds` (DEADLINE_EXCEEDED naming it);
errors are mapped as for the Vertex model (429 RESOURCE_EXHAUSTED, 5xx
UNAVAILABLE, ...). The client is built on first use.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from google.auth.credentials import Credentials
from google.genai import types

from jennah.adapters.models.genai_client import LazyClient, VertexTarget, timeout_ms, vertex_errors
from jennah.errors import Internal

DEFAULT_MODEL = "text-embedding-005"
DIMENSIONS = 384
# text-embedding-005 takes at most 250 texts (and 20,000 tokens) per request
DEFAULT_BATCH_SIZE = 32
CALL = "embedding call"


class VertexEmbedder:
    """The Embedder port on Vertex AI text embeddings."""

    def __init__(
        self,
        *,
        project: str,
        location: str,
        model: str = DEFAULT_MODEL,
        dimensions: int = DIMENSIONS,
        base_url: str | None = None,
        credentials: Credentials | None = None,
        timeout_seconds: float = 30.0,
        batch_size: int = DEFAULT_BATCH_SIZE,
        trust_env: bool = True,
    ) -> None:
        if dimensions < 1 or batch_size < 1:
            raise ValueError("dimensions and batch_size must be at least 1")
        self.model_name = model
        self.dimensions = dimensions
        self.timeout_seconds = timeout_seconds
        self.batch_size = batch_size
        self._client = LazyClient(
            VertexTarget(project, location, base_url, credentials, trust_env=trust_env)
        )

    def embed(self, text: str) -> list[float]:
        return self.embed_batch([text])[0]

    def embed_soon(self, text: str) -> Callable[[], list[float]]:
        vector = self.embed(text)
        return lambda: vector

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors += self._request(list(texts[start : start + self.batch_size]))
        return vectors

    def _request(self, texts: list[str]) -> list[list[float]]:
        config = types.EmbedContentConfig(
            output_dimensionality=self.dimensions,
            http_options=types.HttpOptions(timeout=timeout_ms(self.timeout_seconds)),
        )
        with vertex_errors(CALL, self.timeout_seconds):
            response = self._client.get().models.embed_content(
                model=self.model_name, contents=texts, config=config
            )
        embeddings = response.embeddings or []
        if len(embeddings) != len(texts):
            raise Internal(f"the {CALL} returned {len(embeddings)} vectors for {len(texts)} texts")
        return [self._unit(e.values or []) for e in embeddings]

    def _unit(self, values: list[float]) -> list[float]:
        if len(values) != self.dimensions:
            raise Internal(
                f"the {CALL} returned a {len(values)}-d vector; {self.model_name} was asked "
                f"for {self.dimensions}"
            )
        norm = math.sqrt(sum(v * v for v in values))
        if norm == 0.0:
            raise Internal(f"the {CALL} returned a zero vector")
        return [v / norm for v in values]
