"""A real local HTTP proxy in front of a server that answers the next N requests with a
Google error of its own (503 UNAVAILABLE, 409 ABORTED, …) instead of forwarding them, and
records every request it receives: the SDK's retries are tested over real sockets."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


@dataclass(frozen=True)
class Seen:
    method: str
    path: str  # without the query string
    failed: bool  # answered by the proxy's injected error


class FailingProxy:
    def __init__(self, target: str) -> None:
        self.target = target.rstrip("/")
        self.seen: list[Seen] = []  # since the last reset()
        self.history: list[Seen] = []  # every request, never reset
        self._lock = threading.Lock()
        self._failures: list[tuple[int, str]] = []
        self._upstream = httpx.Client(timeout=120.0)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                proxy._handle(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def fail(self, times: int, code: int = 503, status: str = "UNAVAILABLE") -> None:
        """Answer the next `times` requests with this error instead of forwarding them."""
        with self._lock:
            self._failures = [(code, status)] * times

    def reset(self) -> None:
        with self._lock:
            self._failures = []
            self.seen.clear()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._upstream.close()

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else b""
        with self._lock:
            failure = self._failures.pop(0) if self._failures else None
            seen = Seen(request.command, request.path.split("?")[0], failure is not None)
            self.seen.append(seen)
            self.history.append(seen)
        if failure is not None:
            code, status = failure
            error = {"error": {"code": code, "status": status, "message": "injected by the proxy"}}
            self._reply(
                request, code, {"Content-Type": "application/json"}, json.dumps(error).encode()
            )
            return
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        answer = self._upstream.request(
            request.command, self.target + request.path, headers=headers, content=body
        )
        kept = {k: v for k, v in answer.headers.items() if k.lower() not in HOP_BY_HOP}
        kept.pop("content-encoding", None)  # httpx has decoded the body
        self._reply(request, answer.status_code, kept, answer.content)

    @staticmethod
    def _reply(
        request: BaseHTTPRequestHandler, code: int, headers: dict[str, str], content: bytes
    ) -> None:
        request.send_response(code)
        for name, value in headers.items():
            request.send_header(name, value)
        request.send_header("Content-Length", str(len(content)))
        request.end_headers()
        request.wfile.write(content)
