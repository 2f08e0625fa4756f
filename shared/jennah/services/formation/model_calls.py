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
# The formation's calls together reached their output budget (on Free, what it reserved of
# the day's output tokens): no further call is made.
FORMATION_OUTPUT_BOUND = "FORMATION_OUTPUT_BOUND"


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
    """Each call's time and output bounds, and, when set, the output all of a
    formation's calls may produce together (`output_token_budget`)."""

    deadline_seconds: float
    max_output_tokens: int
    output_token_budget: int | None = None

    def output_bound(self, usage: FormationUsage) -> int:
        """The next call's output bound: the per-call bound, or what the calls so far
        (`usage`) left of the formation's budget when that is less."""
        if self.output_token_budget is None:
            return self.max_output_tokens
        return min(self.max_output_tokens, self.output_token_budget - usage.output_tokens)


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
    output than allowed without failing, ABORTED naming the formation's output
    budget, without calling, when the calls before left nothing of it, and
    INTERNAL for an answer that does not match the schema.
    """
    limit = bounds.output_bound(usage)
    if limit <= 0:
        raise _budget_spent(call, bounds, usage)
    usage.model_calls += 1
    usage.model, usage.region = model.name, model.region
    try:
        result = model.generate(prompt, schema, limit, bounds.deadline_seconds)
    except JennahError as exc:
        reported = _count(exc.metadata.get("inputTokens")), _count(exc.metadata.get("outputTokens"))
        if isinstance(exc, Unavailable) and not any(reported):
            usage.model_calls -= 1  # it never reached the model
        usage.add(*reported)
        raise
    usage.add(result.input_tokens, result.output_tokens)
    if result.model:
        usage.model = result.model
    if result.output_tokens > limit:
        raise Aborted(
            f"the {call} model call answered with {result.output_tokens} output tokens, over "
            f"its bound of max output tokens per call ({limit})",
            reason="MODEL_CALL_OUTPUT_BOUND",
            metadata={
                "inputTokens": str(result.input_tokens),
                "outputTokens": str(result.output_tokens),
            },
        )
    return parse_answer(result.text, answer_type, call)


def _budget_spent(call: str, bounds: CallBounds, usage: FormationUsage) -> Aborted:
    return Aborted(
        f"the {call} model call was not made: the formation's model calls may produce "
        f"{bounds.output_token_budget} output tokens together (what it reserved of the "
        f"day's formation output tokens), and the calls before it produced "
        f"{usage.output_tokens}; nothing was written: resend with the same formationKey",
        reason=FORMATION_OUTPUT_BOUND,
        metadata={
            "outputTokenBudget": str(bounds.output_token_budget),
            "outputTokens": str(usage.output_tokens),
        },
    )


def _count(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0
