"""The scripted model: answers in order, every answer form, recorded calls, both bounds."""

from __future__ import annotations

import time
from typing import Any

import pytest

from jennah.adapters.models.scripted import ModelCall, ScriptedModel, Slow
from jennah.errors import Aborted, DeadlineExceeded, Internal, Unavailable
from jennah.ports.model import LanguageModel, ModelResult
from jennah.ports.prompts import (
    EXTRACT_INSTRUCTIONS,
    EXTRACTION_SCHEMA,
    ExtractionAnswer,
    build_prompt,
)

PROMPT = build_prompt(EXTRACT_INSTRUCTIONS, {"task": "extract", "turns": []})


def _call(model: LanguageModel, *, bound: int = 1000, deadline: float = 5.0) -> ModelResult:
    return model.generate(PROMPT, EXTRACTION_SCHEMA, bound, deadline)


def test_answers_come_in_order_in_every_form() -> None:
    given = ModelResult(text="{}", input_tokens=7, output_tokens=3, model="m")
    model = ScriptedModel(
        [given, {"candidates": []}, [1, 2], ExtractionAnswer(), '{"decisions": []}']
    )
    assert _call(model) is given
    assert _call(model).text == '{"candidates": []}'
    assert _call(model).text == "[1, 2]"
    assert _call(model).text == '{"candidates":[]}'
    assert _call(model).text == '{"decisions": []}'
    assert model.remaining == 0


def test_answers_that_are_not_results_report_estimated_usage() -> None:
    result = _call(ScriptedModel(['{"candidates": []}']))
    assert result.input_tokens == len(PROMPT) // 4
    assert result.output_tokens == len('{"candidates": []}') // 4
    assert result.model == "scripted"


def test_exceptions_are_raised_as_instances_or_classes() -> None:
    model = ScriptedModel([Unavailable("vertex is down"), RuntimeError])
    with pytest.raises(Unavailable, match="vertex is down"):
        _call(model)
    with pytest.raises(RuntimeError):
        _call(model)


def test_a_callable_answers_from_the_prompt_and_schema() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def answer(prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
        seen.append((prompt, schema))
        return {"candidates": []}

    assert _call(ScriptedModel([answer])).text == '{"candidates": []}'
    assert seen == [(PROMPT, EXTRACTION_SCHEMA)]


def test_calls_are_recorded_with_their_bounds_and_data() -> None:
    model = ScriptedModel(["{}", "{}"])
    _call(model, bound=123, deadline=4.5)
    _call(model)
    assert model.calls[0] == ModelCall(PROMPT, EXTRACTION_SCHEMA, 123, 4.5)
    assert model.calls[0].data == {"task": "extract", "turns": []}
    assert len(model.calls) == 2


def test_a_call_past_the_script_is_internal_unless_it_repeats() -> None:
    model = ScriptedModel(["{}"])
    _call(model)
    with pytest.raises(Internal, match="no answer for call 2"):
        _call(model)
    model.add("[]")
    assert _call(model).text == "[]"

    repeating = ScriptedModel(["1", "2"], repeat=True)
    assert [_call(repeating).text for _ in range(5)] == ["1", "2", "1", "2", "1"]


def test_latency_delays_the_answer() -> None:
    model = ScriptedModel([Slow(0.5, "{}"), "{}"], latency_seconds=0.02)
    started = time.monotonic()
    _call(model)
    assert time.monotonic() - started >= 0.52
    started = time.monotonic()
    _call(model)
    # Only lower bounds are exact (a sleep never ends early); the upper one only tells the
    # plain answer from the slow one, with room for a loaded machine (was < 0.05: flaky).
    assert 0.02 <= time.monotonic() - started < 0.5


def test_latency_past_the_deadline_is_deadline_exceeded_at_the_deadline() -> None:
    model = ScriptedModel([Slow(30.0, "{}")])
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded) as caught:
        _call(model, deadline=0.1)
    assert time.monotonic() - started < 10.0  # the 0.1 s bound, not the 30 s answer
    assert caught.value.message == "the model call exceeded its 0.1 s bound"
    assert caught.value.metadata == {"inputTokens": "0", "outputTokens": "0"}


def test_a_callable_may_answer_slowly() -> None:
    model = ScriptedModel([lambda prompt, schema: Slow(10.0, "{}")])
    with pytest.raises(DeadlineExceeded):
        _call(model, deadline=0.05)


def test_an_answer_over_the_output_bound_is_aborted_naming_it() -> None:
    model = ScriptedModel([ModelResult(text="{}", input_tokens=40, output_tokens=40_000)])
    with pytest.raises(Aborted) as caught:
        _call(model, bound=32_768)
    assert "max output tokens per call (32768)" in caught.value.message
    assert caught.value.metadata == {"inputTokens": "40", "outputTokens": "32768"}


def test_an_answer_of_another_type_is_internal() -> None:
    wrong: Any = 42
    with pytest.raises(Internal, match="cannot answer with a int"):
        _call(ScriptedModel([wrong]))


def test_name_and_region_can_stand_for_a_real_model() -> None:
    model = ScriptedModel(name="gemini-2.5-flash", region="us-central1")
    assert (model.name, model.region) == ("gemini-2.5-flash", "us-central1")
