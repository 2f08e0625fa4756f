"""The language-model port used by formation (extraction, then reconciliation).

Adapters: `vertex` (Gemini on Vertex AI, JSON-schema output), `rules` (a
deterministic offline extractor, the embedded default), and a scripted model
for tests. Every call is bounded in time and in output tokens.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel


class ModelResult(BaseModel):
    """What one call returned: JSON text matching the schema, and the reported usage."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0  # reasoning tokens included
    model: str = ""


class LanguageModel(Protocol):
    name: str
    region: str

    def generate(
        self,
        prompt: str,
        json_schema: dict[str, Any],
        max_output_tokens: int,
        deadline_seconds: float,
    ) -> ModelResult:
        """One bounded call. Raises jennah.errors.DeadlineExceeded naming the time bound
        when the call outlives `deadline_seconds` (the error's metadata carries any usage
        reported before), and jennah.errors.Aborted naming the output bound when the
        answer was cut at `max_output_tokens` (metadata: inputTokens, outputTokens).
        jennah.errors.Unavailable means the call never reached the model (it could not
        be delivered, or the service failed before answering): formation does not
        count it, and the formation is retried. Never retried by the caller."""
        ...
