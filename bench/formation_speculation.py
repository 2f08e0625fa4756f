"""Speculative decoding A/B: the Priya extraction, plain and speculative, interleaved.

One process, one 1.5B runner; the 0.5B draft runner is attached for the speculative
runs only (the same switch as JENNAH_LOCAL_MODEL_DRAFT). Prints per run the wall and
process CPU time, the runner's timing (target forwards, drafted tokens accepted), the
medians and their ratio, and whether both ways gave the same answer (they must).

    .venv/bin/python bench/formation_speculation.py --runs 5 --draft-tokens 3
"""

from __future__ import annotations

import argparse

from _extraction_ab import interleaved
from formation_speed import PRIYA, extract_prompt
from jennah.adapters.models import local_extraction
from jennah.adapters.models.local import LocalModel
from jennah.adapters.models.local_runner import LlamaRunner, chatml
from jennah.adapters.models.local_weights import QWEN_CODER_0_5B, QWEN_CODER_1_5B, ensure_gguf
from jennah.settings import Settings


def forget_the_prompt(*runners: LlamaRunner) -> None:
    """Keep only the cached prefix, as a formation's new conversation would."""
    prefix = chatml(local_extraction.SYSTEM, local_extraction.shots(), "")[0]
    for runner in runners:
        keep = len(runner._tokenize(prefix))
        runner._ctx.memory_seq_rm(0, keep, -1)
        del runner._cached[keep:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each way")
    parser.add_argument("--draft-tokens", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="0: one per usable core")
    args = parser.parse_args()
    cache = Settings().model_cache_dir
    draft = LlamaRunner(ensure_gguf(cache, QWEN_CODER_0_5B), n_threads=args.threads)
    runner = LlamaRunner(
        ensure_gguf(cache, QWEN_CODER_1_5B),
        n_threads=args.threads,
        draft=draft,
        draft_tokens=args.draft_tokens,
    )
    runner.load()
    runner.prime(local_extraction.SYSTEM, local_extraction.shots())
    model = LocalModel(cache, runner=runner)
    prompt = extract_prompt(PRIYA)

    def switch(way: str) -> None:
        runner.draft = draft if way == "speculative" else None
        forget_the_prompt(runner, draft)

    ways = ("speculative", "plain")
    _, answers = interleaved(model, runner, prompt, args.runs, ways, switch, lambda text: text)
    same = answers["plain"] == answers["speculative"] and len(answers["plain"]) == 1
    print(f"same answer both ways: {same}")


if __name__ == "__main__":
    main()
