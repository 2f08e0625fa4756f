"""Where a `local` formation's time goes: the deterministic drivers and their speed.

Runs the `local` model in this process (no server) on the README's Priya
conversation (4 turns) and its revision, and prints per generation: the prefix's
restore, the prompt tokens decoded after the cached prefix, the tokens generated,
their times and rates; then the embedding of the candidates (minilm) and the
formation's model calls. Token counts do not depend on the machine; times do (the
load average is printed with them), so an idle-machine estimate is
tokens / measured rate.

    .venv/bin/python bench/formation_speed.py --repeat 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jennah.adapters.models import local_extraction, local_reconciliation
from jennah.adapters.models.local import LocalModel
from jennah.adapters.models.local_runner import LlamaRunner, Timing
from jennah.adapters.models.local_weights import ensure_gguf
from jennah.domain.formation import Turn, TurnRole, detect_structures
from jennah.ports.prompts import (
    EXTRACT_INSTRUCTIONS,
    EXTRACTION_SCHEMA,
    RECONCILE_INSTRUCTIONS,
    RECONCILE_SCHEMA,
    ExtractionAnswer,
    build_prompt,
    parse_answer,
)
from jennah.services.formation.extraction import extraction_data
from jennah.settings import Settings

PRIYA = [
    ("user", "I'm Priya, I work as a nurse at St Mary's in Leeds and I'm allergic to penicillin."),
    ("user", "My daughter Mira starts swimming lessons on Tuesdays at 5pm from next week. "
             "Please always ask me before booking anything on weekends."),
    ("assistant", "I'd recommend the Aquatics Centre on Kirkstall Road, it has a beginner pool."),
    ("user", "Thanks!"),
]  # fmt: skip
REVISION = [
    ("user", "I've left St Mary's, I now work at Leeds General Infirmary as a charge nurse."),
    ("assistant", "Congratulations on the new role!"),
]
CLOCK = "2026-11-30T18:00:00+00:00"


def extract_prompt(turns: list[tuple[str, str]]) -> str:
    """The prompt the formation service builds for these (role, content) turns."""
    roles = {"user": TurnRole.USER, "assistant": TurnRole.ASSISTANT}
    spoken = [Turn(role=roles[role], content=content) for role, content in turns]
    structures = [detect_structures(turn.content) for turn in spoken]
    data = extraction_data(spoken, datetime.fromisoformat(CLOCK), structures, None)
    return build_prompt(EXTRACT_INSTRUCTIONS, data)


def reconcile_prompt(memories: list[str], candidates: list[str]) -> str:
    """Every candidate asks about every memory (the service sends only the similar ones:
    this is an upper bound, capped at MAX_PAIRS per candidate by the model)."""
    existing = [
        {"id": f"m{i}", "text": text, "memoryType": "fact"} for i, text in enumerate(memories)
    ]
    data = {
        "task": "reconcile",
        "clock": CLOCK,
        "existing": existing,
        "candidates": [
            {
                "candidateIndex": i,
                "kind": "fact",
                "text": text,
                "memoryType": "fact",
                "neighbours": [m["id"] for m in existing],
            }
            for i, text in enumerate(candidates)
        ],
    }
    return build_prompt(RECONCILE_INSTRUCTIONS, data)


@dataclass
class Run:
    seconds: float
    timings: list[Timing]
    texts: list[str]


def call(model: LocalModel, runner: LlamaRunner, prompt: str, schema: dict[str, Any]) -> Run:
    runner.timings.clear()
    started = time.perf_counter()
    result = model.generate(prompt, schema, 8192, 600.0)
    seconds = time.perf_counter() - started
    texts = []
    if schema is EXTRACTION_SCHEMA:
        answer = parse_answer(result.text, ExtractionAnswer, "extraction")
        texts = [c.text for c in answer.candidates]
    return Run(seconds, list(runner.timings), texts)


def show(label: str, run: Run) -> None:
    print(f"{label}: {run.seconds:.2f} s, {len(run.timings)} generation(s)")
    for timing in run.timings:
        print(f"  {timing.summary()}")


def rate(tokens: int, seconds: float) -> float:
    return tokens / seconds if seconds > 0 else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="0: one per usable core")
    args = parser.parse_args()
    settings = Settings()
    print(f"load average at start: {os.getloadavg()}")
    started = time.perf_counter()
    runner = LlamaRunner(ensure_gguf(settings.model_cache_dir), n_threads=args.threads)
    runner.load()
    print(f"model load: {time.perf_counter() - started:.2f} s, {runner.n_threads} thread(s)")
    started = time.perf_counter()
    runner.prime(local_reconciliation.SYSTEM, local_reconciliation.SHOTS)
    runner.prime(local_extraction.SYSTEM, local_extraction.shots())
    print(f"prefixes decoded (once per process): {time.perf_counter() - started:.2f} s")
    model = LocalModel(settings.model_cache_dir, runner=runner)

    runs = [call(model, runner, extract_prompt(PRIYA), EXTRACTION_SCHEMA) for _ in range(1)]
    for i in range(args.repeat):
        # alternate with the other prompt, so the extraction prefix is restored, not kept
        call(model, runner, reconcile_prompt(["x"], ["y"]), RECONCILE_SCHEMA)
        runs.append(call(model, runner, extract_prompt(PRIYA), EXTRACTION_SCHEMA))
        show(f"Priya extraction {i + 1}", runs[-1])
    print("  candidates:", *runs[-1].texts, sep="\n    ")
    timings = [t for r in runs[1:] for t in r.timings]
    generated = sum(t.generated_tokens for t in timings)
    generating = sum(t.generation_seconds for t in timings)
    decoded = sum(t.suffix_tokens for t in timings)
    decoding = sum(t.suffix_seconds for t in timings)
    print(
        f"extraction p50 {statistics.median(r.seconds for r in runs[1:]):.2f} s; "
        f"generation {rate(generated, generating):.1f} tokens/s, "
        f"prompt decode {rate(decoded, decoding):.1f} tokens/s"
    )

    from jennah.adapters.embedding.minilm import MiniLMEmbedder

    embedder = MiniLMEmbedder(cache_dir=settings.model_cache_dir)
    embedder.load()
    started = time.perf_counter()
    embedder.embed_batch(runs[-1].texts)
    seconds = time.perf_counter() - started
    print(f"embedding {len(runs[-1].texts)} candidates (minilm): {seconds:.2f} s")

    revision = call(model, runner, extract_prompt(REVISION), EXTRACTION_SCHEMA)
    show("revision extraction", revision)
    print("  candidates:", *revision.texts, sep="\n    ")
    reconciliation = call(
        model, runner, reconcile_prompt(runs[-1].texts, revision.texts), RECONCILE_SCHEMA
    )
    show("revision reconciliation (every memory a neighbour: an upper bound)", reconciliation)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
