"""Structured JSON logs that Cloud Logging groups by request trace.

One JSON object per line on stderr, with `severity`, `message` and, when the
request carried `X-Cloud-Trace-Context`, `logging.googleapis.com/trace`.
"""

from __future__ import annotations

import json
import sys
import traceback
from contextvars import ContextVar

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
