"""Bounding and error mapping for every Cloud Spanner call the adapters make.

Shared by the memory store and the usage ledger: each call is bounded in
time (the client library does not bound all of its own calls) and its Google
errors become `jennah.errors` with the same canonical status.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

from google.api_core import exceptions as google_errors
from google.api_core.retry import Retry, if_exception_type

from jennah import errors

_T = TypeVar("_T")
_GRACE_SECONDS = 0.5


@dataclass(frozen=True)
class CallBound:
    """The time bound of one Spanner read: a per-attempt timeout, and a retry of
    UNAVAILABLE that gives up (RetryError) once the bound has passed."""

    seconds: float
    retry: Retry

    @classmethod
    def of(cls, seconds: float) -> CallBound:
        retry = Retry(
            predicate=if_exception_type(google_errors.ServiceUnavailable),
            initial=0.1,
            maximum=1.0,
            multiplier=2.0,
            timeout=seconds,
        )
        return cls(seconds, retry)

    @property
    def kwargs(self) -> dict[str, Any]:
        return {"timeout": self.seconds, "retry": self.retry}


def bounded(what: str, call: Callable[[], _T], seconds: float) -> _T:
    """Run one Spanner call within `seconds`, its errors mapped to ours."""
    with mapped_errors(what, seconds):
        return within_deadline(call, seconds, what)


@contextmanager
def mapped_errors(what: str, seconds: float) -> Iterator[None]:
    try:
        yield
    except google_errors.GoogleAPICallError as exc:
        raise mapped(exc, what, seconds) from exc
    except google_errors.RetryError as exc:  # our bounded retry of UNAVAILABLE gave up
        raise errors.Unavailable(
            f"Spanner {what} was unavailable for its whole {seconds:g} s bound"
        ) from exc


def within_deadline(call: Callable[[], _T], seconds: float, what: str) -> _T:
    """Run `call` on a fresh thread and give up waiting after `seconds`.

    Some client calls take no timeout: session creation retries UNAVAILABLE
    for 30-60 s, the Commit RPC for up to an hour. And a transaction whose
    session could not be created leaves the client's per-thread "transaction
    running" flag set, refusing every later transaction on that thread. A
    fresh thread per call avoids both. The abandoned call ends on its own
    (reads give up through `CallBound`); a commit may still land after we
    stopped waiting, which the message says (a resent commit is idempotent).
    """
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as exc:  # handed to the waiting thread
            outcome.append((False, exc))

    worker = threading.Thread(target=run, name=f"spanner {what}", daemon=True)
    worker.start()
    worker.join(seconds + _GRACE_SECONDS)
    if not outcome:
        landing = "; it may still be applied: resend it to be sure" if what == "commit" else ""
        raise errors.DeadlineExceeded(
            f"Spanner {what} did not finish within its {seconds:g} s bound{landing}"
        )
    ok, value = outcome[0]
    if not ok:
        raise value
    return cast(_T, value)


def utc(value: datetime) -> datetime:
    """A plain UTC datetime (the client returns DatetimeWithNanoseconds)."""
    v = value.astimezone(UTC)
    return datetime(v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond, tzinfo=UTC)


_STATUS_ERRORS: dict[type[google_errors.GoogleAPICallError], type[errors.JennahError]] = {
    google_errors.InvalidArgument: errors.InvalidArgument,
    google_errors.OutOfRange: errors.InvalidArgument,  # e.g. a zero query vector
    google_errors.FailedPrecondition: errors.FailedPrecondition,
    google_errors.NotFound: errors.NotFound,
    google_errors.AlreadyExists: errors.AlreadyExists,
    google_errors.Aborted: errors.Aborted,
    google_errors.ResourceExhausted: errors.ResourceExhausted,
    google_errors.DeadlineExceeded: errors.DeadlineExceeded,
    google_errors.ServiceUnavailable: errors.Unavailable,
}


def mapped(exc: google_errors.GoogleAPICallError, what: str, timeout: float) -> errors.JennahError:
    """The jennah error with the Spanner error's canonical status."""
    error_type = next(
        (ours for theirs, ours in _STATUS_ERRORS.items() if isinstance(exc, theirs)),
        errors.Internal,
    )
    if error_type is errors.DeadlineExceeded:
        return errors.DeadlineExceeded(f"Spanner {what} exceeded its {timeout:g} s bound")
    if error_type is errors.Aborted:
        return errors.Aborted(
            f"Spanner {what} kept conflicting with other writes for {timeout:g} s; resend",
            reason="WRITE_CONFLICT",
        )
    return error_type(f"Spanner {what} failed: {cast(str, exc.message)}")
