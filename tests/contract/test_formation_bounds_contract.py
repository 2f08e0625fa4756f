"""Contract: request bounds (nothing spent), per-call model bounds (nothing written,
usage kept), and empty formations (a successful receipt)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest

from jennah.adapters.models.scripted import Slow
from jennah.domain.formation import MAX_TURNS, SOURCE_STEP, SOURCE_TURNS, Turn, render
from jennah.domain.models import Direction, ScopeRef
from jennah.errors import Aborted, DeadlineExceeded, Internal, InvalidArgument
from jennah.ports.model import ModelResult
from jennah.ports.store import MemoryStore
from jennah.services.formation import FormationUsage
from jennah.services.formation.candidates import node_id
from jennah.services.formation.command import OBSERVED_AT_SKEW
from tests.contract.formation_support import (
    RECEIVED,
    assistant,
    at,
    chunk,
    decisions,
    extraction,
    fact,
    relationship,
    run,
    scripted,
    user,
    verdicts,
    written_rows,
)

TOKYO = "The user lives in Tokyo."


def _refused(store: MemoryStore, scope: ScopeRef, turns: Sequence[Turn], **extra: Any) -> str:
    model = scripted()
    usage = FormationUsage()
    with pytest.raises(InvalidArgument) as refused:
        run(store, scope, turns, model, usage=usage, **extra)
    assert model.calls == [] and usage.units == 0  # nothing spent
    assert written_rows(store, scope) == {}
    return refused.value.message


def test_turn_count_is_bounded(store: MemoryStore, scope: ScopeRef) -> None:
    assert "1 to 200 turns" in _refused(store, scope, [])
    message = _refused(store, scope, [user("hi")] * (MAX_TURNS + 1))
    assert "201 turns" in message and "at most 200" in message


def test_a_conversation_of_blank_turns_only_is_refused(store: MemoryStore, scope: ScopeRef) -> None:
    assert "every turn is blank" in _refused(store, scope, [user(""), user(" \n ")])


def test_a_blank_turn_is_formed_beside_others_and_cannot_be_cited(
    store: MemoryStore, scope: ScopeRef
) -> None:
    turns = [user("I live in Tokyo."), assistant(""), user("Thanks. "), assistant(" \n ")]
    model = scripted(
        extraction(
            fact(TOKYO, [0], "I live in Tokyo"),
            fact("The user thanked the assistant.", [1, 2], "Thanks"),  # cites a blank turn
            fact("The assistant looked something up.", [3], "Thanks"),  # cites only a blank turn
        )
    )
    receipt = run(store, scope, turns, model)
    assert decisions(receipt) == ["NEW", "NEW", "NEW"]
    sent = model.calls[0].data["turns"]
    assert [(t["index"], t["content"]) for t in sent] == [
        (0, "I live in Tokyo."), (1, ""), (2, "Thanks. "), (3, " \n "),
    ]  # fmt: skip
    rendered = render(turns, RECEIVED)
    assert chunk(store, scope, TOKYO).metadata == {
        SOURCE_STEP: rendered.step_id, SOURCE_TURNS: "0",
    }  # fmt: skip
    for text in ("The user thanked the assistant.", "The assistant looked something up."):
        assert chunk(store, scope, text).metadata == {SOURCE_STEP: rendered.step_id}
    step = store.get_step(scope, rendered.step_id)
    assert step is not None and step.tool_input == rendered.tool_input
    assert rendered.turn_text(1) == "[turn 1] assistant:\n\n"  # its header, then nothing
    assert rendered.turn_text(3) == "[turn 3] assistant:\n \n \n"


def test_formation_key_length_is_bounded(store: MemoryStore, scope: ScopeRef) -> None:
    message = _refused(store, scope, [user("hi")], formation_key="k" * 257)
    assert "257 characters" in message and "at most 256" in message


def test_input_over_the_plans_cap_is_refused_naming_it(store: MemoryStore, scope: ScopeRef) -> None:
    turns = [user("x" * 4000) for _ in range(9)]  # ~36,000 bytes: ~9,000 tokens
    message = _refused(store, scope, turns, input_token_cap=8_192)
    assert "exceeds your plan's input cap of 8,192 tokens" in message


def test_input_under_the_cap_is_formed(store: MemoryStore, scope: ScopeRef) -> None:
    turns = [user("x" * 4000) for _ in range(7)]  # ~28,000 bytes: ~7,000 tokens
    receipt = run(store, scope, turns, scripted(extraction()), input_token_cap=8_192)
    assert receipt.candidates == []


def test_observed_at_in_the_future_is_refused(store: MemoryStore, scope: ScopeRef) -> None:
    assert "observedAt" in _refused(store, scope, [user("hi")], observed_at=at(2027))
    skewed = RECEIVED + OBSERVED_AT_SKEW + timedelta(seconds=1)
    message = _refused(store, scope, [user("hi")], observed_at=skewed)
    assert "observedAt" in message and "more than 5 minutes later" in message


@pytest.mark.parametrize("ahead", [timedelta(seconds=1), timedelta(minutes=4), OBSERVED_AT_SKEW])
def test_observed_at_up_to_five_minutes_ahead_is_read_as_the_receipt_time(
    store: MemoryStore, scope: ScopeRef, ahead: timedelta
) -> None:
    turns = [user("I live in Tokyo and I work at Alphaus.")]
    model = scripted(
        extraction(
            fact(TOKYO, [0], "I live in Tokyo"),
            relationship("the user", "WORKS_AT", "Alphaus", [0], "I work at Alphaus"),
        )
    )
    receipt = run(store, scope, turns, model, observed_at=RECEIVED + ahead, formation_key="k")
    assert decisions(receipt) == ["NEW", "NEW"]
    assert model.calls[0].data["clock"] == RECEIVED.isoformat()  # the clock is the receipt's
    assert chunk(store, scope, TOKYO, RECEIVED).valid_at == RECEIVED
    (edge,) = store.edges_touching(scope, [node_id("the user")], [], Direction.OUTBOUND, None)
    assert edge.valid_at == RECEIVED
    # a resend of the same body a little later is the same request: its receipt replayed
    again = run(
        store, scope, turns, scripted(), observed_at=RECEIVED + ahead, formation_key="k",
        received=RECEIVED + timedelta(seconds=30),
    )  # fmt: skip
    assert again.replay is True and again.candidates == receipt.candidates


def test_an_empty_formation_is_a_successful_receipt(store: MemoryStore, scope: ScopeRef) -> None:
    model = scripted(extraction())
    receipt = run(store, scope, [user("Thanks, bye!")], model)
    assert receipt.candidates == [] and receipt.commit_timestamp is not None
    assert receipt.formation_units == 1 and receipt.execution_log_rows == 0
    assert written_rows(store, scope) == {}  # no memory, no step, not even a registration


def test_a_call_past_its_time_bound_writes_nothing(store: MemoryStore, scope: ScopeRef) -> None:
    usage = FormationUsage()
    model = scripted(Slow(5.0, extraction(fact(TOKYO, [0], "I live in Tokyo"))))
    with pytest.raises(DeadlineExceeded) as failed:
        run(store, scope, [user("I live in Tokyo.")], model, usage=usage, deadline_seconds=0.05)
    assert "0.05 s bound" in failed.value.message
    assert written_rows(store, scope) == {}
    assert usage.model_calls == 1 and usage.units == 1  # it reached the model


def test_a_reconciliation_past_its_bound_keeps_the_extractions_usage(
    store: MemoryStore, scope: ScopeRef
) -> None:
    run(
        store,
        scope,
        [user("I live in Tokyo.")],
        scripted(extraction(fact(TOKYO, [0], "I live in Tokyo"))),
        received=at(2026, 8, 1),
    )
    before = written_rows(store, scope)
    usage = FormationUsage()
    model = scripted(
        extraction(fact("The user lives in Osaka.", [0], "I moved to Osaka")),
        Slow(5.0, verdicts(("The user lives in Osaka.", "new", None))),
    )
    with pytest.raises(DeadlineExceeded):
        run(store, scope, [user("I moved to Osaka.")], model, usage=usage, deadline_seconds=0.1)
    assert written_rows(store, scope) == before
    assert usage.model_calls == 2 and usage.input_tokens > 0 and usage.output_tokens > 0


def test_an_answer_over_the_output_bound_writes_nothing(
    store: MemoryStore, scope: ScopeRef
) -> None:
    usage = FormationUsage()
    model = scripted(extraction(*(fact(f"Fact {i}.", [0], "x") for i in range(50))))
    with pytest.raises(Aborted) as failed:
        run(store, scope, [user("x")], model, usage=usage, max_output_tokens=100)
    assert "max output tokens per call (100)" in failed.value.message
    assert written_rows(store, scope) == {}
    assert usage.input_tokens > 0 and usage.output_tokens == 100


def test_a_reported_output_over_the_bound_is_aborted(store: MemoryStore, scope: ScopeRef) -> None:
    answer = ModelResult(text='{"candidates": []}', input_tokens=10, output_tokens=500)
    with pytest.raises(Aborted) as failed:
        run(store, scope, [user("x")], scripted(answer), max_output_tokens=100)
    assert "(100)" in failed.value.message and failed.value.reason == "MODEL_CALL_OUTPUT_BOUND"


def test_an_answer_off_its_schema_writes_nothing(store: MemoryStore, scope: ScopeRef) -> None:
    usage = FormationUsage()
    with pytest.raises(Internal):
        run(store, scope, [user("x")], scripted('{"candidates": 3}'), usage=usage)
    assert written_rows(store, scope) == {} and usage.units == 1


def test_every_call_is_bounded_as_asked(store: MemoryStore, scope: ScopeRef) -> None:
    model = scripted(extraction())
    run(store, scope, [user("x")], model, deadline_seconds=7.5, max_output_tokens=1234)
    (call,) = model.calls
    assert (call.deadline_seconds, call.max_output_tokens) == (7.5, 1234)
    assert call.data["clock"] == RECEIVED.isoformat()


def _tokyo_known(store: MemoryStore, scope: ScopeRef) -> dict[str, int]:
    """A workspace holding "The user lives in Tokyo." (so a formation reconciles)."""
    model = scripted(extraction(fact(TOKYO, [0], "I live in Tokyo")))
    run(store, scope, [user("I live in Tokyo.")], model, received=at(2026, 8, 1))
    return written_rows(store, scope)


STILL_TOKYO = "The user still lives in Tokyo."


def _still_tokyo(output_tokens: int) -> ModelResult:
    answer = extraction(fact(STILL_TOKYO, [0], "I still live in Tokyo"))
    return ModelResult(text=json.dumps(answer), input_tokens=50, output_tokens=output_tokens)


def test_the_output_budget_bounds_both_calls_together(store: MemoryStore, scope: ScopeRef) -> None:
    _tokyo_known(store, scope)
    model = scripted(_still_tokyo(600), verdicts((STILL_TOKYO, "new", None)))
    turns = [user("I still live in Tokyo.")]
    receipt = run(store, scope, turns, model, max_output_tokens=800, output_token_budget=1_000)
    assert decisions(receipt) == ["NEW"]
    assert [call.max_output_tokens for call in model.calls] == [800, 400]  # 1,000 - 600


def test_a_formation_whose_budget_is_spent_stops_before_reconciliation(
    store: MemoryStore, scope: ScopeRef
) -> None:
    before = _tokyo_known(store, scope)
    usage = FormationUsage()
    model = scripted(_still_tokyo(1_000), verdicts((STILL_TOKYO, "new", None)))
    turns = [user("I still live in Tokyo.")]
    with pytest.raises(Aborted) as failed:
        run(store, scope, turns, model, usage=usage, output_token_budget=1_000)
    assert failed.value.reason == "FORMATION_OUTPUT_BOUND"
    assert "1000 output tokens" in failed.value.message
    assert len(model.calls) == 1 and written_rows(store, scope) == before
    assert (usage.model_calls, usage.output_tokens, usage.units) == (1, 1_000, 1)
