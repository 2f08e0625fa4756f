"""The HTTP server of `jnh serve`: waitress, answering its own refusals in Google's shape.

Waitress receives each request whole on its I/O thread before one of its worker threads
runs the app, so a slow or stalled client holds no worker thread, only a connection; the
request must arrive whole within `request_timeout` seconds of its first byte, else it is
answered 408 and the connection closed. It refuses, before any worker runs:

- a body past `bodies.MAX_BODY_BYTES`: 413, by Content-Length before reading the body, or
  as soon as a chunked body passes it (the body read so far spills to a temporary file
  past 512 KiB, so memory stays flat);
- a request line past MAX_REQUEST_LINE_BYTES: 414; headers past MAX_HEADER_BYTES: 431;
- a malformed request line or header: 400; a transfer coding other than chunked: 501.

Each refusal is the Google error body of `jennah.api.errors`. memory:form holds a worker
thread while it waits for its operation, so there are THREADS of them; with one request
of lookahead per connection, waitress notices a client that closes its connection while
its request runs (`waitress.client_disconnected` in the environ), which cancels the
formation (`jennah.api.formation.client_gone_probe`).

`make_server(..., kind="werkzeug")` serves with werkzeug's development server instead
(JENNAH_HTTP_SERVER=werkzeug), for comparison (bench/load.py).
"""

from __future__ import annotations

import json
import threading
import time
from http import HTTPStatus
from typing import Any, Literal, Protocol

from waitress import utilities, wasyncore
from waitress.adjustments import Adjustments
from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser
from waitress.server import TcpWSGIServer
from waitress.task import ErrorTask

from jennah.api import dto
from jennah.api.bodies import MAX_BODY_BYTES
from jennah.api.errors import (
    RequestTimeout,
    error_response,
    from_http_status,
    headers_too_large,
    malformed_request,
    payload_too_large,
    uri_too_long,
)
from jennah.errors import Internal, JennahError, Unimplemented

MAX_REQUEST_LINE_BYTES = 8 * 1024
MAX_HEADER_BYTES = 64 * 1024
THREADS = 32
CONNECTION_LIMIT = 512
ServerKind = Literal["waitress", "werkzeug"]


class Server(Protocol):
    """What `jnh serve` needs of a server (werkzeug's BaseWSGIServer has the same)."""

    port: int

    def serve_forever(self) -> None: ...

    def shutdown(self) -> None: ...

    def server_close(self) -> None: ...


def make_server(
    app: Any,
    host: str,
    port: int,
    *,
    kind: ServerKind = "waitress",
    request_timeout: float = 30.0,
) -> Server:
    """A server bound to host:port (0 picks a free port), not yet serving."""
    if kind == "werkzeug":
        from werkzeug.serving import make_server as make_werkzeug_server

        server: Server = make_werkzeug_server(host, port, app, threaded=True)
        return server
    adjustments = Adjustments(
        host=host,
        port=port,
        threads=THREADS,
        connection_limit=CONNECTION_LIMIT,
        channel_request_lookahead=1,
        max_request_body_size=MAX_BODY_BYTES + 1,  # waitress refuses at >= its size
        max_request_header_size=MAX_HEADER_BYTES,
        channel_timeout=max(request_timeout, 1),  # an idle keep-alive connection
        cleanup_interval=1,  # how often request deadlines are checked
        asyncore_use_poll=True,
        clear_untrusted_proxy_headers=False,
        ident="jennah",
    )
    return _Server(app, adjustments, request_timeout)


class _Refusal(utilities.Error):  # type: ignore[misc]
    """A refusal of the server itself, carried on the request to `_ErrorTask`."""

    def __init__(self, error: JennahError) -> None:
        super().__init__(error.message)
        self.error = error
        self.code = error.http_status


