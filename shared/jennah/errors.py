"""One error hierarchy for the whole service.

Each error carries its canonical status (google.rpc.Code name) and, where the
spec names one, a reason. Only the API layer turns these into HTTP bodies
(`jennah.api.errors`); everything below it raises these and nothing else.
"""

from __future__ import annotations

from typing import ClassVar

# Canonical google.rpc status names and their HTTP mapping.
HTTP_STATUS: dict[str, int] = {
    "INVALID_ARGUMENT": 400,
    "FAILED_PRECONDITION": 400,
    "OUT_OF_RANGE": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "ABORTED": 409,
    "ALREADY_EXISTS": 409,
    "RESOURCE_EXHAUSTED": 429,
    "CANCELLED": 499,
    "INTERNAL": 500,
    "UNIMPLEMENTED": 501,
    "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}


class JennahError(Exception):
    """Base of every error the service reports to a caller."""

    status: ClassVar[str] = "INTERNAL"

    def __init__(
        self,
        message: str,
        *,
        reason: str | None = None,
        metadata: dict[str, str] | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.metadata = dict(metadata or {})
        if field is not None:
            self.metadata.setdefault("field", field)

    @property
    def http_status(self) -> int:
        return HTTP_STATUS[self.status]


class InvalidArgument(JennahError):
    status = "INVALID_ARGUMENT"


class InvalidFields(InvalidArgument):
    """INVALID_ARGUMENT naming several fields at once: each (field, description) becomes one
    google.rpc.BadRequest field violation; the metadata's `field` is the first one."""

    def __init__(
        self, message: str, violations: list[tuple[str, str]], *, reason: str | None = None
    ) -> None:
        super().__init__(
            message,
            reason=reason,
            metadata={"violations": str(len(violations))},
            field=violations[0][0] if violations else None,
        )
        self.violations = list(violations)


class FailedPrecondition(JennahError):
    status = "FAILED_PRECONDITION"


class Unauthenticated(JennahError):
    status = "UNAUTHENTICATED"


class PermissionDenied(JennahError):
    status = "PERMISSION_DENIED"


class NotFound(JennahError):
    status = "NOT_FOUND"


class Aborted(JennahError):
    status = "ABORTED"


class AlreadyExists(JennahError):
    status = "ALREADY_EXISTS"


class ResourceExhausted(JennahError):
    status = "RESOURCE_EXHAUSTED"


class DeadlineExceeded(JennahError):
    status = "DEADLINE_EXCEEDED"


class Unavailable(JennahError):
    status = "UNAVAILABLE"


class Internal(JennahError):
    status = "INTERNAL"


class Unimplemented(JennahError):
    status = "UNIMPLEMENTED"


class ClientGone(JennahError):
    """The client closed the connection before its answer; its formation was cancelled."""

    status = "CANCELLED"


_BY_STATUS: dict[str, type[JennahError]] = {
    cls.status: cls
    for cls in (
        InvalidArgument,
        FailedPrecondition,
        Unauthenticated,
        PermissionDenied,
        NotFound,
        Aborted,
        AlreadyExists,
        ResourceExhausted,
        DeadlineExceeded,
        Unavailable,
        Internal,
        Unimplemented,
        ClientGone,
    )
}


def from_status(
    status: str, message: str, *, reason: str | None = None, metadata: dict[str, str] | None = None
) -> JennahError:
    """The error a canonical status name stands for (INTERNAL for one not known here)."""
    return _BY_STATUS.get(status, Internal)(message, reason=reason, metadata=metadata)
