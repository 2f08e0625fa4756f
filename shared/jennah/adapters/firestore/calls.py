"""Time bounds and error mapping shared by the Firestore adapters.

Every call carries a per-attempt timeout. Idempotent calls (reads, `set`,
conditional updates) also retry UNAVAILABLE until the same bound has passed;
calls that are not safe to repeat (`create`, a delete that must find its
document) run once, so a retry of a write that did land cannot turn into a
false ALREADY_EXISTS or NOT_FOUND. Firestore errors surface as `jennah.errors`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from google.api_core import exceptions as google_errors
from google.api_core.retry import Retry, if_exception_type

from jennah import errors

DEFAULT_TIMEOUT_SECONDS = 10.0

_STATUS_ERRORS: dict[type[google_errors.GoogleAPICallError], type[errors.JennahError]] = {
    google_errors.InvalidArgument: errors.InvalidArgument,
    google_errors.AlreadyExists: errors.AlreadyExists,
    google_errors.Aborted: errors.Aborted,
    google_errors.ResourceExhausted: errors.ResourceExhausted,
    google_errors.DeadlineExceeded: errors.DeadlineExceeded,
    google_errors.ServiceUnavailable: errors.Unavailable,
}


class CallBounds:
    """The keyword arguments that bound one Firestore call, and its error mapping."""

    def __init__(self, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self.seconds = timeout_seconds
        self._retry = Retry(
            predicate=if_exception_type(google_errors.ServiceUnavailable),
            initial=0.1,
            maximum=1.0,
            multiplier=2.0,
            timeout=timeout_seconds,
        )

    @property
    def idempotent(self) -> dict[str, Any]:
        """For calls safe to repeat: a timeout per attempt, UNAVAILABLE retried."""
        return {"timeout": self.seconds, "retry": self._retry}

    @property
    def once(self) -> dict[str, Any]:
        """For calls that must not be repeated: one attempt, with a timeout."""
        return {"timeout": self.seconds, "retry": None}

    @contextmanager
    def mapped(self, what: str) -> Iterator[None]:
        """Raise Firestore errors from the block as jennah errors naming `what`."""
        try:
            yield
        except google_errors.RetryError as exc:  # the bounded retry of UNAVAILABLE gave up
            raise errors.Unavailable(
                f"Firestore {what} was unavailable for its whole {self.seconds:g} s bound"
            ) from exc
        except google_errors.GoogleAPICallError as exc:
            raise self._mapped(exc, what) from exc

    def _mapped(self, exc: google_errors.GoogleAPICallError, what: str) -> errors.JennahError:
        error_type = next(
            (ours for theirs, ours in _STATUS_ERRORS.items() if isinstance(exc, theirs)),
            errors.Internal,
        )
        if error_type is errors.DeadlineExceeded:
            return errors.DeadlineExceeded(
                f"Firestore {what} exceeded its {self.seconds:g} s bound"
            )
        return error_type(f"Firestore {what} failed: {exc.message}")
