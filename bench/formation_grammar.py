"""Grammar check A/B: the Priya extraction with each pick checked first or masked, interleaved.

One process, one 1.5B runner; `grammar_check` is switched per run (the same switch as
JENNAH_LOCAL_MODEL_GRAMMAR_CHECK). "checked": each pick takes the plain greedy token
when the grammar allows it and masks the whole vocabulary only when it does not;
"masked": every pick masks the whole vocabulary (llama.cpp's grammar sampler, as before).
Prints per run the wall and process CPU time, the runner's timing (picks checked and
masked), the medians and their ratio, and whether both ways gave the same answer, byte
for byte (they must).

    .venv/bin/python bench/formation_grammar.py --runs 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from formation_speculation import forget_the_prompt
from formation_speed import PRIYA, REVISION, extract_prompt
from jennah.adapters.models import local_extraction
from jennah.adapters.models.local import LocalModel
from jennah.adapters.models.local_runner import Generation, LlamaRunner
from jennah.adapters.models.local_weights import QWEN_CODER_1_5B, ensure_gguf
from jennah.ports.prompts import EXTRACTION_SCHEMA
from jennah.settings import Settings

WAYS = ("checked", "masked")


class Recording(LlamaRunner):
    """A runner that keeps every generation's raw text (what the grammar let through)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.texts: list[str] = []

    def generate(self, *args: object, **kwargs: object) -> Generation:
        generation = super().generate(*args, **kwargs)  # type: ignore[arg-type]
        self.texts.append(generation.text)
        return generation


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each way")
    parser.add_argument("--threads", type=int, default=0, help="0: one per usable core")
    parser.add_argument("--revision", action="store_true", help="the revision, not Priya")
    args = parser.parse_args()
    cache = Settings().model_cache_dir
    runner = Recording(ensure_gguf(cache, QWEN_CODER_1_5B), n_threads=args.threads)
    runner.load()
    runner.prime(local_extraction.SYSTEM, local_extraction.shots())
    model = LocalModel(cache, runner=runner)
    prompt = extract_prompt(REVISION if args.revision else PRIYA)
    seconds: dict[str, list[tuple[float, float]]] = {way: [] for way in WAYS}
    answers: dict[str, set[tuple[str, ...]]] = {way: set() for way in WAYS}
    for i in range(args.runs):
        for way in WAYS if i % 2 == 0 else WAYS[::-1]:
            runner.grammar_check = way == "checked"
            forget_the_prompt(runner)
            runner.timings.clear()
            runner.texts.clear()
            load = os.getloadavg()[0]
            cpu, wall = time.process_time(), time.perf_counter()
            result = model.generate(prompt, EXTRACTION_SCHEMA, 8192, 3600.0)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            seconds[way].append((wall, cpu))
            answers[way].add((result.text, *runner.texts))
            timing = " | ".join(t.summary() for t in runner.timings)
            print(f"{way} {i + 1}: wall {wall:.1f} s, cpu {cpu:.1f} s, load {load:.1f}; {timing}")
    medians = {
        way: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
        for way, runs in seconds.items()
    }
    for way, (wall, cpu) in medians.items():
        print(f"{way}: wall p50 {wall:.1f} s, cpu p50 {cpu:.1f} s over {args.runs} runs")
    checked, masked = medians["checked"], medians["masked"]
    print(f"checked / masked: wall {checked[0] / masked[0]:.2f}, cpu {checked[1] / masked[1]:.2f}")
    same = answers["checked"] == answers["masked"] and len(answers["checked"]) == 1
    print(f"same answer both ways, byte for byte (raw generations too): {same}")


if __name__ == "__main__":
    main()
