"""End to end: the HTTP server of a real `jnh serve` refuses what it must before the app
runs (issue 13 items 6 and 7), each time with a Google error body, and a slow client
holds no request thread. Raw sockets, since these requests are what clients refuse to
send."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from jennah.api.bodies import MAX_BODY_BYTES
from tests.e2e.conftest import Server, serving

pytestmark = pytest.mark.slow

TIMEOUT_S = 2  # the server's request timeout in this module
COMMIT = "/v1/scopes/limits/memory:commit"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("http")
    with serving(workdir, JENNAH_REQUEST_TIMEOUT_SECONDS=str(TIMEOUT_S)) as running:
        yield running


@pytest.fixture(scope="module")
def token(server: Server) -> str:
    return server.ok("auth", "print-token").strip()


def connect(server: Server) -> socket.socket:
    host, port = server.endpoint.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=TIMEOUT_S + 10)


def answer(sock: socket.socket) -> tuple[int, dict[str, str], dict[str, Any]]:
    """Read one answer to its end (the server closes after a refusal)."""
    data = b""
    while b"\r\n\r\n" not in data or len(data) < _expected_length(data):
        piece = sock.recv(65536)
        if not piece:
            break
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
    return int(status_line.split()[1]), headers, json.loads(body)


def _expected_length(data: bytes) -> int:
    head, _, _ = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(head) + 4 + int(line.split(b":")[1])
    return len(data) + 1


def ask(server: Server, raw: bytes) -> tuple[int, dict[str, str], dict[str, Any]]:
    with connect(server) as sock:
        sock.sendall(raw)
        return answer(sock)


def google_error(body: dict[str, Any], code: int, status: str, reason: str) -> dict[str, Any]:
    error: dict[str, Any] = body["error"]
    assert (error["code"], error["status"]) == (code, status), error
    assert error["details"][0]["reason"] == reason
    assert error["details"][0]["domain"] == "jennah"
    return error


def vm_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_a_request_line_past_8_kib_is_414(server: Server) -> None:
    code, headers, body = ask(server, b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert code == 414 and headers["content-type"] == "application/json"
    google_error(body, 414, "INVALID_ARGUMENT", "URI_TOO_LONG")


def test_headers_past_64_kib_are_431(server: Server) -> None:
    raw = b"GET /v1/caller HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n"
    code, _, body = ask(server, raw)
    assert code == 431
    google_error(body, 431, "INVALID_ARGUMENT", "HEADERS_TOO_LARGE")


@pytest.mark.parametrize("line", [b"GARBAGE", b"GET / HTTP/1.1\r\nno colon here"])
def test_a_malformed_request_is_400(server: Server, line: bytes) -> None:
    code, _, body = ask(server, line + b"\r\n\r\n")
    assert code == 400
    google_error(body, 400, "INVALID_ARGUMENT", "MALFORMED_REQUEST")


def test_trace_is_a_google_not_found_with_allow(server: Server) -> None:
    raw = f"TRACE {COMMIT} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
    code, headers, body = ask(server, raw)
    assert code == 404 and headers["allow"] == "POST"
    google_error(body, 404, "NOT_FOUND", "METHOD_NOT_ALLOWED")


def test_a_path_holding_a_line_break_is_a_google_error(server: Server) -> None:
    code, _, body = ask(server, b"GET /x%0Ay HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert code == 404
    google_error(body, 404, "NOT_FOUND", "ROUTE_NOT_FOUND")


def test_a_100_mb_body_is_refused_before_it_is_read(server: Server, token: str) -> None:
    before = vm_rss_mib(server.pid)
    with connect(server) as sock:
        sock.sendall(
            f"POST {COMMIT} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {100 * 2**20}\r\n\r\n".encode()
            + b'{"chunks": [{"text": "'
            + b"a" * 2**20
        )
        code, headers, body = answer(sock)
    assert code == 413 and headers["connection"] == "close"
    error = google_error(body, 413, "INVALID_ARGUMENT", "PAYLOAD_TOO_LARGE")
    assert error["details"][0]["metadata"] == {"limitBytes": str(MAX_BODY_BYTES)}
    assert vm_rss_mib(server.pid) - before <= 20


def test_a_chunked_body_is_refused_once_it_passes_the_cap(server: Server, token: str) -> None:
    before = vm_rss_mib(server.pid)
    piece = b"a" * 2**20
    with connect(server) as sock:
        sock.sendall(
            f"POST {COMMIT} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
            "Transfer-Encoding: chunked\r\n\r\n".encode()
        )
        try:
            for _ in range(2 * MAX_BODY_BYTES // len(piece)):
                sock.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused while sending: the answer is already there to read
        code, _, body = answer(sock)
    assert code == 413
    google_error(body, 413, "INVALID_ARGUMENT", "PAYLOAD_TOO_LARGE")
    assert vm_rss_mib(server.pid) - before <= 20


def test_a_slow_body_is_408_and_holds_no_thread(server: Server, token: str) -> None:
    """Two hundred connections that never finish their body: the server still answers,
    and each of them is answered 408 and closed after the request timeout."""
    stalled = []
    for _ in range(200):
        sock = connect(server)
        sock.sendall(
            f"POST {COMMIT} HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n".encode()
            + b'{"chunks"'
        )
        stalled.append(sock)
    try:
        caller = httpx.get(
            f"{server.endpoint}/v1/caller", headers={"Authorization": f"Bearer {token}"}
        )
        assert caller.status_code == 200
        for sock in stalled:
            code, _, body = answer(sock)
            assert code == 408
            google_error(body, 408, "DEADLINE_EXCEEDED", "REQUEST_TIMEOUT")
            assert sock.recv(1) == b""  # closed
    finally:
        for sock in stalled:
            sock.close()


def test_the_server_still_serves_a_normal_commit(server: Server, token: str) -> None:
    response = httpx.post(
        f"{server.endpoint}{COMMIT}", headers={"Authorization": f"Bearer {token}"},
        json={"chunks": [{"text": "still serving"}]}, timeout=30,
    )  # fmt: skip
    assert response.status_code == 200, response.text
