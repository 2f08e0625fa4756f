"""memory:commit's CPU per turn without the embedder: what a write and its lifecycle pass cost.

Every LoCoMo turn is committed as a chunk, in commits of 500 (as bench/ingest_http.py
sends them), through the API in this process (the Flask app's test client: no sockets), on
a fresh SQLite store, with an embedder that answers one constant unit vector (the model's
~3 ms per turn would hide the rest). The lifecycle pass after each write runs as `jnh
serve` runs it (`deferred`: one background thread, once a scope's writes pause; the run
waits for the last pass), as the Cloud Functions run it (`inline`: in the request), or
not at all (`none`). Figure: this process's CPU time per turn (every thread: the deferred
pass included), steadier than wall time on a shared machine.

With --baseline REF the same runs go, alternating with this tree's in each round, through
the code of git revision REF (extracted with `git archive` into a temporary directory and
run in a child process on this venv), so a change is reported as a ratio measured under
the same load. A revision without the pass (before issue 16) runs `none` whatever is asked.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MODES = ("deferred", "inline", "none")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="path to locomo10.json")
    parser.add_argument("--modes", default="deferred,inline", help="comma-separated passes")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", metavar="REF", help="also run git REF's code")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # a run, in a child process
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_run(args.child, args.data)))
        return
    modes = args.modes.split(",")
    with tempfile.TemporaryDirectory(prefix="jennah-commit-cpu-") as tmp:
        trees = {"this tree": None}
        if args.baseline:
            _extract(args.baseline, Path(tmp))
            trees = {"baseline": Path(tmp) / "shared", **trees}
        results: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.rounds):
            for mode in modes:
                for name, shared in trees.items():
                    results.setdefault((name, mode), []).append(_child(shared, mode, args.data))
    print(f"memory:commit CPU per turn, constant embedder, {args.rounds} rounds "
          f"(load average {os.getloadavg()[0]:.1f} at the end)\n")  # fmt: skip
    print(f"{'code':<10} {'pass':<9} {'CPU ms/turn median':>18}  rounds            vs baseline")
    for (name, mode), runs in results.items():
        median = statistics.median(runs)
        base = results.get(("baseline", mode))
        ratio = f"{statistics.median(base) / median:.2f}x less CPU" if base and base != runs else ""
        rounds = " ".join(f"{r:.3f}" for r in runs)
        print(f"{name:<10} {mode:<9} {median:>18.3f}  {rounds:<17} {ratio}")


def _extract(ref: str, into: Path) -> None:
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref, "shared"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def _child(shared: Path | None, mode: str, data: Path | None) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JENNAH_")}
    if shared is not None:
        env["PYTHONPATH"] = str(shared)
    command = [sys.executable, __file__, "--child", mode]
    if data is not None:
        command += ["--data", str(data)]
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    return float(json.loads(out.strip().splitlines()[-1]))


def _run(mode: str, data: Path | None) -> float:
    """One ingest of every turn in this process; CPU ms per turn."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from ingest_http import _bodies
    from locomo import DEFAULT_DATA, load

    conversations = load(data or DEFAULT_DATA)
    bodies = [(c.sample_id, b) for c in conversations for b in _bodies(c, "500")]
    turns = sum(len(c.turns) for c in conversations)
    with tempfile.TemporaryDirectory(prefix="jennah-commit-cpu-") as tmp:
        container, client, headers = _app(Path(tmp), mode)
        used = time.process_time()
        for sample_id, body in bodies:
            answer = client.post(f"/v1/scopes/c-{sample_id}/memory:commit", json=body,
                                 headers=headers)  # fmt: skip
            assert answer.status_code == 200, answer.data
        passes = getattr(container, "passes", None)
        if passes is not None and hasattr(passes, "idle"):
            passes.idle()  # the deferred passes the writes left pending
        cpu = time.process_time() - used
        container.close()
    return cpu / turns * 1000


def _app(data_dir: Path, mode: str) -> tuple[Any, Any, dict[str, str]]:
    import logging

    from jennah.api.app import create_app
    from jennah.bootstrap import Container
    from jennah.cli.serve import ensure_local_root
    from jennah.settings import Settings

    logging.disable(logging.CRITICAL)
    settings = Settings(data_dir=data_dir, embedder="hashing", formation_model="rules")
    try:
        container = Container(settings, embedder=_Constant(), defer_passes=mode == "deferred")
    except TypeError:  # a revision without the lifecycle pass
        container = Container(settings, embedder=_Constant())
    if mode == "none" and hasattr(container, "passes"):
        container._passes = _NoPasses()
    root = ensure_local_root(container)
    client = create_app(container).test_client()
    headers = {"Authorization": f"Bearer {root.token}"}
    warm = {"chunks": [{"text": "warm up"}]}
    assert client.post("/v1/scopes/warm/memory:commit", json=warm, headers=headers).status_code
    return container, client, headers


class _Constant:
    """An embedder answering one unit vector: the commit path without the model."""

    dimensions = 384
    _vector = [384**-0.5] * 384

    def embed(self, text: str) -> list[float]:
        return list(self._vector)

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        return [list(self._vector) for _ in texts]

    def embed_soon(self, text: str) -> Callable[[], list[float]]:
        vector = self.embed(text)
        return lambda: vector

    def load(self) -> None:
        return None


class _NoPasses:
    def __call__(self, store: Any, scope: Any, at: Any) -> None:
        return None

    def settle(self, scope: Any) -> None:
        return None


if __name__ == "__main__":
    main()
