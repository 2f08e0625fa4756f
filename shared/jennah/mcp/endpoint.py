"""The streamable-HTTP MCP endpoint as a WSGI app, for `jnh serve` (under /mcp) and the
`mcp` Cloud Function (at its root).

    POST {mount}/agents/{agentId}           the tools on an agent workspace
    POST {mount}/scopes/{scopeId}           the tools on a scope
    POST {mount}/scopes/{scopeId}/shared    household mode: no tool, the shared brief

Stateless and JSON-answered (the SDK's `stateless_http` and `json_response`): each POST is
one JSON-RPC exchange, so any instance answers any request and no session outlives it; GET
(a server-sent event stream) and DELETE (ending a session) are 405. The caller's
Authorization (and X-Jennah-Enterprise) header is passed through to the API on every tool
call, so reach is the API's to enforce; a request without Authorization is refused 401
before it reaches the MCP server.

The SDK's app is ASGI; one event loop in a daemon thread, started on the first request,
runs it (and the SDK's session manager) for every WSGI thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import httpx
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings

from jennah.mcp._api import COLLECTIONS, MemoryApi
from jennah.mcp.tools import build_server

REQUEST_SECONDS = 120.0
_TARGET = "jennah.mcp.target"  # the ASGI scope key holding the request's MemoryApi

StartResponse = Callable[..., Any]


@dataclass(frozen=True)
class _Exchange:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


class McpEndpoint:
    """WSGI app of the MCP endpoint. `endpoint` is the API's base URL (see `_api`);
    `transport` reaches it in process (`jnh serve`); `mount` is the path prefix it is
    served under."""

    def __init__(
        self, endpoint: str, *, mount: str = "", transport: httpx.BaseTransport | None = None
    ) -> None:
        self.endpoint = endpoint
        self.mount = mount.rstrip("/")
        self.transport = transport
        self._apps: dict[bool, _Running] = {}
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        exchange = self._exchange(environ)
        start_response(f"{exchange.status} {HTTPStatus(exchange.status).phrase}", exchange.headers)
        return [exchange.body]

    def _exchange(self, environ: dict[str, Any]) -> _Exchange:
        target = self._target(str(environ.get("PATH_INFO", "")))
        if target is None:
            return _refusal(404, "NOT_FOUND", "ROUTE_NOT_FOUND", _USAGE)
        method = environ.get("REQUEST_METHOD", "")
        if method != "POST":
            # 405, as MCP's transport requires of a server without the GET event stream; the
            # body is the API's answer to a method a path does not bind (api.errors).
            why = f"Method not found: {method} is not bound on the MCP endpoint; use POST"
            refused = _refusal(405, "NOT_FOUND", "METHOD_NOT_ALLOWED", why,
                               {"method": method[:32], "allowed": "POST"})  # fmt: skip
            return _Exchange(405, [*refused.headers, ("Allow", "POST")], refused.body)
        authorization = environ.get("HTTP_AUTHORIZATION")
        if not authorization:
            why = "send Authorization: Bearer with the credential the API takes"
            return _refusal(401, "UNAUTHENTICATED", "CREDENTIALS_MISSING", why)
        collection, scope_id, shared = target
        api = MemoryApi(
            self.endpoint, collection, scope_id, authorization,
            environ.get("HTTP_X_JENNAH_ENTERPRISE"), self.transport,
        )  # fmt: skip
        return self._running(shared).exchange(environ, api)

    def _target(self, path: str) -> tuple[str, str, bool] | None:
        if self.mount and not path.startswith(self.mount + "/"):
            return None
        parts = path[len(self.mount) :].strip("/").split("/")
        shared = len(parts) == 3 and parts[2] == "shared"
        if len(parts) not in (2, 3) or (len(parts) == 3 and not shared):
            return None
        if parts[0] not in COLLECTIONS or not parts[1]:
            return None
        return parts[0], parts[1], shared

    def _running(self, shared: bool) -> _Running:
        with self._lock:
            if shared not in self._apps:
                self._apps[shared] = _Running(build_server(_api_of_request, shared=shared))
            return self._apps[shared]


def _api_of_request(ctx: Context) -> MemoryApi:
    request = ctx.request_context.request
    api: MemoryApi = request.scope[_TARGET]  # type: ignore[union-attr]
    return api


class _Running:
    """One MCP server's ASGI app, its session manager running on a loop of its own."""

    def __init__(self, server: MCPServer) -> None:
        self.app = server.streamable_http_app(
            streamable_http_path="/mcp",
            stateless_http=True,
            json_response=True,
            # Every request carries a bearer credential the API checks; the endpoint is not
            # a browser-reachable cookie-authenticated service.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.loop = asyncio.new_event_loop()
        started = threading.Event()
        threading.Thread(
            target=self._serve, args=(server, started), name="mcp-loop", daemon=True
        ).start()
        started.wait()

    def _serve(self, server: MCPServer, started: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)

        async def run() -> None:
            async with server.session_manager.run():
                started.set()
                await asyncio.Event().wait()  # until the process ends

        self.loop.run_until_complete(run())

    def exchange(self, environ: dict[str, Any], api: MemoryApi) -> _Exchange:
        body = _body(environ)
        scope = _asgi_scope(environ, api)
        future = asyncio.run_coroutine_threadsafe(_call(self.app, scope, body), self.loop)
        try:
            return future.result(timeout=REQUEST_SECONDS)
        except TimeoutError:
            future.cancel()
            why = f"the MCP request did not finish within {REQUEST_SECONDS:g} s"
            return _refusal(504, "DEADLINE_EXCEEDED", "DEADLINE_EXCEEDED", why)


async def _call(app: Any, scope: dict[str, Any], body: bytes) -> _Exchange:
    sent: dict[str, Any] = {"status": 500, "headers": [], "body": b""}
    done = asyncio.Event()
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            sent["status"] = message["status"]
            sent["headers"] = [(k.decode("latin-1"), v.decode("latin-1"))
                               for k, v in message.get("headers", [])]  # fmt: skip
        elif message["type"] == "http.response.body":
            sent["body"] += message.get("body", b"")
            if not message.get("more_body", False):
                done.set()

    try:
        await app(scope, receive, send)
    finally:
        done.set()
    return _Exchange(sent["status"], sent["headers"], sent["body"])


def _body(environ: dict[str, Any]) -> bytes:
    with contextlib.suppress(ValueError):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        return bytes(environ["wsgi.input"].read(length)) if length > 0 else b""
    return b""


def _asgi_scope(environ: dict[str, Any], api: MemoryApi) -> dict[str, Any]:
    headers = [
        (key[5:].replace("_", "-").lower().encode("latin-1"), str(value).encode("latin-1"))
        for key, value in environ.items()
        if key.startswith("HTTP_")
    ]
    for key, name in (("CONTENT_TYPE", b"content-type"), ("CONTENT_LENGTH", b"content-length")):
        if environ.get(key):
            headers.append((name, str(environ[key]).encode("latin-1")))
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": environ.get("wsgi.url_scheme", "http"),
        "path": "/mcp",
        "raw_path": b"/mcp",
        "root_path": "",
        "query_string": str(environ.get("QUERY_STRING", "")).encode("latin-1"),
        "headers": headers,
        "client": (environ.get("REMOTE_ADDR", ""), int(environ.get("REMOTE_PORT") or 0)),
        "server": (environ.get("SERVER_NAME", ""), int(environ.get("SERVER_PORT") or 0)),
        _TARGET: api,
    }


def _refusal(
    code: int, status: str, reason: str, message: str, metadata: dict[str, str] | None = None
) -> _Exchange:
    error = {
        "code": code, "status": status, "message": message,
        "details": [{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": reason, "domain": "jennah", "metadata": metadata or {},
        }],
    }  # fmt: skip
    body = json.dumps({"error": error}, separators=(",", ":")).encode() + b"\n"
    return _Exchange(code, [("Content-Type", "application/json")], body)


_USAGE = (
    "the MCP endpoint is {mount}/agents/{agentId}, {mount}/scopes/{scopeId} or "
    "{mount}/scopes/{scopeId}/shared"
)
