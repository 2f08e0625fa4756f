"""Handlers of memory:form and of the execution-log steps it writes.

`jennah.api.routes` has authenticated the caller and opened the agent workspace
(`Access.open_scope`: agent.memory:form with create for memory:form,
agent.memory:query for a step) before these run; errors from the formation
service go through `jennah.api.errors` like every other. A formation uses the
memory vocabulary resolved for the workspace when it starts.
"""

from __future__ import annotations

from jennah.api import dto, logs
from jennah.api.handlers import Call, Reply
from jennah.domain.formation import (
    CandidateOutcome,
    FormationReceipt,
    SummarizedStructures,
    Turn,
    TurnRole,
)
from jennah.domain.models import ExecutionLogStep
from jennah.domain.vocabulary import to_data
from jennah.errors import NotFound
from jennah.services import metered_formation
from jennah.services.formation import FormationCommand, FormationUsage
from jennah.services.metered_formation import FormationDeps
from jennah.services.vocabulary import resolve_for_formation

# memory:form


def form(call: Call) -> Reply:
    usage = FormationUsage()
    try:
        receipt = metered_formation.form(form_command(call), call.caller, deps(call), usage)
    finally:
        _log_usage(call, usage)
    return Reply(receipt_out(receipt))


def deps(call: Call) -> FormationDeps:
    container = call.container
    return FormationDeps(
        store=container.store,
        embedder=container.embedder,
        model=container.model,
        ledger=container.usage,
        now=container.now,
    )


def form_command(call: Call) -> FormationCommand:
    """The formation a memory:form request asks for, with the bounds of the enterprise's
    plan and this deployment, and the vocabulary resolved for the workspace now, as the
    formation starts (a declaration made while it runs applies to the next one)."""
    request: dto.FormRequest = call.request
    container = call.container
    resolved = resolve_for_formation(container.vocabularies, call.scope.ref)
    return FormationCommand(
        scope=call.scope.ref,
        registration=call.scope.registration,
        caller=call.caller.principal,
        turns=[Turn(role=TurnRole(t.role), content=t.content) for t in request.turns],
        observed_at=request.observed_at,
        formation_key=request.formation_key,
        input_token_cap=metered_formation.input_token_cap(
            container.usage, call.caller.enterprise_id
        ),
        vocabulary=None if resolved is None else to_data(resolved),
        deadline_seconds=container.settings.model_call_timeout_seconds,
    )


def _log_usage(call: Call, usage: FormationUsage) -> None:
    """What a formation that reached the model spent, whether it then succeeded or not."""
    if not usage.reached_model:
        return
    logs.log(
        "INFO",
        f"formation usage: {usage.model_calls} model calls, {usage.units} units",
        formationUsage={
            "enterprise": call.caller.enterprise_id,
            "scope": call.scope.ref.scope_id,
            "caller": call.caller.principal,
            "model": usage.model,
            "region": usage.region,
            "modelCalls": usage.model_calls,
            "inputTokens": usage.input_tokens,
            "outputTokens": usage.output_tokens,
            "units": usage.units,
        },
    )


def receipt_out(receipt: FormationReceipt) -> dto.FormResponse:
    return dto.FormResponse(
        commit_timestamp=receipt.commit_timestamp,
        candidates=[candidate_out(c) for c in receipt.candidates],
        chunk_supersessions=receipt.chunk_supersessions,
        edge_supersessions=receipt.edge_supersessions,
        summarized_structures=[structure_out(s) for s in receipt.summarized_structures],
        candidates_dropped=receipt.candidates_dropped,
        candidate_cap=receipt.candidate_cap,
        execution_log_rows=receipt.execution_log_rows,
        formation_units=receipt.formation_units,
        input_tokens=receipt.input_tokens,
        output_tokens=receipt.output_tokens,
        replay=receipt.replay,
    )


def candidate_out(outcome: CandidateOutcome) -> dto.FormCandidate:
    return dto.FormCandidate(
        candidate_id=outcome.candidate_id,
        kind=outcome.kind.value,
        text=outcome.text,
        decision=outcome.decision.value,
        matched_id=outcome.matched_id,
        rejection_reason=outcome.rejection_reason,
        preserves_structure=True if outcome.preserves_structure else None,
    )


def structure_out(summary: SummarizedStructures) -> dto.SummarizedStructure:
    return dto.SummarizedStructure(
        turn_index=summary.turn_index,
        description=summary.description,
        summarized_count=summary.summarized_count,
    )


# execution-log steps


def get_step(call: Call) -> Reply:
    scope, step_id = call.scope.ref, call.path["stepId"]
    step = call.container.store.get_step(scope, step_id)
    if step is None:
        raise NotFound(
            f"execution-log step {step_id!r} was not found in agent workspace {scope.scope_id!r}",
            reason="STEP_NOT_FOUND",
            metadata={"stepId": step_id},
        )
    return Reply(step_out(scope.scope_id, step))


def step_out(agent_instance_id: str, step: ExecutionLogStep) -> dto.ExecutionLogStep:
    return dto.ExecutionLogStep(
        name=f"agents/{agent_instance_id}/memory/steps/{step.step_id}",
        step_id=step.step_id,
        tool_input=step.tool_input,
        metadata=step.metadata,
        create_time=step.created_at,
    )
