"""Structured JSON logs that Cloud Logging groups by request trace.

One JSON object per line on stderr, with `severity`, `message` and, when the
request carried `X-Cloud-Trace-Context`, `logging.googleapis.com/trace`.
"""

from __future__ import annotations

import json
import sys
import traceback
from contextvars import ContextVar

from jennah.domain.formation import FormationReceipt
from jennah.domain.operations import FormationOperation, OperationState
from jennah.services.formation.model_calls import FormationUsage

TRACE_FIELD = "logging.googleapis.com/trace"
_trace: ContextVar[str | None] = ContextVar("jennah_trace", default=None)


def trace_from_header(header: str | None, project: str) -> str | None:
    """'TRACE_ID/SPAN_ID;o=1' -> 'projects/PROJECT/traces/TRACE_ID'."""
    if not header:
        return None
    trace_id = header.split("/", 1)[0].split(";", 1)[0].strip()
    if not trace_id:
        return None
    return f"projects/{project}/traces/{trace_id}"


def bind_trace(trace: str | None) -> None:
    """Attach `trace` to every log line written by this request's context."""
    _trace.set(trace)


def log(severity: str, message: str, **fields: object) -> None:
    entry: dict[str, object] = {"severity": severity, "message": message}
    trace = _trace.get()
    if trace is not None:
        entry[TRACE_FIELD] = trace
    entry.update(fields)
    sys.stderr.write(json.dumps(entry, default=str, ensure_ascii=False) + "\n")
    sys.stderr.flush()


def log_exception(message: str, exc: BaseException, **fields: object) -> None:
    """An ERROR entry carrying the stack trace (for Error Reporting), never sent to callers."""
    stack = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    log("ERROR", f"{message}\n{stack}", **fields)


def log_formation(operation: FormationOperation, usage: FormationUsage) -> None:
    """One line per finished formation: its operation, key, decisions, tokens, units and
    duration; never its conversation or the memory it formed."""
    fields: dict[str, object] = {
        "operation": f"operations/{operation.operation_id}",
        "enterprise": operation.enterprise_id,
        "scope": operation.scope_id,
        "caller": operation.caller,
        "formationKey": operation.formation_key,
        "state": operation.state.value,
        "attempts": operation.attempts,
        "modelCalls": usage.model_calls,
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "units": usage.units,
        "model": usage.model or None,
        "durationSeconds": round(
            (operation.update_time - operation.create_time).total_seconds(), 3
        ),
    }
    if operation.receipt_json is not None:
        receipt = FormationReceipt.model_validate_json(operation.receipt_json)
        decisions: dict[str, int] = {}
        for candidate in receipt.candidates:
            name = candidate.decision.value
            decisions[name] = decisions.get(name, 0) + 1
        fields |= {"decisions": decisions, "replay": receipt.replay}
    if operation.error is not None:
        fields |= {"errorCode": operation.error.code, "errorReason": operation.error.reason}
    severity = "WARNING" if operation.state is OperationState.FAILED else "INFO"
    log(severity, f"formation {operation.state.value.lower()}", formation=fields)
