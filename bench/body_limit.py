"""How `jnh serve` refuses a 100 MB request body: time to the 413 and memory growth.

Starts `jnh serve` (once per server in --servers) and sends, authenticated, a
memory:commit whose body is 100 MB: declared by Content-Length, and chunked (no length
announced). A thread keeps sending the body while the main thread waits for the answer;
the time is from the end of the request headers to the answer's status line. Reads
VmRSS and VmHWM (peak) of the server before and after each request. Linux only.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import threading
import time

from _common import machine_line, table
from _serve import Served, jnh_serve, status_kib

BODY_BYTES = 100 * 10**6
PIECE = b"a" * 2**16
COMMIT = "/v1/agents/limit/memory:commit"


def main() -> None:
    args = _parse_args()
    print(f"a 100 MB body against jnh serve ({machine_line()})\n")
    rows: list[list[object]] = []
    for server in args.servers:
        with jnh_serve(server, "hashing") as served:
            for framing in ("content-length", "chunked"):
                times, rss, peak, statuses = [], [], [], set()
                for _ in range(args.repeats):
                    before_rss = status_kib(served.pid, "VmRSS")
                    before_peak = status_kib(served.pid, "VmHWM")
                    status, seconds = _send(served, chunked=framing == "chunked")
                    statuses.add(status)
                    times.append(seconds * 1000)
                    rss.append((status_kib(served.pid, "VmRSS") - before_rss) / 1024)
                    peak.append((status_kib(served.pid, "VmHWM") - before_peak) / 1024)
                rows.append([server, framing, ",".join(sorted(statuses)), min(times),
                             max(times), max(rss), max(peak)])  # fmt: skip
    print(table(["server", "body", "answer", "min ms", "max ms", "RSS growth MiB",
                 "peak RSS growth MiB"], rows))  # fmt: skip
    print("\ntarget: refused in <= 100 ms with RSS growth <= 20 MiB")


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="requests per case (default 5)")
    parser.add_argument(
        "--servers", type=lambda s: s.split(","), default=["waitress", "werkzeug"],
        help="comma-separated JENNAH_HTTP_SERVER values (default waitress,werkzeug)",
    )  # fmt: skip
    return parser.parse_args()


def _send(served: Served, *, chunked: bool) -> tuple[str, float]:
    """The answer's status and the seconds from the end of the headers to it."""
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {BODY_BYTES}"
    head = (
        f"POST {COMMIT} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {served.token}\r\n"
        f"Content-Type: application/json\r\n{framing}\r\n\r\n"
    ).encode()
    piece = f"{len(PIECE):x}\r\n".encode() + PIECE + b"\r\n" if chunked else PIECE
    with socket.create_connection(("127.0.0.1", served.port), timeout=60) as sock:
        sock.sendall(head)
        started = time.perf_counter()
        sender = threading.Thread(target=_feed, args=(sock, piece), daemon=True)
        sender.start()
        first = sock.recv(64)
        elapsed = time.perf_counter() - started
        with contextlib.suppress(OSError):  # the server may have closed it already
            sock.shutdown(socket.SHUT_RDWR)
        sender.join(timeout=30)
    return first.split(b" ", 2)[1].decode() if first else "closed", elapsed


def _feed(sock: socket.socket, piece: bytes) -> None:
    sent = 0
    try:
        while sent < BODY_BYTES:
            sock.sendall(piece)
            sent += len(piece)
    except OSError:
        pass  # refused: the server closed the connection


if __name__ == "__main__":
    main()
