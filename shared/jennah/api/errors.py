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
from jennah.errors import (
    Internal,
    InvalidArgument,
    InvalidFields,
    JennahError,
    NotFound,
    Unimplemented,
)

MAX_FIELD_VIOLATIONS = 100  # listed in one error body (an InvalidFields may find more)


class MethodNotAllowed(JennahError):
    """The path exists but not for this HTTP method.

    google.rpc has no status for it, and Google's APIs answer a method a path does not
    bind as an unknown method: 404 NOT_FOUND ("Method not found."). So does this API,
    with the methods the path takes in an `Allow` header and in the ErrorInfo.
    """

    status = "NOT_FOUND"

    def __init__(self, method: str, path: str, allowed: list[str]) -> None:
        super().__init__(
            f"Method not found: {method} is not bound on {path[:200]}; use {' or '.join(allowed)}",
            reason="METHOD_NOT_ALLOWED",
            metadata={"method": method[:32], "allowed": ",".join(allowed)},
        )
        self.allowed = allowed


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


def uri_too_long(limit: int) -> HttpRefusal:
    return HttpRefusal(
        414,
        f"The request line (method, path and query) exceeds the limit: {limit} bytes.",
        "URI_TOO_LONG",
        {"limitBytes": str(limit)},
    )


def headers_too_large(limit: int) -> HttpRefusal:
    return HttpRefusal(
        431,
        f"The request headers exceed the limit: {limit} bytes.",
        "HEADERS_TOO_LARGE",
        {"limitBytes": str(limit)},
    )


def malformed_request(detail: str) -> HttpRefusal:
    return HttpRefusal(400, f"Malformed HTTP request: {detail}", "MALFORMED_REQUEST", {})


class RequestTimeout(JennahError):
    """The client did not send its whole request in time (HTTP 408)."""

    status = "DEADLINE_EXCEEDED"

    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"The request was not received within {seconds:g} s; the connection is closed.",
            reason="REQUEST_TIMEOUT",
            metadata={"timeoutSeconds": f"{seconds:g}"},
        )

    @property
    def http_status(self) -> int:
        return 408


def from_http_status(code: int, description: str) -> JennahError:
    """A refusal made by the HTTP machinery itself (the WSGI server, werkzeug), by code."""
    if code == 404:
        return NotFound(f"no such resource: {description[:200]}", reason="ROUTE_NOT_FOUND")
    if code == 501:
        return Unimplemented(description, reason="NOT_IMPLEMENTED")
    if 400 <= code < 500:
        return HttpRefusal(code, description, "MALFORMED_REQUEST", {})
    return Internal("internal error; the server log has the details")


def error_response(err: JennahError) -> ErrorResponse:
    """The Google error body for an error; the reason defaults to the status name."""
    details: list[ErrorInfo | BadRequest | RetryInfo] = [
        ErrorInfo(reason=err.reason or err.status, metadata=err.metadata)
    ]
    field = err.metadata.get("field")
    if isinstance(err, InvalidFields) and err.violations:
        violations = err.violations[:MAX_FIELD_VIOLATIONS]
        details.append(
            BadRequest(
                field_violations=[FieldViolation(field=f, description=d) for f, d in violations]
            )
        )
    elif field is not None:
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
