"""The Vertex model adapter, end to end: the real google-genai client against the stand-in."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from google.oauth2.credentials import Credentials

from jennah.adapters.models.scripted import ScriptedModel
from jennah.adapters.models.vertex import VertexModel
from jennah.errors import (
    Aborted,
    DeadlineExceeded,
    Internal,
    InvalidArgument,
    ResourceExhausted,
    Unavailable,
)
from jennah.ports.model import LanguageModel, ModelResult
from jennah.ports.prompts import (
    EXTRACT_INSTRUCTIONS,
    EXTRACTION_SCHEMA,
    ExtractionAnswer,
    build_prompt,
    parse_answer,
)
from tests.support.vertex_standin import LOCATION, PROJECT, VertexStandIn

MODEL = "gemini-2.5-flash"
PROMPT = build_prompt(
    EXTRACT_INSTRUCTIONS,
    {
        "task": "extract",
        "clock": "2026-08-25T08:48:01Z",
        "turns": [
            {"index": 0, "role": "user", "content": "I live in Tokyo and I work at Alphaus."},
            {"index": 1, "role": "assistant", "content": "Noted. Anything else about your setup?"},
        ],
        "structures": [],
        "vocabulary": {"entityClasses": [], "relationTypes": []},
    },
)


@pytest.fixture(scope="module")
def standin() -> Iterator[VertexStandIn]:
    with VertexStandIn() as server:
        yield server


@pytest.fixture
def vertex(standin: VertexStandIn) -> VertexModel:
    standin.reset()
    return VertexModel(
        project=PROJECT,
        location=LOCATION,
        model=MODEL,
        base_url=standin.base_url,
        credentials=Credentials(token="standin-token"),  # type: ignore[no-untyped-call]
        trust_env=False,
    )


def _generate(model: LanguageModel, *, bound: int = 4096, deadline: float = 5.0) -> ModelResult:
    return model.generate(PROMPT, EXTRACTION_SCHEMA, bound, deadline)


def test_the_rules_answer_comes_back_through_vertex_as_json(vertex: VertexModel) -> None:
    result = _generate(vertex)
    answer = parse_answer(result.text, ExtractionAnswer, "extraction")
    assert {c.text for c in answer.candidates} >= {
        "The user lives in Tokyo.",
        "The user works at Alphaus.",
    }
    assert vertex.name == MODEL and vertex.region == LOCATION


def test_the_request_carries_schema_bound_and_deterministic_settings(
    vertex: VertexModel, standin: VertexStandIn
) -> None:
    _generate(vertex, bound=1234, deadline=7.0)
    [request] = standin.requests
    assert request.path == (
        f"/v1beta1/projects/{PROJECT}/locations/{LOCATION}/publishers/google/models/"
        f"{MODEL}:generateContent"
    )
    config = request.body["generationConfig"]
    assert config["responseJsonSchema"] == EXTRACTION_SCHEMA
    assert config["responseMimeType"] == "application/json"
    assert config["maxOutputTokens"] == 1234
    assert config["temperature"] == 0
    assert request.body["contents"][0]["parts"][0]["text"] == PROMPT
    assert request.headers["X-Server-Timeout"] == "7"
    assert request.headers["Authorization"] == "Bearer standin-token"


def test_usage_counts_prompt_tokens_in_and_answer_plus_thoughts_out(
    vertex: VertexModel, standin: VertexStandIn
) -> None:
    standin.reset(
        ScriptedModel(
            [
                ModelResult(
                    text='{"candidates": []}', input_tokens=321, output_tokens=45, model="gemini-x"
                )
            ]
        )
    )
    standin.thoughts_tokens = 1000
    result = _generate(vertex)
    assert (result.input_tokens, result.output_tokens) == (321, 1045)
    assert result.model == "gemini-x"  # the modelVersion Vertex AI reported


def test_a_slow_call_is_deadline_exceeded_naming_the_bound_without_waiting(
    vertex: VertexModel, standin: VertexStandIn
) -> None:
    _generate(vertex)  # builds the lazy client first: the bound is the call's, not the import's
    standin.reset()
    standin.slow_next(5.0)
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded) as caught:
        _generate(vertex, deadline=0.5)
    assert time.monotonic() - started < 4.0  # the 0.5 s bound, not the 5 s answer
    assert caught.value.message == "the model call exceeded its 0.5 s bound"
    assert caught.value.metadata == {"inputTokens": "0", "outputTokens": "0"}
    assert len(standin.requests) == 1  # not retried


def test_a_slow_answer_left_behind_does_not_take_the_next_answer(
    vertex: VertexModel, standin: VertexStandIn
) -> None:
    # The stand-in's own rule, which this file's tests lean on: a request the client gave
    # up on ends at the next reset, and never answers from the model set after it.
    _generate(vertex)
    standin.reset()
    standin.slow_next(3.0)
    with pytest.raises(DeadlineExceeded):
        _generate(vertex, deadline=0.5)
    standin.reset(ScriptedModel([ModelResult(text='{"candidates": []}', input_tokens=3)]))
    assert standin.wait_idle(timeout=30.0)
    assert _generate(vertex).text == '{"candidates": []}'


def test_vertex_ending_the_call_at_its_server_timeout_is_deadline_exceeded(
    vertex: VertexModel, standin: VertexStandIn
) -> None:
    standin.fail_next(504)
    with pytest.raises(DeadlineExceeded, match="the model call exceeded its 30 s bound"):
        _generate(vertex, deadline=30.0)


def test_an_answer_cut_at_max_tokens_is_aborted_naming_the_bound_with_its_usage(
    vertex: VertexModel, standin: VertexStandIn
) -> None:
    standin.cut_next()
    with pytest.raises(Aborted) as caught:
        _generate(vertex, bound=2048)
    assert "max output tokens per call (2048)" in caught.value.message
    assert caught.value.metadata["outputTokens"] == "2048"
    assert int(caught.value.metadata["inputTokens"]) > 0


def test_a_model_stopping_at_its_output_bound_is_aborted(
    vertex: VertexModel, standin: VertexStandIn
) -> None:
    standin.reset(ScriptedModel([ModelResult(text="{}", input_tokens=10, output_tokens=99)]))
    with pytest.raises(Aborted, match=r"max output tokens per call \(50\)"):
        _generate(vertex, bound=50)


@pytest.mark.parametrize(
    ("code", "error"),
    [
        (429, ResourceExhausted),
        (500, Unavailable),
        (503, Unavailable),
        (400, InvalidArgument),
        (403, Internal),
        (404, Internal),
    ],
)
def test_error_statuses_map_to_the_service_errors_and_are_not_retried(
    vertex: VertexModel, standin: VertexStandIn, code: int, error: type[Exception]
) -> None:
    standin.fail_next(code)
    with pytest.raises(error) as caught:
        _generate(vertex)
    assert type(caught.value) is error
    assert str(code) in str(caught.value)
    assert len(standin.requests) == 1


def test_an_answer_without_text_is_internal_and_keeps_its_usage(
    vertex: VertexModel, standin: VertexStandIn
) -> None:
    standin.reset(ScriptedModel([ModelResult(text="", input_tokens=12, output_tokens=0)]))
    with pytest.raises(Internal, match="returned no answer") as caught:
        _generate(vertex)
    assert caught.value.metadata == {"inputTokens": "12", "outputTokens": "0"}


def test_an_unreachable_endpoint_is_unavailable() -> None:
    with VertexStandIn() as gone:
        base_url = gone.base_url
    model = VertexModel(
        project=PROJECT,
        location=LOCATION,
        base_url=base_url,
        credentials=Credentials(token="t"),  # type: ignore[no-untyped-call]
        trust_env=False,
    )
    with pytest.raises(Unavailable, match="could not reach Vertex AI"):
        _generate(model)


def test_the_client_is_built_on_first_call_not_on_construction(standin: VertexStandIn) -> None:
    model = VertexModel(project=PROJECT, location=LOCATION, base_url=standin.base_url)
    client: Any = model._client
    assert not client.built
