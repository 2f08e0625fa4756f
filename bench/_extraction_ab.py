"""Two ways of running the same extraction, timed interleaved: the loop the model A/B
benchmarks share (bench/formation_grammar.py, bench/formation_speculation.py)."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Hashable

from jennah.adapters.models.local import LocalModel
from jennah.adapters.models.local_runner import LlamaRunner
from jennah.ports.prompts import EXTRACTION_SCHEMA


def interleaved(
    model: LocalModel,
    runner: LlamaRunner,
    prompt: str,
    runs: int,
    ways: tuple[str, str],
    switch: Callable[[str], None],
    answer: Callable[[str], Hashable],
) -> tuple[dict[str, tuple[float, float]], dict[str, set[Hashable]]]:
    """Run `prompt` `runs` times each way, alternating which way goes first; `switch(way)`
    sets the way up (forgetting the conversation's part of the prompt cache), `answer`
    turns the result's text into what both ways must agree on. Prints each run; returns
    each way's median (wall, CPU) seconds and the distinct answers it gave."""
    seconds: dict[str, list[tuple[float, float]]] = {way: [] for way in ways}
    answers: dict[str, set[Hashable]] = {way: set() for way in ways}
    for i in range(runs):
        for way in ways if i % 2 == 0 else ways[::-1]:
            switch(way)
            runner.timings.clear()
            load = os.getloadavg()[0]
            cpu, wall = time.process_time(), time.perf_counter()
            result = model.generate(prompt, EXTRACTION_SCHEMA, 8192, 3600.0)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            seconds[way].append((wall, cpu))
            answers[way].add(answer(result.text))
            timing = " | ".join(t.summary() for t in runner.timings)
            print(f"{way} {i + 1}: wall {wall:.1f} s, cpu {cpu:.1f} s, load {load:.1f}; {timing}")
    medians = {
        way: (statistics.median(w for w, _ in done), statistics.median(c for _, c in done))
        for way, done in seconds.items()
    }
    for way, (wall, cpu) in medians.items():
        print(f"{way}: wall p50 {wall:.1f} s, cpu p50 {cpu:.1f} s over {runs} runs")
    first, second = (medians[way] for way in ways)
    print(f"{ways[0]} / {ways[1]}: wall {first[0] / second[0]:.2f}, cpu {first[1] / second[1]:.2f}")
    return medians, answers
