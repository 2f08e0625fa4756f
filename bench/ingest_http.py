"""memory:commit ingest over HTTP: LoCoMo turns into a `jnh serve`, turns/s and server CPU.

Every LoCoMo turn is committed as a chunk (text "speaker: words", its `dia_id`, speaker and
session as metadata, `validAt` from the session date), one conversation per scope, in
commits of up to --batch consecutive turns (500 by default) or one commit per session
(--batch session, as bench/locomo.py does). Two figures per round: wall-clock turns/s seen
by the client, and the server's CPU time per turn (user + system of the `jnh serve`
process, from /proc), which a busy shared machine disturbs less than wall time.

With --baseline REF the same turns also go, in the same rounds (alternating, baseline
first), into a `jnh serve` built from the git revision REF of this repository (extracted
with `git archive` into a temporary directory and run on this venv), so the new code is
reported as a ratio against the old one measured under the same load.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _common import machine_line, table
from _serve import DEFAULT_JNH, jnh_serve
from locomo import DEFAULT_DATA, Conversation, load

REPO = Path(__file__).resolve().parent.parent
TARGET_TURNS_PER_S = 500.0


def main() -> None:
    args = _parse_args()
    conversations = load(args.data)[: args.conversations]
    turns = sum(len(c.turns) for c in conversations)
    bodies = [(c.sample_id, body) for c in conversations for body in _bodies(c, args.batch)]
    print(f"memory:commit ingest over HTTP ({machine_line()})")
    print(
        f"{turns:,} LoCoMo turns in {len(bodies)} commits (batch {args.batch}), "
        f"embedder {args.embedder}, {args.rounds} rounds; load average before: {_load()}\n"
    )
    with _servers(args) as servers:
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in servers}
        for round_ in range(args.rounds):
            for name, jnh in servers.items():
                results[name].append(_ingest(jnh, args.embedder, bodies, turns, round_))
    rows: list[list[object]] = []
    baseline = results.get("baseline")
    for name, runs in results.items():
        rate = statistics.median(r for r, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        ratio = ""
        if baseline and name != "baseline":
            base_rate = statistics.median(r for r, _ in baseline)
            base_cpu = statistics.median(c for _, c in baseline)
            ratio = f"{rate / base_rate:.2f}x turns/s, {base_cpu / cpu:.2f}x less CPU"
        rows.append([name, rate, max(r for r, _ in runs), cpu, ratio])
    print(table(["server", "turns/s median", "best", "server CPU ms/turn", "vs baseline"], rows))
    print(f"target: >= {TARGET_TURNS_PER_S:,.0f} turns/s (issue 15); load average after: {_load()}")


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="path to locomo10.json")
    parser.add_argument("--conversations", type=int, default=10, help="use the first N")
    parser.add_argument("--batch", default="500", help="turns per commit, or 'session'")
    parser.add_argument("--embedder", choices=["minilm", "hashing"], default="minilm")
    parser.add_argument("--rounds", type=int, default=3, help="ingest everything N times")
    parser.add_argument("--baseline", metavar="REF", help="also run the server of git REF")
    return parser.parse_args()


def _bodies(conv: Conversation, batch: str) -> Iterator[dict[str, Any]]:
    if batch == "session":
        groups: dict[int, list[Any]] = {}
        for turn in conv.turns:
            groups.setdefault(turn.session, []).append(turn)
        chunks_of = [g[i : i + 500] for g in groups.values() for i in range(0, len(g), 500)]
    else:
        size = int(batch)
        chunks_of = [conv.turns[i : i + size] for i in range(0, len(conv.turns), size)]
    for turns in chunks_of:
        yield {"chunks": [_wire_chunk(t) for t in turns]}


def _wire_chunk(turn: Any) -> dict[str, Any]:
    return {
        "text": turn.chunk_text,
        "metadata": {"dia_id": turn.dia_id, "speaker": turn.speaker, "session": str(turn.session)},
        "validAt": turn.valid_at.isoformat().replace("+00:00", "Z"),
    }


@contextlib.contextmanager
def _servers(args: argparse.Namespace) -> Iterator[dict[str, Path]]:
    if not args.baseline:
        yield {"this tree": DEFAULT_JNH}
        return
    with tempfile.TemporaryDirectory(prefix="jennah-baseline-") as tmp:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", args.baseline, "shared"],
            check=True, capture_output=True,
        ).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        jnh = Path(tmp) / "jnh"
        jnh.write_text(
            "#!/bin/sh\n"
            f'PYTHONPATH="{tmp}/shared" exec "{sys.executable}" '
            '-c "from jennah.cli.main import main; main()" "$@"\n'
        )
        jnh.chmod(0o755)
        yield {"baseline": jnh, "this tree": DEFAULT_JNH}


def _ingest(
    jnh: Path, embedder: str, bodies: list[tuple[str, dict[str, Any]]], turns: int, round_: int
) -> tuple[float, float]:
    """(turns/s wall, server CPU ms per turn) for one ingest of every body."""
    import httpx

    with jnh_serve("waitress", embedder, jnh=jnh) as served:
        headers = {"Authorization": f"Bearer {served.token}"}
        with httpx.Client(base_url=served.base, headers=headers, timeout=300) as http:
            warm = {"chunks": [{"text": "warm up the model and the connection"}]}
            http.post("/v1/scopes/warm-up/memory:commit", json=warm).raise_for_status()
            cpu_before = _cpu_seconds(served.pid)
            started = time.perf_counter()
            for sample_id, body in bodies:
                path = f"/v1/scopes/locomo-{sample_id}-{round_}/memory:commit"
                http.post(path, json=body).raise_for_status()
            wall = time.perf_counter() - started
            cpu = _cpu_seconds(served.pid) - cpu_before
    return turns / wall, cpu / turns * 1000


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its threads, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


if __name__ == "__main__":
    main()
