"""The CLI's HTTP client: one call, a JSON object back, or an error with an exit code.

`jnh` never touches the store; it talks to the HTTP API like any other client.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, Any

import click
import httpx

from jennah.client import errors as sdk_errors
from jennah.client.client import segment
from jennah.client.credentials import local_token
from jennah.client.transport import Transport, json_object
from jennah.errors import JennahError

__all__ = ["ApiClient", "ApiError", "CannotConnect", "local_token", "segment"]

# Exit codes scripts can rely on; documented in `jnh --help`.
EXIT_OK = 0
EXIT_OTHER = 1
EXIT_USAGE = 2
EXIT_CANNOT_CONNECT = 10
EXIT_CODES: dict[str, int] = {
    "INVALID_ARGUMENT": 3,
    "FAILED_PRECONDITION": 3,
    "OUT_OF_RANGE": 3,
    "NOT_FOUND": 4,
    "UNAUTHENTICATED": 5,
    "PERMISSION_DENIED": 5,
    "ABORTED": 6,
    "ALREADY_EXISTS": 6,
    "RESOURCE_EXHAUSTED": 7,
    "UNAVAILABLE": 8,
    "DEADLINE_EXCEEDED": 8,
    "CANCELLED": 8,
}
EXIT_CODES_HELP = """\b
Exit codes:
  0   success
  1   any other error (INTERNAL, UNIMPLEMENTED, an unexpected answer)
  2   usage error: bad flags or arguments, an unreadable input file
  3   INVALID_ARGUMENT, FAILED_PRECONDITION or OUT_OF_RANGE
  4   NOT_FOUND
  5   UNAUTHENTICATED or PERMISSION_DENIED
  6   ABORTED or ALREADY_EXISTS (a conflict: re-read, then retry)
  7   RESOURCE_EXHAUSTED
  8   UNAVAILABLE, DEADLINE_EXCEEDED or CANCELLED (try again later)
  10  cannot connect to the server"""


class ApiError(click.ClickException):
    """A Google error body from the server, printed as `jnh: STATUS: message`."""

    def __init__(self, status: str, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        # click declares exit_code a ClassVar, but reads it from the instance
        self.exit_code = EXIT_CODES.get(status, EXIT_OTHER)  # type: ignore[misc]

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"jnh: {self.status}: {self.message}", err=True)


class CannotConnect(click.ClickException):
    exit_code = EXIT_CANNOT_CONNECT

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"jnh: {self.message}", err=True)


@dataclass
class ApiClient:
    """Calls the Jennah HTTP API at `endpoint` with an optional bearer token, through the
    SDK's transport (jennah.client.transport), with no retry: a failure exits at once."""

    endpoint: str
    token: str | None = None
    enterprise: str | None = None  # X-Jennah-Enterprise: for a Google ID token of several
    timeout: float = 120.0
    transport: httpx.BaseTransport | None = None

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._call("POST", path, json=body)

    def get(self, path: str, params: dict[str, str] | None = None) -> dict[str, Any]:
        return self._call("GET", path, params=params or {})

    def put(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._call("PUT", path, json=body)

    def patch(
        self, path: str, body: dict[str, Any], params: dict[str, str] | None = None
    ) -> dict[str, Any]:
        return self._call("PATCH", path, json=body, params=params or {})

    def delete(self, path: str, params: dict[str, str] | None = None) -> dict[str, Any]:
        return self._call("DELETE", path, params=params or {})

    def get_bytes(self, path: str) -> bytes:
        """GET a file download (a non-JSON answer): its bytes, or the error it answers."""
        response = self._send("GET", path)
        if not response.headers.get("content-type", "").startswith("application/json"):
            return response.content
        _answer(response)
        raise ApiError("UNKNOWN", response.status_code, "expected a file, got a JSON answer")

    def post_bytes(self, path: str, content: bytes, content_type: str) -> dict[str, Any]:
        """POST a non-JSON body; the JSON answer."""
        return _answer(
            self._send("POST", path, content=content, headers={"Content-Type": content_type})
        )

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        return _answer(self._send(method, path, **kwargs))

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        sdk = Transport(self.endpoint, self.token, self.enterprise, self.timeout, self.transport)
        try:
            return sdk.request(method, path, **kwargs)
        except sdk_errors.ConnectionFailed as err:
            if not err.connecting:
                raise CannotConnect(err.message) from None
            raise CannotConnect(
                f"{err.message}; is `jnh serve` running? "
                "--endpoint or JENNAH_ENDPOINT names another server"
            ) from None
        except sdk_errors.ApiError as err:
            raise ApiError(err.status, err.code, err.message + _violations(err)) from None
        finally:
            sdk.close()


def _answer(response: httpx.Response) -> dict[str, Any]:
    try:
        return json_object(response)
    except sdk_errors.ApiError as err:
        raise ApiError(err.status, err.code, err.message) from None


def _violations(error: sdk_errors.ApiError) -> str:
    """When an error names several fields (an import's faults), one line for each."""
    found = [
        violation
        for detail in error.details
        for violation in detail.get("fieldViolations", [])
        if isinstance(violation, dict)
    ]
    if len(found) < 2:
        return ""
    return "".join(f"\n  {v.get('field')}: {v.get('description')}" for v in found)


def local_failure(err: JennahError) -> ApiError:
    """An error found on this side of the wire, reported (and exited) like a server's."""
    return ApiError(err.status, err.http_status, err.message)


def resource_path(collection: str, resource_id: str, verb: str) -> str:
    """/v1/{collection}/{id}/memory:{verb}, with the id escaped as one path segment."""
    return f"/v1/{collection}/{segment(resource_id)}/memory:{verb}"
