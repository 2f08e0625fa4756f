"""The Jennah HTTP routes the MCP server calls, one function each, through the SDK
(`jennah.client`) with the caller's credentials; an error the SDK raises comes back as
`ApiFailure` (the tools' error shape), answers as the API's JSON objects.

Calls are not retried (`retry=None`): a tool call answers within the MCP request's own
deadline, and the agent decides what to do with UNAVAILABLE.

`endpoint` is the API's base URL. In the cloud each route is served by its own function;
an endpoint holding `{function}` (https://REGION-PROJECT.cloudfunctions.net/jennah-{function})
is completed with the name of the function serving the route.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from pydantic import BaseModel

from jennah.client import ApiError, Client, Scope
from jennah.client.transport import Transport

COLLECTIONS = ("agents", "scopes")
TIMEOUT_SECONDS = 60.0
BEARER = "bearer "


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

    @classmethod
    def of(cls, err: ApiError) -> ApiFailure:
        return cls(err.code, err.status, err.message, err.reason or "", dict(err.metadata))

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
        return self._call(
            "query", lambda s: s.search(query, max_items=max_items, token_budget=token_budget)
        )

    def get_memory(self, memory_id: str) -> Any:
        return self._call("inspect", lambda s: s.get_memory(memory_id))

    def evidence(self, memory_id: str) -> Any:
        return self._call("inspect", lambda s: s.list_evidence(memory_id))

    def read_excerpt(self, ref: str) -> Any:
        return self._call("inspect", lambda s: s.read_excerpt(ref))

    def brief(self, variant: str) -> Any:
        return self._call("inspect", lambda s: s.get_brief(variant))

    def remember(self, key: str, content: str, expected_version: int) -> Any:
        return self._call("keyed", lambda s: s.remember(key, content, expected_version))

    def search_keyed(self, query: str, page_size: int | None, page_token: str | None) -> Any:
        return self._call(
            "keyed",
            lambda s: next(s.search_keyed(query, page_size=page_size, page_token=page_token).pages),
        )

    def forget_keyed(self, key: str) -> Any:
        return self._call("keyed", lambda s: s.forget_keyed(key))

    def _call(self, function: str, call: Callable[[Scope], BaseModel | None]) -> Any:
        """`call` on this scope's handle, the endpoint completed with `function`."""
        base = self.endpoint.replace("{function}", function)
        token = _bearer(self.authorization)
        sent = Transport(base, token, self.enterprise, TIMEOUT_SECONDS, self.transport)
        with Client.over(sent, retry=None) as client:
            handle = (
                client.agent(self.scope_id)
                if self.collection == "agents"
                else client.scope(self.scope_id)
            )
            try:
                answer = call(handle)
            except ApiError as err:
                raise ApiFailure.of(err) from None
        if answer is None:
            return {}
        return answer.model_dump(mode="json", by_alias=True, exclude_none=True)


def _bearer(authorization: str | None) -> str | None:
    """The credential of an Authorization header (the SDK sends it as a bearer token)."""
    if not authorization:
        return None
    if authorization[: len(BEARER)].lower() == BEARER:
        return authorization[len(BEARER) :].strip()
    return authorization
