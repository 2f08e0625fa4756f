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

from _extraction_ab import interleaved
from formation_speculation import forget_the_prompt
from formation_speed import PRIYA, REVISION, extract_prompt
from jennah.adapters.models import local_extraction
from jennah.adapters.models.local import LocalModel
from jennah.adapters.models.local_runner import Generation, LlamaRunner
from jennah.adapters.models.local_weights import QWEN_CODER_1_5B, ensure_gguf
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

    def switch(way: str) -> None:
        runner.grammar_check = way == "checked"
        forget_the_prompt(runner)
        runner.texts.clear()

    def answer(text: str) -> tuple[str, ...]:
        return (text, *runner.texts)

    _, answers = interleaved(model, runner, prompt, args.runs, WAYS, switch, answer)
    same = answers["checked"] == answers["masked"] and len(answers["checked"]) == 1
    print(f"same answer both ways, byte for byte (raw generations too): {same}")


if __name__ == "__main__":
    main()
