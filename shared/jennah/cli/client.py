"""The CLI's HTTP client: one call, a JSON object back, or an error with an exit code.

`jnh` never touches the store; it talks to the HTTP API like any other client.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

import click
import httpx

from jennah.auth import credentials_path, read_local_credentials
from jennah.errors import JennahError

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
    """Calls the Jennah HTTP API at `endpoint` with an optional bearer token."""

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
        if response.is_success and not response.headers.get("content-type", "").startswith(
            "application/json"
        ):
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

    def _send(
        self, method: str, path: str, headers: dict[str, str] | None = None, **kwargs: Any
    ) -> httpx.Response:
        headers = dict(headers or {})
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.enterprise:
            headers["X-Jennah-Enterprise"] = self.enterprise
        url = self.endpoint.rstrip("/") + path
        try:
            with httpx.Client(transport=self.transport, timeout=self.timeout) as http:
                response = http.request(method, url, headers=headers, **kwargs)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise CannotConnect(
                f"cannot connect to {self.endpoint} ({exc}); is `jnh serve` running? "
                "--endpoint or JENNAH_ENDPOINT names another server"
            ) from None
        except httpx.TimeoutException:
            raise ApiError(
                "DEADLINE_EXCEEDED", 504, f"no answer from {self.endpoint} within {self.timeout}s"
            ) from None
        except httpx.HTTPError as exc:
            raise CannotConnect(f"cannot talk to {self.endpoint}: {exc}") from None
        return response


def _answer(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.is_success and isinstance(body, dict):
        return body
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and "status" in error:
        message = str(error.get("message", "")) + _violations(error)
        raise ApiError(str(error["status"]), response.status_code, message)
    raise ApiError(
        "UNKNOWN", response.status_code, f"unexpected HTTP {response.status_code} answer"
    )


def _violations(error: dict[str, Any]) -> str:
    """When an error names several fields (an import's faults), one line for each."""
    found = [
        violation
        for detail in error.get("details", [])
        if isinstance(detail, dict)
        for violation in detail.get("fieldViolations", [])
        if isinstance(violation, dict)
    ]
    if len(found) < 2:
        return ""
    return "".join(f"\n  {v.get('field')}: {v.get('description')}" for v in found)


def local_failure(err: JennahError) -> ApiError:
    """An error found on this side of the wire, reported (and exited) like a server's."""
    return ApiError(err.status, err.http_status, err.message)


def segment(value: str) -> str:
    """A value escaped as one path segment."""
    return quote(value, safe=":")


def resource_path(collection: str, resource_id: str, verb: str) -> str:
    """/v1/{collection}/{id}/memory:{verb}, with the id escaped as one path segment."""
    return f"/v1/{collection}/{segment(resource_id)}/memory:{verb}"


def local_token(data_dir: Path) -> str | None:
    """The local server's root token, when its data dir holds credentials."""
    if not credentials_path(data_dir).exists():
        return None
    try:
        return read_local_credentials(data_dir).token
    except JennahError:
        return None
