"""The one HTTP layer: a request to the Jennah API, its credential headers, the typed
error of a failed answer, and the retry around it. `jnh` and the typed client share it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from jennah.client import errors
from jennah.client.retry import Retry

ENTERPRISE_HEADER = "X-Jennah-Enterprise"
USER_AGENT = "jennah-python"


@dataclass
class Transport:
    """Sends requests to `endpoint` with an optional bearer `token`; `transport` reaches
    another HTTP stack (tests reach an in-process app). Not thread-safe to close while in use.
    """

    endpoint: str
    token: str | None = None
    enterprise: str | None = None  # X-Jennah-Enterprise: for a Google ID token of several
    timeout: float = 120.0
    transport: httpx.BaseTransport | None = None
    _http: httpx.Client | None = field(default=None, init=False, repr=False)

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        retry: Retry | None = None,
    ) -> httpx.Response:
        """The 2xx answer (or a 304), else the typed error; with `retry`, retried on its
        retryable errors within its deadline."""

        def attempt() -> httpx.Response:
            return self._check(self._send(method, path, json, params, content, headers))

        return attempt() if retry is None else retry.call(attempt)

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def _client(self) -> httpx.Client:
        if self._http is None:
            self._http = httpx.Client(transport=self.transport, timeout=self.timeout)
        return self._http

    def _send(
        self,
        method: str,
        path: str,
        json: Mapping[str, Any] | None,
        params: Mapping[str, str] | None,
        content: bytes | None,
        extra: Mapping[str, str] | None,
    ) -> httpx.Response:
        headers = {"User-Agent": USER_AGENT, **(extra or {})}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.enterprise:
            headers[ENTERPRISE_HEADER] = self.enterprise
        url = self.endpoint.rstrip("/") + path
        try:
            return self._client().request(
                method, url, headers=headers, json=json, params=params, content=content
            )
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise errors.ConnectionFailed(
                f"cannot connect to {self.endpoint} ({exc})", endpoint=self.endpoint,
                connecting=True,
            ) from None  # fmt: skip
        except httpx.TimeoutException:
            raise errors.DeadlineExceeded(
                f"no answer from {self.endpoint} within {self.timeout}s", code=504
            ) from None
        except httpx.HTTPError as exc:
            raise errors.ConnectionFailed(
                f"cannot talk to {self.endpoint}: {exc}", endpoint=self.endpoint,
                connecting=False,
            ) from None  # fmt: skip

    @staticmethod
    def _check(response: httpx.Response) -> httpx.Response:
        if response.is_success or response.status_code == 304:
            return response
        raise errors.from_response(response)


def json_object(response: httpx.Response) -> dict[str, Any]:
    """A 2xx answer's JSON object (UNKNOWN when it is none)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        return body
    raise errors.Unknown(
        f"unexpected HTTP {response.status_code} answer", code=response.status_code,
        response=response,
    )  # fmt: skip
