"""What running memory:form as an operation adds, on the embedded default (SQLite).

Two ways to form the same conversations, in one process, alternating:
- `service`: the formation service alone (`prepare` + `run`): bounds, model
  calls, checks, one commit; the baseline;
- `api`: POST /v1/agents/{id}/memory:form through the app `jnh serve` mounts:
  authentication, admission against the allowance (a reservation), the
  operation record, the in-process queue's hop to a worker thread, the same
  formation, the operation's finish, usage settlement, and the request's
  polling wait for the receipt.

The model is a scripted one answering instantly (3 fact candidates per
formation, of made-up words; a reconciliation call, when the embedder finds
something similar, answers "new"), the embedder the dependency-free
HashingEmbedder: the figures are the platform's share. Each formation is a new
conversation, so no replay shortcuts anything.

Run: .venv/bin/python bench/form_operation_overhead.py [--formations 200]
"""

from __future__ import annotations

import argparse
import random
import statistics
import string
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import form_now
from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.adapters.models.scripted import ScriptedModel
from jennah.adapters.sqlite.store import SqliteStore
from jennah.api.app import create_app
from jennah.bootstrap import Container
from jennah.cli.serve import ensure_local_root
from jennah.domain.formation import Turn, TurnRole
from jennah.domain.models import ScopeRecord, ScopeRef
from jennah.ports.prompts import read_data
from jennah.services.formation import FormationCommand
from jennah.settings import Settings


def conversation(i: int, rng: random.Random) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """Three turns and the extraction a model would answer for them (three facts of
    made-up words, so nothing formed before is similar: one model call)."""
    facts = [f"I keep {_words(rng)} in {_words(rng)}." for _ in range(3)]
    turns = [
        {"role": "TURN_ROLE_USER", "content": " ".join(facts)},
        {"role": "TURN_ROLE_ASSISTANT", "content": "Noted."},
        {"role": "TURN_ROLE_USER", "content": "Thanks."},
    ]
    answer = {
        "candidates": [
            {"kind": "CANDIDATE_KIND_FACT", "memory_type": "fact",
             "text": f"The user keeps {fact[len('I keep '):-1]}.",
             "turns": [0], "quote": fact, "attributes": {}}
            for fact in facts
        ]
    }  # fmt: skip
    return turns, answer


def _words(rng: random.Random) -> str:
    return " ".join("".join(rng.choices(string.ascii_lowercase, k=7)) for _ in range(3))


def main() -> None:
    args = _parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        service_ms, api_ms = _run(Path(tmp), args.formations, args.warmup)
    print(f"memory:form, SQLite, scripted instant model, {args.formations} formations each")
    for name, values in (("service (baseline)", service_ms), ("api (operation)", api_ms)):
        ordered = sorted(values)
        p50 = statistics.median(ordered)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        print(f"  {name:20s} p50 {p50:7.2f} ms   p99 {p99:7.2f} ms")
    added = statistics.median(api_ms) - statistics.median(service_ms)
    ratio = statistics.median(api_ms) / statistics.median(service_ms)
    print(f"  operation overhead   p50 +{added:.2f} ms ({ratio:.2f}x the service alone)")


class Answers:
    """The model's answers: the current conversation's extraction, and "new" for every
    candidate a reconciliation call asks about."""

    def __init__(self) -> None:
        self.extraction: dict[str, Any] = {}

    def __call__(self, prompt: str, _schema: dict[str, Any]) -> dict[str, Any]:
        data = read_data(prompt)
        if "existing" not in data:
            return self.extraction
        return {
            "decisions": [
                {"candidate_index": c["candidateIndex"], "decision": "new"}
                for c in data["candidates"]
            ]
        }


def _run(tmp: Path, formations: int, warmup: int) -> tuple[list[float], list[float]]:
    answers = Answers()
    model = ScriptedModel([answers], repeat=True)
    settings = Settings(data_dir=tmp / "api", embedder="hashing")
    container = Container(settings, embedder=HashingEmbedder(), model=model)
    token = ensure_local_root(container).token
    client = create_app(container).test_client()
    headers = {"Authorization": f"Bearer {token}"}
    store = SqliteStore(tmp / "service.db")
    embedder = HashingEmbedder()
    scope = ScopeRef(enterprise_id="local", scope_id="bench")
    rng = random.Random(42)
    service_ms: list[float] = []
    api_ms: list[float] = []
    try:
        for i in range(warmup + formations):
            turns, answers.extraction = conversation(i, rng)
            command = FormationCommand(
                scope=scope,
                registration=ScopeRecord(scope=scope, kind="agent", created_by="user:root"),
                turns=[Turn(role=TurnRole(t["role"]), content=t["content"]) for t in turns],
            )
            started = time.perf_counter()
            form_now(command, store, embedder, model)
            service = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            answered = client.post(
                "/v1/agents/bench/memory:form", json={"turns": turns}, headers=headers
            )
            api = (time.perf_counter() - started) * 1000
            assert answered.status_code == 200, answered.get_json()
            if i >= warmup:
                service_ms.append(service)
                api_ms.append(api)
    finally:
        store.close()
        container.close()
    return service_ms, api_ms


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--formations", type=int, default=200, help="timed formations per way")
    parser.add_argument("--warmup", type=int, default=10, help="untimed formations first")
    return parser.parse_args()


if __name__ == "__main__":
    main()