class _Parser(HTTPRequestParser):  # type: ignore[misc]
    """waitress's parser, stamping when a request began and refusing a long request line
    (waitress counts it with the headers) with 414."""

    def __init__(self, adj: Adjustments) -> None:
        super().__init__(adj)
        self.started = time.monotonic()

    def received(self, data: bytes) -> int:
        if not self.headers_finished and not self.completed:
            head = (self.header_plus + data).lstrip()
            end = head.find(b"\r\n")
            if (end if end >= 0 else len(head)) > MAX_REQUEST_LINE_BYTES:
                self.refuse(_Refusal(uri_too_long(MAX_REQUEST_LINE_BYTES)))
                return len(data)
        consumed: int = super().received(data)
        return consumed

    def refuse(self, refusal: _Refusal) -> None:
        if not self.headers_finished:
            self.parse_header(b"GET / HTTP/1.0\r\n")
        self.error = refusal
        self.completed = True


class _ErrorTask(ErrorTask):  # type: ignore[misc]
    """waitress's error answer, as a Google error body; the connection is then closed."""

    def execute(self) -> None:
        error = _as_jennah_error(self.request.error)
        body = (
            json.dumps(dto.dump(error_response(error)), ensure_ascii=False, separators=(",", ":"))
            + "\n"
        ).encode()
        self.status = f"{error.http_status} {HTTPStatus(error.http_status).phrase}"
        self.response_headers.append(("Content-Type", "application/json"))
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


def _as_jennah_error(error: utilities.Error) -> JennahError:
    if isinstance(error, _Refusal):
        return error.error
    if isinstance(error, utilities.RequestEntityTooLarge):
        return payload_too_large(MAX_BODY_BYTES)
    if isinstance(error, utilities.RequestHeaderFieldsTooLarge):
        return headers_too_large(MAX_HEADER_BYTES)
    if isinstance(error, utilities.BadRequest):
        return malformed_request(str(error.body))
    if isinstance(error, utilities.ServerNotImplemented):
        return Unimplemented(str(error.body), reason="NOT_IMPLEMENTED")
    if isinstance(error, utilities.InternalServerError):
        return Internal("internal error; the server log has the details")
    return from_http_status(int(error.code), str(error.body))


class _Channel(HTTPChannel):  # type: ignore[misc]
    parser_class = _Parser
    error_task_class = _ErrorTask
    request: _Parser | None = None  # the request being received (waitress's attribute)

    def expire_request(self, timeout: float) -> None:
        """Answer 408 to a request not received whole within `timeout` of its first byte."""
        request = self.request
        if request is None or request.completed or request.error is not None:
            return
        if time.monotonic() - request.started < timeout:
            return
        with self.requests_lock:
            request.refuse(_Refusal(RequestTimeout(timeout)))
            self.requests.append(request)
            self.request = None
            if len(self.requests) == 1:
                self.server.add_task(self)
        self.server.pull_trigger()


class _Server(TcpWSGIServer):  # type: ignore[misc]
    channel_class = _Channel

    def __init__(self, app: Any, adjustments: Adjustments, request_timeout: float) -> None:
        self.request_timeout = request_timeout
        self._stopping = threading.Event()
        super().__init__(app, map={}, adj=adjustments, sockinfo=adjustments.listen[0])

    @property
    def port(self) -> int:
        return int(self.effective_port)

    def serve_forever(self) -> None:
        try:
            while not self._stopping.is_set():
                wasyncore.loop(timeout=1.0, map=self._map, use_poll=True, count=1)
        finally:
            self.task_dispatcher.shutdown(timeout=2)

    def shutdown(self) -> None:
        self._stopping.set()
        self.pull_trigger()

    def server_close(self) -> None:
        wasyncore.close_all(self._map)

    def maintenance(self, now: float) -> None:
        # Requests past their deadline first: waitress's own pass closes a channel idle for
        # channel_timeout (the same span) that holds no whole request, which would drop a
        # stalled request's connection without its 408 when both fall due in one pass.
        for channel in list(self.active_channels.values()):
            if isinstance(channel, _Channel):
                channel.expire_request(self.request_timeout)
        super().maintenance(now)
