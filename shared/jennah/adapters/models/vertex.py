"""The `vertex` model: Gemini on Vertex AI through google-genai, JSON-schema output.

One `generateContent` call per `generate`: the prompt as one user turn,
`responseMimeType: application/json` with `responseJsonSchema` set to the
answer's JSON schema, `maxOutputTokens` the output bound, temperature 0, and
the HTTP timeout (also sent to Vertex AI as X-Server-Timeout) the time bound.
Never retried, and automatic continuation is off: one call, one request.

Failures: the time bound -> DEADLINE_EXCEEDED naming it ("the model call
exceeded its 30 s bound"); an answer cut at the output bound (finish reason
MAX_TOKENS) -> ABORTED naming it, with the usage Vertex AI reported; 429 ->
RESOURCE_EXHAUSTED; 5xx -> UNAVAILABLE; 400 -> INVALID_ARGUMENT; other 4xx ->
INTERNAL; an answer without text (blocked) -> INTERNAL with its usage.

Usage: `promptTokenCount` in; `candidatesTokenCount + thoughtsTokenCount` out
(reasoning counts as output).
"""

from __future__ import annotations

from typing import Any

from google.auth.credentials import Credentials
from google.genai import types

from jennah.adapters.models.bounds import output_bound_exceeded, usage_metadata
from jennah.adapters.models.genai_client import LazyClient, VertexTarget, timeout_ms, vertex_errors
from jennah.errors import Internal
from jennah.ports.model import ModelResult

DEFAULT_MODEL = "gemini-2.5-flash"
CALL = "model call"


class VertexModel:
    """The LanguageModel port on Vertex AI. `name` is the model, `region` its location."""

    def __init__(
        self,
        *,
        project: str,
        location: str,
        model: str = DEFAULT_MODEL,
        base_url: str | None = None,
        credentials: Credentials | None = None,
        trust_env: bool = True,
    ) -> None:
        self.name = model
        self.region = location
        self._client = LazyClient(
            VertexTarget(project, location, base_url, credentials, trust_env=trust_env)
        )

    def generate(
        self,
        prompt: str,
        json_schema: dict[str, Any],
        max_output_tokens: int,
        deadline_seconds: float,
    ) -> ModelResult:
        config = _config(json_schema, max_output_tokens, deadline_seconds)
        with vertex_errors(CALL, deadline_seconds):
            response = self._client.get().models.generate_content(
                model=self.name, contents=prompt, config=config
            )
        return _result(response, max_output_tokens, self.name)


def _config(
    json_schema: dict[str, Any], max_output_tokens: int, deadline_seconds: float
) -> types.GenerateContentConfig:
    return types.GenerateContentConfig(
        response_mime_type="application/json",
        response_json_schema=json_schema,
        max_output_tokens=max_output_tokens,
        temperature=0.0,
        candidate_count=1,
        automatic_continuation=False,
        http_options=types.HttpOptions(timeout=timeout_ms(deadline_seconds)),
    )


def _result(
    response: types.GenerateContentResponse, max_output_tokens: int, model: str
) -> ModelResult:
    input_tokens, output_tokens = _usage(response)
    candidate = response.candidates[0] if response.candidates else None
    finish = candidate.finish_reason if candidate else None
    if finish == types.FinishReason.MAX_TOKENS:
        raise output_bound_exceeded(
            max_output_tokens, input_tokens=input_tokens, output_tokens=output_tokens
        )
    text = _text(candidate)
    if not text:
        raise Internal(
            f"the {CALL} returned no answer ({_why_empty(response, finish)})",
            reason="MODEL_ANSWER_EMPTY",
            metadata=usage_metadata(input_tokens, output_tokens),
        )
    return ModelResult(
        text=text,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        model=response.model_version or model,
    )


def _usage(response: types.GenerateContentResponse) -> tuple[int, int]:
    usage = response.usage_metadata
    if usage is None:
        return 0, 0
    output = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
    return usage.prompt_token_count or 0, output


def _text(candidate: types.Candidate | None) -> str:
    """The answer's text parts joined; thought summaries left out."""
    if candidate is None or candidate.content is None or not candidate.content.parts:
        return ""
    return "".join(p.text for p in candidate.content.parts if p.text and not p.thought)


def _why_empty(response: types.GenerateContentResponse, finish: types.FinishReason | None) -> str:
    feedback = response.prompt_feedback
    if feedback is not None and feedback.block_reason is not None:
        return f"prompt blocked: {feedback.block_reason.value}"
    return f"finish reason {finish.value if finish else 'none'}"
