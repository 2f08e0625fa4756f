"""The few Jennah routes the ADK integration calls, over HTTP with the caller's credentials.

Private, and small on purpose: one function per route, JSON in and out, a Google error
body raised as the jennah.errors exception of its status (reason and metadata kept).
jennah.client (the SDK) is synchronous and ADK is async, so this module keeps its own
async httpx calls; it takes its credentials from the SDK (jennah.client.credentials).
Reach is the server's business: nothing here decides who may read or write what.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from jennah.client.credentials import resolve_token
from jennah.errors import DeadlineExceeded, JennahError, Unavailable, from_status
from jennah.settings import Settings

# memory:form may take minutes (two model calls); no request is allowed more than 30.
FORM_TIMEOUT_SECONDS = 30 * 60.0
DEFAULT_TIMEOUT_SECONDS = 120.0


@dataclass(frozen=True)
class Brief:
    """GET …/memory/brief: the brief and the ETag to send back as If-None-Match."""

    text: str
    etag: str | None


@dataclass
class JennahApi:
    """An async HTTP client of the Jennah API: endpoint and bearer credential.

    Without arguments, both come from where `jnh` reads them: JENNAH_ENDPOINT (else
    http://127.0.0.1:8080), and JENNAH_TOKEN, else the credential saved by `jnh auth
    login`, else the local server's root credential in JENNAH_DATA_DIR.
    """

    endpoint: str | None = None
    token: str | None = None
    transport: httpx.AsyncBaseTransport | None = None
    _client: httpx.AsyncClient | None = field(default=None, init=False, repr=False)

    async def form(self, agent_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST /v1/agents/{agentId}/memory:form; the receipt."""
        path = f"/v1/agents/{segment(agent_id)}/memory:form"
        return _answer(await self._send("POST", path, json=body, timeout=FORM_TIMEOUT_SECONDS))

    async def search(self, agent_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST /v1/agents/{agentId}/memory:search; the candidates."""
        path = f"/v1/agents/{segment(agent_id)}/memory:search"
        return _answer(await self._send("POST", path, json=body))

    async def brief(
        self, agent_id: str, *, variant: str = "full", etag: str | None = None
    ) -> Brief | None:
        """GET /v1/agents/{agentId}/memory/brief, conditional on `etag`: None when the
        brief has not changed since (304)."""
        path = f"/v1/agents/{segment(agent_id)}/memory/brief"
        headers = {"If-None-Match": etag} if etag else {}
        response = await self._send("GET", path, params={"variant": variant}, headers=headers)
        if response.status_code == 304:
            return None
        return Brief(text=str(_answer(response)["brief"]), etag=response.headers.get("ETag"))

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        client = self._connected()
        kwargs.setdefault("timeout", DEFAULT_TIMEOUT_SECONDS)
        try:
            return await client.request(method, path, **kwargs)
        except httpx.TimeoutException:
            raise DeadlineExceeded(f"no answer from {client.base_url} in time") from None
        except httpx.HTTPError as exc:
            raise Unavailable(f"cannot talk to {client.base_url}: {exc}") from None

    def _connected(self) -> httpx.AsyncClient:
        """The client, built on first use (not at import or construction)."""
        if self._client is None:
            settings = Settings()
            token = resolve_token(self.token or os.environ.get("JENNAH_TOKEN"), settings.data_dir)
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            if settings.enterprise:  # for a Google ID token of several enterprises
                headers["X-Jennah-Enterprise"] = settings.enterprise
            self._client = httpx.AsyncClient(
                base_url=(self.endpoint or settings.endpoint).rstrip("/"),
                headers=headers,
                transport=self.transport,
            )
        return self._client


def segment(value: str) -> str:
    """A value escaped as one path segment."""
    return quote(value, safe=":")


def _answer(response: httpx.Response) -> dict[str, Any]:
    """The JSON object of a 2xx answer, else the error its Google error body describes."""
    if response.is_success:
        body: dict[str, Any] = response.json()
        return body
    raise _error(response)


def _error(response: httpx.Response) -> JennahError:
    try:
        error = response.json()["error"]
        status, message = str(error["status"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        return from_status("INTERNAL", f"HTTP {response.status_code}: {response.text[:200]}")
    info: dict[str, Any] = next((d for d in error.get("details", []) if "reason" in d), {})
    metadata = {str(k): str(v) for k, v in (info.get("metadata") or {}).items()}
    return from_status(status, message, reason=info.get("reason"), metadata=metadata)
