"""Errors the client raises: one class per google.rpc status, each also the matching
`jennah.errors` class, so `except jennah.errors.NotFound` catches a server's NOT_FOUND too.

Each carries the status name, the HTTP code, the message, the ErrorInfo reason and
metadata, and the raw `details` of the Google error body.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import httpx

from jennah import errors

ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"


class ApiError(errors.JennahError):
    """A call that failed: the server's Google error body, or a failure on this side."""

    def __init__(
        self,
        message: str,
        *,
        code: int,
        reason: str | None = None,
        metadata: Mapping[str, str] | None = None,
        details: Sequence[Mapping[str, Any]] = (),
        response: httpx.Response | None = None,
    ) -> None:
        super().__init__(message, reason=reason, metadata=dict(metadata or {}))
        self.code = code
        self.details = [dict(detail) for detail in details]
        self.response = response

    @property
    def http_status(self) -> int:
        return self.code

    @property
    def field_violations(self) -> list[tuple[str, str]]:
        """(field, description) of each google.rpc.BadRequest field violation."""
        return [
            (str(violation.get("field", "")), str(violation.get("description", "")))
            for detail in self.details
            if detail.get("@type") == BAD_REQUEST
            for violation in detail.get("fieldViolations", [])
            if isinstance(violation, Mapping)
        ]

    def __str__(self) -> str:
        return f"{self.status}: {self.message}"


class InvalidArgument(ApiError, errors.InvalidArgument):
    pass


class FailedPrecondition(ApiError, errors.FailedPrecondition):
    pass


class OutOfRange(ApiError):
    status: ClassVar[str] = "OUT_OF_RANGE"


class Unauthenticated(ApiError, errors.Unauthenticated):
    pass


class PermissionDenied(ApiError, errors.PermissionDenied):
    pass


class NotFound(ApiError, errors.NotFound):
    pass


class Aborted(ApiError, errors.Aborted):
    pass


class AlreadyExists(ApiError, errors.AlreadyExists):
    pass


class ResourceExhausted(ApiError, errors.ResourceExhausted):
    pass


class Cancelled(ApiError, errors.ClientGone):
    pass


class Internal(ApiError, errors.Internal):
    pass


class Unimplemented(ApiError, errors.Unimplemented):
    pass


class Unavailable(ApiError, errors.Unavailable):
    pass


class DeadlineExceeded(ApiError, errors.DeadlineExceeded):
    pass


class DataLoss(ApiError):
    status: ClassVar[str] = "DATA_LOSS"


class Unknown(ApiError):
    """UNKNOWN: a status this client does not know, or an answer that is no Google error."""

    status: ClassVar[str] = "UNKNOWN"


class ConnectionFailed(Unavailable):
    """No answer: the server could not be reached (`connecting`) or the exchange broke."""

    def __init__(self, message: str, *, endpoint: str, connecting: bool) -> None:
        super().__init__(message, code=503)
        self.endpoint = endpoint
        self.connecting = connecting


BY_STATUS: dict[str, type[ApiError]] = {
    cls.status: cls
    for cls in (
        InvalidArgument, FailedPrecondition, OutOfRange, Unauthenticated, PermissionDenied,
        NotFound, Aborted, AlreadyExists, ResourceExhausted, Cancelled, Internal,
        Unimplemented, Unavailable, DeadlineExceeded, DataLoss, Unknown,
    )
}  # fmt: skip


def from_response(response: httpx.Response) -> ApiError:
    """The typed error a non-2xx answer (or a 2xx that is no JSON object) stands for."""
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or "status" not in error:
        return Unknown(
            f"unexpected HTTP {response.status_code} answer",
            code=response.status_code,
            response=response,
        )
    return from_status(error, response.status_code, response)


def from_status(
    error: Mapping[str, Any], code: int, response: httpx.Response | None = None
) -> ApiError:
    """The typed error of a google.rpc.Status object (an error body's, an operation's)."""
    details = [d for d in error.get("details", []) if isinstance(d, dict)]
    info = next((d for d in details if d.get("@type") == ERROR_INFO), {})
    metadata = info.get("metadata")
    cls = BY_STATUS.get(str(error.get("status")), Unknown)
    return cls(
        str(error.get("message", "")),
        code=code,
        reason=info.get("reason"),
        metadata={str(k): str(v) for k, v in metadata.items()}
        if isinstance(metadata, dict)
        else {},
        details=details,
        response=response,
    )
