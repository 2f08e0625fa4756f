"""Model calls and the usage they report, kept even when the formation then fails.

`FormationUsage` is an accumulator the caller may pass to `form`: every call
counts as soon as it is attempted (a formation that reached the model uses its
units), and the tokens each call reports are added as it returns, or, when it
fails at its time or output bound, from the usage its error carries
(`inputTokens` / `outputTokens` metadata, the model port's contract). A call
that fails UNAVAILABLE with no usage reported never reached the model, and does
not count: a formation retried after it costs nothing for that attempt. Read it
after `form` returns OR raises, to meter the formation.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from jennah.domain.formation import formation_units
from jennah.errors import Aborted, JennahError, Unavailable
from jennah.ports.model import LanguageModel
from jennah.ports.prompts import parse_answer

Answer = TypeVar("Answer", bound=BaseModel)


class FormationUsage(BaseModel):
    """What one formation spent: attempted model calls and the tokens they reported."""

    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0  # reasoning included
    model: str = ""
    region: str = ""

    @property
    def reached_model(self) -> bool:
        return self.model_calls > 0

    @property
    def units(self) -> int:
        """Formation units: 0 when no model call was attempted, else at least 1."""
        return formation_units(self.input_tokens, self.output_tokens) if self.model_calls else 0

    def add(self, input_tokens: int, output_tokens: int) -> None:
        self.input_tokens += max(0, input_tokens)
        self.output_tokens += max(0, output_tokens)


class CallBounds(BaseModel):
    deadline_seconds: float
    max_output_tokens: int


def call_model(
    model: LanguageModel,
    call: str,
    prompt: str,
    schema: dict[str, Any],
    answer_type: type[Answer],
    bounds: CallBounds,
    usage: FormationUsage,
) -> Answer:
    """One bounded call (never retried), its usage recorded, its answer validated.

    Propagates the model's DEADLINE_EXCEEDED / ABORTED (the message names the
    bound); raises ABORTED naming the output bound when a model reports more
    output than allowed without failing, and INTERNAL for an answer that does
    not match the schema.
    """
    usage.model_calls += 1
    usage.model, usage.region = model.name, model.region
    try:
        result = model.generate(prompt, schema, bounds.max_output_tokens, bounds.deadline_seconds)
    except JennahError as exc:
        reported = _count(exc.metadata.get("inputTokens")), _count(exc.metadata.get("outputTokens"))
        if isinstance(exc, Unavailable) and not any(reported):
            usage.model_calls -= 1  # it never reached the model
        usage.add(*reported)
        raise
    usage.add(result.input_tokens, result.output_tokens)
    if result.model:
        usage.model = result.model
    if result.output_tokens > bounds.max_output_tokens:
        raise Aborted(
            f"the {call} model call answered with {result.output_tokens} output tokens, over "
            f"its bound of max output tokens per call ({bounds.max_output_tokens})",
            reason="MODEL_CALL_OUTPUT_BOUND",
            metadata={
                "inputTokens": str(result.input_tokens),
                "outputTokens": str(result.output_tokens),
            },
        )
    return parse_answer(result.text, answer_type, call)


def _count(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0
