"""Handlers of memory:form, of its operations and of the execution-log steps it writes.

`jennah.api.routes` has authenticated the caller and opened the agent workspace
(`Access.open_scope`: agent.memory:form with create for memory:form,
agent.memory:query for a step; an operation's workspace is opened here) before
these run; errors go through `jennah.api.errors` like every other. memory:form
submits an operation (`services.formation.Formation`) and waits for it, or
answers it at once with "async"; a formation uses the memory vocabulary
resolved for the workspace when the request arrives.
"""

from __future__ import annotations

import select
import socket
from collections.abc import Callable

import flask

from jennah.api import dto
from jennah.api.errors import error_response
from jennah.api.handlers import Call, Reply
from jennah.domain.access import Permission, ScopeKind
from jennah.domain.formation import (
    CandidateOutcome,
    FormationReceipt,
    SummarizedStructures,
    Turn,
    TurnRole,
)
from jennah.domain.models import ExecutionLogStep
from jennah.domain.operations import FormationOperation, error_from, operation_name
from jennah.errors import NotFound
from jennah.services.formation import FormationRequest

# memory:form


def form(call: Call) -> Reply:
    """Submit the formation and wait for its receipt (the client closing the connection
    cancels it), or answer its operation at once with `async`."""
    request: dto.FormRequest = call.request
    answer = call.services.formation.form(
        FormationRequest(
            turns=[Turn(role=TurnRole(t.role), content=t.content) for t in request.turns],
            observed_at=request.observed_at,
            formation_key=request.formation_key,
        ),
        call.caller,
        call.scope.ref,
        call.scope.registration,
        run_async=request.run_async,
        client_gone=client_gone_probe(),
    )
    if isinstance(answer, FormationOperation):
        return Reply(operation_out(answer))
    return Reply(receipt_out(answer))


def client_gone_probe() -> Callable[[], bool]:
    """Whether the client of the current request has closed its connection.

    The request body is read by now, so the connection is readable only when the
    client closed it (recv returns b"") or broke it. Servers that expose the socket
    (gunicorn under functions-framework, werkzeug's) are probed; waitress (`jnh serve`)
    tells it itself; on others the probe always answers False.
    """
    environ = flask.request.environ
    disconnected = environ.get("waitress.client_disconnected")
    if callable(disconnected):
        return lambda: bool(disconnected())
    sock = environ.get("gunicorn.socket") or environ.get("werkzeug.socket")
    if not isinstance(sock, socket.socket):
        return lambda: False

    def gone() -> bool:
        try:
            readable, _, _ = select.select([sock], [], [], 0)
            if not readable:
                return False
            return sock.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    return gone


def get_operation(call: Call) -> Reply:
    """GET /v1/operations/{operationId}: another enterprise's operation, and one in an agent
    workspace the caller does not reach, are answered as though they did not exist."""
    services = call.services
    operation_id = call.path["operationId"]
    operation = services.operations.get(call.caller.enterprise_id, operation_id)
    missing = NotFound(
        f"operation {operation_id!r} was not found (operations are kept for 7 days)",
        reason="OPERATION_NOT_FOUND",
        metadata={"operationId": operation_id},
    )
    if operation is None:
        raise missing
    try:
        services.access.open_scope(
            call.caller, operation.scope_id, ScopeKind.AGENT, Permission.MEMORY_FORM, create=True
        )
    except NotFound:
        raise missing from None
    return Reply(operation_out(operation))


def operation_out(operation: FormationOperation) -> dto.Operation:
    response = error = None
    if operation.receipt_json is not None:
        response = receipt_out(FormationReceipt.model_validate_json(operation.receipt_json))
    elif operation.error is not None:
        error = error_response(error_from(operation.error)).error
    return dto.Operation(
        name=operation_name(operation.operation_id),
        done=operation.done,
        metadata=dto.OperationMetadata(
            state=operation.state.value,
            agent_instance_id=operation.scope_id,
            caller=operation.caller,
            formation_key=operation.formation_key,
            attempts=operation.attempts,
            create_time=operation.create_time,
            update_time=operation.update_time,
            expire_time=operation.expire_time,
        ),
        response=response,
        error=error,
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
    step = call.services.store.get_step(scope, step_id)
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
