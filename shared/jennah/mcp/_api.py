"""The few Jennah HTTP routes the MCP server calls, one function each, with the caller's
credentials; a Google error body comes back as `ApiFailure`.

Private to jennah.mcp until `jennah.client` (the typed SDK) lands: then each function
becomes one call of that client and `ApiFailure` its error type, in this file only.

`endpoint` is the API's base URL. In the cloud each route is served by its own function;
an endpoint holding `{function}` (https://REGION-PROJECT.cloudfunctions.net/jennah-{function})
is completed with the name of the function serving the route.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

COLLECTIONS = ("agents", "scopes")
TIMEOUT_SECONDS = 60.0


class ApiFailure(Exception):
    """What the API answered instead of success: its status, reason and message."""

    def __init__(
        self, code: int, status: str, message: str, reason: str = "",
        metadata: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        super().__init__(message)
        self.code = code
        self.status = status
        self.message = message
        self.reason = reason
        self.metadata = metadata or {}

    def body(self) -> dict[str, Any]:
        """The error as the API's error body holds it."""
        return {
            "code": self.code, "status": self.status, "reason": self.reason,
            "message": self.message, "metadata": self.metadata,
        }  # fmt: skip


@dataclass(frozen=True)
class MemoryApi:
    """The memory routes of one scope (/v1/{collection}/{scope_id}), called with
    `authorization` (the caller's Authorization header) and `enterprise`
    (X-Jennah-Enterprise, for a Google ID token of several enterprises)."""

    endpoint: str
    collection: str
    scope_id: str
    authorization: str | None = None
    enterprise: str | None = None
    transport: httpx.BaseTransport | None = field(default=None, compare=False)

    def search(self, query: str, max_items: int | None, token_budget: int | None) -> Any:
        body: dict[str, Any] = {"query": query}
        if max_items is not None:
            body["maxItems"] = max_items
        if token_budget is not None:
            body["tokenBudget"] = token_budget
        return self._call("query", "POST", "/memory:search", json=body)

    def get_memory(self, memory_id: str) -> Any:
        return self._call("inspect", "GET", f"/memories/{_segment(memory_id)}")

    def evidence(self, memory_id: str) -> Any:
        return self._call("inspect", "GET", f"/memories/{_segment(memory_id)}/evidence")

    def read_excerpt(self, ref: str) -> Any:
        return self._call("inspect", "POST", "/memory:readExcerpt", json={"ref": ref})

    def brief(self, variant: str) -> Any:
        return self._call("inspect", "GET", "/memory/brief", params={"variant": variant})

    def remember(self, key: str, content: str, expected_version: int) -> Any:
        body = {"content": content, "expectedVersion": expected_version}
        return self._call("keyed", "PUT", f"/keyedMemories/{_segment(key)}", json=body)

    def search_keyed(self, query: str, page_size: int | None, page_token: str | None) -> Any:
        body: dict[str, Any] = {"query": query}
        if page_size is not None:
            body["pageSize"] = page_size
        if page_token:
            body["pageToken"] = page_token
        return self._call("keyed", "POST", "/keyedMemories:search", json=body)

    def forget_keyed(self, key: str) -> Any:
        return self._call("keyed", "DELETE", f"/keyedMemories/{_segment(key)}")

    def _call(self, function: str, method: str, tail: str, **kwargs: Any) -> Any:
        base = self.endpoint.replace("{function}", function).rstrip("/")
        url = f"{base}/v1/{self.collection}/{_segment(self.scope_id)}{tail}"
        headers = {}
        if self.authorization:
            headers["Authorization"] = self.authorization
        if self.enterprise:
            headers["X-Jennah-Enterprise"] = self.enterprise
        try:
            with httpx.Client(transport=self.transport, timeout=TIMEOUT_SECONDS) as http:
                response = http.request(method, url, headers=headers, **kwargs)
        except httpx.TimeoutException:
            raise ApiFailure(504, "DEADLINE_EXCEEDED", f"no answer from {base} in time") from None
        except httpx.HTTPError as exc:
            raise ApiFailure(503, "UNAVAILABLE", f"cannot reach {base}: {exc}") from None
        return _answer(response)


def _answer(response: httpx.Response) -> Any:
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.is_success and isinstance(body, dict):
        return body
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or "status" not in error:
        raise ApiFailure(
            response.status_code, "UNKNOWN", f"unexpected HTTP {response.status_code} answer"
        )
    info = next((d for d in error.get("details", []) if isinstance(d, dict) and "reason" in d), {})
    raise ApiFailure(
        int(error.get("code", response.status_code)),
        str(error["status"]),
        str(error.get("message", "")),
        str(info.get("reason", "")),
        {str(k): str(v) for k, v in (info.get("metadata") or {}).items()},
    )


def _segment(value: str) -> str:
    return quote(value, safe=":")
