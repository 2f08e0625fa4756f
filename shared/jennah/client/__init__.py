"""jennah.client: the typed Python client of the Jennah HTTP API (see `client.Client`).

It talks HTTP only, like `jnh` (which is built on it): it imports the wire models
(jennah.api.dto), never the services or the store.
"""

from jennah.client.client import DEFAULT, Agent, Client, Scope
from jennah.client.errors import (
    Aborted,
    AlreadyExists,
    ApiError,
    Cancelled,
    ConnectionFailed,
    DataLoss,
    DeadlineExceeded,
    FailedPrecondition,
    Internal,
    InvalidArgument,
    NotFound,
    OutOfRange,
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
    Unimplemented,
    Unknown,
)
from jennah.client.pagination import Pager
from jennah.client.retry import DEFAULT_RETRY, Retry

__all__ = [
    "DEFAULT",
    "DEFAULT_RETRY",
    "Aborted",
    "Agent",
    "AlreadyExists",
    "ApiError",
    "Cancelled",
    "Client",
    "ConnectionFailed",
    "DataLoss",
    "DeadlineExceeded",
    "FailedPrecondition",
    "Internal",
    "InvalidArgument",
    "NotFound",
    "OutOfRange",
    "Pager",
    "PermissionDenied",
    "ResourceExhausted",
    "Retry",
    "Scope",
    "Unauthenticated",
    "Unavailable",
    "Unimplemented",
    "Unknown",
]
