"""The formation service's small parts: bounds, the token estimate, usage, verification."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from jennah.adapters.models.scripted import ScriptedModel
from jennah.domain.formation import (
    CandidateKind,
    Decision,
    EntityRef,
    ExtractedCandidate,
    Turn,
    TurnRole,
    render,
)
from jennah.domain.models import ScopeRef
from jennah.errors import Aborted, DeadlineExceeded, InvalidArgument, Unavailable
from jennah.ports.model import ModelResult
from jennah.ports.prompts import ExtractionAnswer
from jennah.services.formation import FormationCommand, FormationUsage, estimate_input_tokens
from jennah.services.formation.candidates import Candidate
from jennah.services.formation.command import check_input_cap, check_request
from jennah.services.formation.model_calls import CallBounds, call_model
from jennah.services.formation.verification import platform_keys, verify

NOW = datetime(2026, 8, 25, tzinfo=UTC)
SCOPE = ScopeRef(enterprise_id="e", scope_id="s")
TURNS = [Turn(role=TurnRole.USER, content="I live in   Tokyo\nand work at Alphaus.")]


def test_the_input_estimate_is_utf8_bytes_over_four_rounded_up() -> None:
    rendered = render([Turn(role=TurnRole.USER, content="日本")], NOW)
    assert estimate_input_tokens(rendered) == -(-len(rendered.tool_input.encode()) // 4)


def test_the_cap_message_names_the_plans_cap() -> None:
    command = FormationCommand(scope=SCOPE, turns=TURNS, input_token_cap=10)
    with pytest.raises(InvalidArgument) as refused:
        check_input_cap(command, render(TURNS, NOW))
    assert "your plan's input cap of 10 tokens" in refused.value.message
    assert refused.value.metadata["inputTokenCap"] == "10"


def test_a_naive_observed_at_is_utc() -> None:
    command = FormationCommand(scope=SCOPE, turns=TURNS, observed_at=datetime(2026, 8, 26))
    with pytest.raises(InvalidArgument):
        check_request(command, NOW)


class _FailingModel:
    name = "failing"
    region = "local"

    def generate(
        self,
        prompt: str,
        json_schema: dict[str, Any],
        max_output_tokens: int,
        deadline_seconds: float,
    ) -> ModelResult:
        raise DeadlineExceeded(
            "the model call exceeded its 2 s bound",
            metadata={"inputTokens": "120", "outputTokens": "7"},
        )


def test_a_failed_call_still_counts_with_the_usage_it_reported() -> None:
    usage = FormationUsage()
    assert usage.units == 0 and not usage.reached_model
    with pytest.raises(DeadlineExceeded):
        call_model(
            _FailingModel(),
            "extraction",
            "p",
            {},
            ExtractionAnswer,
            CallBounds(deadline_seconds=2, max_output_tokens=10),
            usage,
        )
    assert (usage.model_calls, usage.input_tokens, usage.output_tokens) == (1, 120, 7)
    assert usage.units == 1 and usage.model == "failing"


class _UnreachableModel:
    name, region = "unreachable", "local"

    def generate(
        self,
        prompt: str,
        json_schema: dict[str, Any],
        max_output_tokens: int,
        deadline_seconds: float,
    ) -> ModelResult:
        raise Unavailable("the model call could not reach Vertex AI: connection refused")


def test_a_call_that_never_reached_the_model_does_not_count() -> None:
    usage = FormationUsage()
    bounds = CallBounds(deadline_seconds=2, max_output_tokens=10)
    with pytest.raises(Unavailable):
        call_model(_UnreachableModel(), "extraction", "p", {}, ExtractionAnswer, bounds, usage)
    assert (usage.model_calls, usage.units, usage.reached_model) == (0, 0, False)


def test_the_output_budget_bounds_the_calls_together() -> None:
    model = ScriptedModel(
        [ModelResult(text='{"candidates": []}', output_tokens=60)] * 2
    )  # fmt: skip
    usage = FormationUsage()
    bounds = CallBounds(deadline_seconds=2, max_output_tokens=80, output_token_budget=100)

    def call() -> None:
        call_model(model, "extraction", "p", {}, ExtractionAnswer, bounds, usage)

    call()
    assert model.calls[0].max_output_tokens == 80  # the per-call bound is the smaller
    with pytest.raises(Aborted):  # 60 more is over the 40 the first call left
        call()
    assert model.calls[1].max_output_tokens == 40
    assert (usage.model_calls, usage.output_tokens) == (2, 100)  # cut at its bound
    with pytest.raises(Aborted) as spent:  # nothing left: no call at all
        call()
    assert spent.value.reason == "FORMATION_OUTPUT_BOUND"
    assert "100 output tokens" in spent.value.message
    assert len(model.calls) == 2 and usage.model_calls == 2


def _verified(**fields: Any) -> Candidate:
    candidate = Candidate(index=0, extracted=ExtractedCandidate(**fields))
    verify(candidate, TURNS, frozenset({"Organization"}))
    return candidate


def test_quotes_match_up_to_case_and_spacing_and_otherwise_drop_only_the_turns() -> None:
    ok = _verified(kind=CandidateKind.FACT, text="t", turns=[0], quote="live in tokyo AND work")
    assert ok.decision is None and ok.source_turns == [0] and platform_keys(ok) == 2
    elsewhere = _verified(kind=CandidateKind.FACT, text="t", turns=[5], quote="live in TOKYO")
    assert elsewhere.decision is None and elsewhere.source_turns is None
    assert platform_keys(elsewhere) == 1
    nowhere = _verified(kind=CandidateKind.FACT, text="t", turns=[0], quote="live in Kyoto")
    assert nowhere.decision is Decision.REJECTED
    assert "does not appear in the conversation" in (nowhere.rejection_reason or "")


def test_relationship_shapes() -> None:
    shape = _verified(
        kind=CandidateKind.RELATIONSHIP,
        text="the user works at Alphaus",
        turns=[0],
        quote="Alphaus",
        subject=EntityRef(name=" the   user "),
        relation="works at (since 2020)",
        object=EntityRef(name="Alphaus", entity_class="Organization"),
    ).edge
    assert shape is not None
    assert (shape.source.label, shape.relation, shape.target.node_type) == (
        "the user",
        "works at (since 2020)",
        "Organization",
    )
