"""The one place a JennahError becomes a Google-style HTTP error body.

    {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "…",
               "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                            "reason": "…", "domain": "jennah", "metadata": {…}}]}}

An error naming a field also carries a google.rpc.BadRequest field violation;
one with a `retryDelay` ("5s") in its metadata, a google.rpc.RetryInfo.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from jennah.api.dto import (
    BadRequest,
    ErrorInfo,
    ErrorResponse,
    FieldViolation,
    RetryInfo,
    Status,
)
from jennah.errors import InvalidArgument, JennahError


class MethodNotAllowed(JennahError):
    """The path exists but not for this HTTP method (google.rpc has no 405 status)."""

    status = "UNIMPLEMENTED"

    def __init__(self, method: str, path: str, allowed: list[str]) -> None:
        super().__init__(
            f"{method} is not allowed on {path}; use {' or '.join(allowed)}",
            reason="METHOD_NOT_ALLOWED",
            metadata={"method": method, "allowed": ",".join(allowed)},
        )
        self.allowed = allowed

    @property
    def http_status(self) -> int:
        return 405


class HttpRefusal(InvalidArgument):
    """A request refused before it reaches a route: INVALID_ARGUMENT, as Google's APIs
    refuse an oversized payload, under the HTTP code that says why (413, 414, 431, 400)."""

    def __init__(self, code: int, message: str, reason: str, metadata: dict[str, str]) -> None:
        super().__init__(message, reason=reason, metadata=metadata)
        self.code = code

    @property
    def http_status(self) -> int:
        return self.code


def payload_too_large(limit: int) -> HttpRefusal:
    return HttpRefusal(
        413,
        f"Request payload size exceeds the limit: {limit} bytes.",
        "PAYLOAD_TOO_LARGE",
        {"limitBytes": str(limit)},
    )


def error_response(err: JennahError) -> ErrorResponse:
    """The Google error body for an error; the reason defaults to the status name."""
    details: list[ErrorInfo | BadRequest | RetryInfo] = [
        ErrorInfo(reason=err.reason or err.status, metadata=err.metadata)
    ]
    field = err.metadata.get("field")
    if field is not None:
        details.append(
            BadRequest(field_violations=[FieldViolation(field=field, description=err.message)])
        )
    retry_delay = err.metadata.get("retryDelay")
    if retry_delay is not None:
        details.append(RetryInfo(retry_delay=retry_delay))
    return ErrorResponse(
        error=Status(code=err.http_status, status=err.status, message=err.message, details=details)
    )


def from_validation_error(exc: ValidationError) -> InvalidArgument:
    """One INVALID_ARGUMENT naming the first bad field, by its wire (camelCase) path.

    An unknown field wins over the other faults: a misspelt name usually also
    leaves a required field missing, and the misspelling is the cause.
    """
    problems = exc.errors(include_url=False)
    unknown = [p for p in problems if p["type"] == "extra_forbidden"]
    first = (unknown or problems)[0]
    path = field_path(first["loc"])
    kind = first["type"]
    if kind == "extra_forbidden":
        return InvalidArgument(
            f"Invalid JSON payload: unknown field {path!r}", reason="UNKNOWN_FIELD", field=path
        )
    if kind == "missing":
        return InvalidArgument(f"{path} is required", reason="MISSING_FIELD", field=path)
    message = _describe(first)
    if not path:
        return InvalidArgument(f"Invalid JSON payload: {message}", reason="INVALID_FIELD")
    return InvalidArgument(
        f"Invalid value at {path!r}: {message}", reason="INVALID_FIELD", field=path
    )


def field_path(loc: tuple[int | str, ...]) -> str:
    """('chunks', 0, 'metadata', 'k') -> 'chunks[0].metadata.k'."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else part
    return path


def _describe(error: Any) -> str:
    message = str(error["msg"])
    prefix = "Value error, "
    if message.startswith(prefix):
        message = message[len(prefix) :]
    if error["type"] == "literal_error":
        return message.replace("Input should be", "must be one of")
    if error["type"] == "too_long":
        context = error.get("ctx", {})
        return (
            f"has {context.get('actual_length', 'too many')} items; at most "
            f"{context.get('max_length')} are allowed"
        )
    return message
