"""The console's static files as a WSGI app: GET and HEAD of a fixed set of files read once
at start, with a strong ETag (304 on If-None-Match), `Cache-Control: no-cache` (always
revalidated: the file names carry no version) and the security headers on every answer.

A path is looked up in the table of files, never joined to a folder, so no path (`..`,
percent-encoded or not) reaches a file outside static/. Anything else is the API's 404 in
Google's error shape. config.json is made here: it tells the pages where the API is."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jennah.api import dto
from jennah.api.errors import MethodNotAllowed, error_response, from_http_status
from jennah.errors import JennahError

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
STATIC = Path(__file__).parent / "static"
MOUNT = "/console"
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
}
METHODS = ("GET", "HEAD")


@dataclass(frozen=True)
class Asset:
    body: bytes
    content_type: str

    @property
    def etag(self) -> str:
        return '"' + hashlib.sha256(self.body).hexdigest()[:32] + '"'


def content_security_policy(api_base: str) -> str:
    """No inline script or style, nothing framed, fetch() to this origin (and the API's,
    when it is elsewhere); form-action 'none': the sign-in form is never submitted by the
    browser, so the credential cannot end up in a URL even if the script failed."""
    connect = "'self'"
    parts = urlsplit(api_base.replace("{function}", "f"))
    if parts.scheme in ("http", "https") and parts.netloc:
        connect += f" {parts.scheme}://{parts.netloc}"
    return (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src {connect}; frame-ancestors 'none'; base-uri 'none'; "
        "object-src 'none'; form-action 'none'"
    )


class ConsoleSite:
    """The console at `mount` ('/console' under `jnh serve`; '' when it is a whole
    function). `api_base` is the API's base URL the pages call ('' for this origin); a
    `{function}` in it stands for the name of the function serving a route."""

    def __init__(self, mount: str = MOUNT, api_base: str = "") -> None:
        self.mount = mount
        self.headers = [
            ("Content-Security-Policy", content_security_policy(api_base)),
            ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "no-referrer"),
            ("X-Frame-Options", "DENY"),
        ]
        self.assets = load_assets(STATIC)
        config = json.dumps({"apiBase": api_base}).encode()
        self.assets["/config.json"] = Asset(config, CONTENT_TYPES[".json"])
        self.assets["/"] = self.assets["/index.html"]

    def owns(self, path: str) -> bool:
        return path == self.mount or path.startswith(self.mount + "/")

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        path = str(environ.get("PATH_INFO", "")) or "/"
        method = str(environ.get("REQUEST_METHOD", "GET"))
        if self.mount and path == self.mount:
            return self._answer(start_response, "301 Moved Permanently", b"",
                                [("Location", self.mount + "/")])  # fmt: skip
        asset = self.assets.get(path[len(self.mount) :]) if self.owns(path) else None
        if asset is None:
            return self._error(start_response, from_http_status(404, path))
        if method not in METHODS:
            return self._error(start_response, MethodNotAllowed(method, path, list(METHODS)))
        headers = [("ETag", asset.etag), ("Cache-Control", "no-cache")]
        if asset.etag in _tags(environ.get("HTTP_IF_NONE_MATCH", "")):
            return self._answer(start_response, "304 Not Modified", b"", headers)
        body = b"" if method == "HEAD" else asset.body
        headers += [("Content-Type", asset.content_type),
                    ("Content-Length", str(len(asset.body)))]  # fmt: skip
        return self._answer(start_response, "200 OK", body, headers)

    def _error(self, start_response: Callable[..., Any], err: JennahError) -> Iterable[bytes]:
        body = json.dumps(dto.dump(error_response(err)), separators=(",", ":")).encode()
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body))),
                   ("Cache-Control", "no-store")]  # fmt: skip
        if isinstance(err, MethodNotAllowed):
            headers.append(("Allow", ", ".join(err.allowed)))
        return self._answer(start_response, f"{err.http_status} {err.status}", body, headers)

    def _answer(
        self, start_response: Callable[..., Any], status: str, body: bytes,
        headers: list[tuple[str, str]],
    ) -> Iterable[bytes]:  # fmt: skip
        start_response(status, [*headers, *self.headers])
        return [body]


def load_assets(root: Path) -> dict[str, Asset]:
    """Every file under `root` of a known type, by its URL path ('/js/api.js')."""
    return {
        "/" + path.relative_to(root).as_posix(): Asset(
            path.read_bytes(), CONTENT_TYPES[path.suffix]
        )
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.suffix in CONTENT_TYPES
    }


def with_console(app: WsgiApp, site: ConsoleSite) -> WsgiApp:
    """`app`, with the console answering every path under its mount."""

    def dispatch(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        served = site if site.owns(str(environ.get("PATH_INFO", ""))) else app
        return served(environ, start_response)

    return dispatch


def _tags(header: str) -> set[str]:
    return {tag.strip().removeprefix("W/") for tag in header.split(",")}
