"""Idle resident memory (VmRSS) of `jnh serve` with the embedder loaded.

Starts `jnh serve` on a free loopback port with a fresh data directory, waits
until it answers, commits a few chunks and runs one semantic query over HTTP
(so the embedding model and the scope's vector index are surely loaded),
waits, then reads VmRSS of the server and all its descendants from /proc.
With `--model local` it also forms one 4-turn conversation (the formation model
loaded and both its prompts cached) and reads VmRSS and the peak (VmHWM) after it.
Stops the server at the end. Linux only.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from _common import machine_line, table

DEFAULT_JNH = Path(sys.executable).with_name("jnh")
READY_TIMEOUT_S = 120.0


def main() -> None:
    args = _parse_args()
    print(f"idle RSS of jnh serve ({machine_line()})\n")
    rows: list[list[object]] = []
    for embedder in args.embedders:
        rows.extend([embedder, *row] for row in _run_server(args, embedder))
    print(table(["embedder", "stage", "VmRSS MiB (server + children)", "processes"], rows))
    if len(args.embedders) > 1:
        print("\nthe hashing embedder loads no model: the difference is the model's share")


def _run_server(args: argparse.Namespace, embedder: str) -> list[list[object]]:
    with tempfile.TemporaryDirectory(prefix="jennah-rss-") as tmp:
        port = args.port or _free_port()
        env = {**os.environ, "JENNAH_EMBEDDER": embedder, "JENNAH_FORMATION_MODEL": args.model}
        server = subprocess.Popen(
            [str(args.jnh), "serve", "--port", str(port), "--data-dir", tmp],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            return _measure(args, server, port, Path(tmp), env)
        finally:
            _stop(server)


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jnh", type=Path, default=DEFAULT_JNH, help="the jnh executable")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--idle", type=float, default=2.0, help="seconds to wait before reading")
    parser.add_argument(
        "--model",
        default="rules",
        help="JENNAH_FORMATION_MODEL: rules (default: no model) or local (also forms once)",
    )
    parser.add_argument(
        "--embedders",
        type=lambda s: s.split(","),
        default=["minilm", "hashing"],
        help="comma-separated JENNAH_EMBEDDER values to measure (default minilm,hashing)",
    )
    return parser.parse_args()


def _measure(
    args: argparse.Namespace,
    server: subprocess.Popen[bytes],
    port: int,
    data_dir: Path,
    env: dict[str, str],
) -> list[list[object]]:
    base = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    _wait_ready(server, base)
    ready_s = time.perf_counter() - started
    rows: list[list[object]] = [[f"listening ({ready_s:.1f} s after start)", *_rss(server.pid)]]
    token = subprocess.run(
        [str(args.jnh), "auth", "print-token", "--data-dir", str(data_dir)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    scope = f"{base}/v1/scopes/rss-bench"
    chunks = [{"text": f"Idle RSS probe number {i}.", "metadata": {"n": str(i)}} for i in range(8)]
    _post(f"{scope}/memory:commit", {"chunks": chunks}, token)
    answer = _post(f"{scope}/memory:query", {"semantic": {"queryText": "probe", "topK": 10}}, token)
    hits = len(answer.get("semantic", {}).get("results", []))
    rows.append([f"after 1 commit + 1 query ({hits} hits)", *_rss(server.pid)])
    time.sleep(args.idle)
    rows.append([f"idle {args.idle:g} s later", *_rss(server.pid)])
    if args.model == "local":
        started = time.perf_counter()
        _post(f"{base}/v1/agents/rss-bench/memory:form", {"turns": FORM_TURNS}, token, 1900)
        form_s = time.perf_counter() - started
        rows.append([f"after 1 formation ({form_s:.0f} s)", *_rss(server.pid)])
        peak = _status_field(server.pid, "VmHWM") or "?"
        rows.append([f"peak of the server process (VmHWM {peak})", "", ""])
    return rows


FORM_TURNS = [
    {"role": "TURN_ROLE_USER", "content": "I'm Priya, I work as a nurse at St Mary's in Leeds."},
    {"role": "TURN_ROLE_USER", "content": "Please always ask me before booking anything."},
    {"role": "TURN_ROLE_ASSISTANT", "content": "I'd recommend the Aquatics Centre."},
    {"role": "TURN_ROLE_USER", "content": "Thanks!"},
]


def _wait_ready(server: subprocess.Popen[bytes], base: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            err = server.stderr.read().decode() if server.stderr else ""
            raise SystemExit(f"jnh serve exited with {server.returncode}:\n{err}")
        try:
            with urllib.request.urlopen(f"{base}/openapi.json", timeout=2):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    raise SystemExit(f"jnh serve did not answer within {READY_TIMEOUT_S:g} s")


def _post(url: str, body: dict[str, Any], token: str, timeout: float = 60) -> dict[str, Any]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            answer: dict[str, Any] = json.loads(response.read())
            return answer
    except urllib.error.HTTPError as exc:
        raise SystemExit(f"POST {url} failed: {exc.code} {exc.read().decode()[:500]}") from exc


def _rss(pid: int) -> tuple[float, int]:
    """VmRSS of `pid` and every descendant, in MiB, and how many processes."""
    pids = _descendants(pid)
    total_kib = sum(_vm_rss_kib(p) for p in pids)
    return total_kib / 1024, len(pids)


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            parent = _ppid(int(entry.name))
            if parent is not None:
                children.setdefault(parent, []).append(int(entry.name))
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        queue.extend(children.get(current, []))
    return found


def _status_field(pid: int, name: str) -> str | None:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith(f"{name}:"):
            return line.split(":", 1)[1].strip()
    return None


def _ppid(pid: int) -> int | None:
    value = _status_field(pid, "PPid")
    return int(value) if value else None


def _vm_rss_kib(pid: int) -> int:
    value = _status_field(pid, "VmRSS")  # "123456 kB"
    return int(value.split()[0]) if value else 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _stop(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


if __name__ == "__main__":
    main()
