"""The `scripted` model: answers set in advance, for tests and the benchmark.

Each call consumes the next scripted answer, in order:
- a `ModelResult`: returned as it is;
- a dict, a list or a pydantic model: returned as its JSON text;
- a str: returned as the text;
- an exception (instance or class): raised;
- a callable `(prompt, json_schema) -> answer`: called, and its answer used as above;
- `Slow(seconds, answer)`: the answer after `seconds` of latency.

Usage of an answer that is not a `ModelResult` is estimated like the rules
model's (`len(prompt) // 4` in, `len(text) // 4` out). Both bounds are kept as
a real model keeps them: latency past `deadline_seconds` waits only until the
deadline and raises DEADLINE_EXCEEDED naming it; an answer over
`max_output_tokens` raises ABORTED naming that bound. Every call is recorded
in `calls` (prompt, schema and bounds) for assertions. With `repeat=True` the
script starts over when it runs out (a benchmark's endless formations);
otherwise a call past its end is INTERNAL.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeAlias

from pydantic import BaseModel

from jennah.adapters.models.bounds import (
    estimate_tokens,
    output_bound_exceeded,
    time_bound_exceeded,
)
from jennah.errors import Internal
from jennah.ports.model import ModelResult
from jennah.ports.prompts import read_data

NAME = "scripted"
REGION = "local"


@dataclass(frozen=True)
class Slow:
    """An answer that takes `seconds` to arrive."""

    seconds: float
    answer: Answer


Answer: TypeAlias = (
    ModelResult
    | BaseModel
    | dict[str, Any]
    | list[Any]
    | str
    | BaseException
    | type[BaseException]
    | Slow
    | Callable[[str, dict[str, Any]], "Answer"]
)


@dataclass(frozen=True)
class ModelCall:
    """One recorded call: what the caller asked, with its bounds."""

    prompt: str
    json_schema: dict[str, Any]
    max_output_tokens: int
    deadline_seconds: float

    @property
    def data(self) -> dict[str, Any]:
        """The prompt's data block (`task`, `turns`, `candidates`, ...)."""
        return read_data(self.prompt)


class ScriptedModel:
    """The LanguageModel port, answered from a script."""

    def __init__(
        self,
        answers: Iterable[Answer] = (),
        *,
        latency_seconds: float = 0.0,
        repeat: bool = False,
        name: str = NAME,
        region: str = REGION,
    ) -> None:
        self.name = name
        self.region = region
        self.latency_seconds = latency_seconds
        self.repeat = repeat
        self.calls: list[ModelCall] = []
        self._script = list(answers)
        self._next = 0
        self._lock = threading.Lock()

    def add(self, *answers: Answer) -> None:
        """Append answers to the script."""
        with self._lock:
            self._script.extend(answers)

    @property
    def remaining(self) -> int:
        """Scripted answers not yet consumed."""
        with self._lock:
            return len(self._script) - self._next

    def generate(
        self,
        prompt: str,
        json_schema: dict[str, Any],
        max_output_tokens: int,
        deadline_seconds: float,
    ) -> ModelResult:
        call = ModelCall(prompt, json_schema, max_output_tokens, deadline_seconds)
        answer, seconds = _unwrapped(self._take(call))
        if callable(answer) and not isinstance(answer, type):
            answer, more = _unwrapped(answer(prompt, json_schema))
            seconds += more
        _wait(self.latency_seconds + seconds, deadline_seconds)
        result = _result(answer, prompt, self.name)
        if result.output_tokens > max_output_tokens:
            raise output_bound_exceeded(
                max_output_tokens, input_tokens=result.input_tokens, output_tokens=max_output_tokens
            )
        return result

    def _take(self, call: ModelCall) -> Answer:
        with self._lock:
            self.calls.append(call)
            if self._next >= len(self._script) and self.repeat and self._script:
                self._next = 0
            if self._next >= len(self._script):
                raise Internal(
                    f"the scripted model has no answer for call {len(self.calls)} "
                    f"(it was given {len(self._script)})"
                )
            answer = self._script[self._next]
            self._next += 1
            return answer


def _unwrapped(answer: Answer) -> tuple[Answer, float]:
    """The answer inside any `Slow` wrappers, and their latency added up."""
    seconds = 0.0
    while isinstance(answer, Slow):
        seconds += answer.seconds
        answer = answer.answer
    return answer, seconds


def _wait(seconds: float, deadline_seconds: float) -> None:
    """Sleep the latency, but never past the deadline: past it, DEADLINE_EXCEEDED."""
    if seconds > deadline_seconds:
        time.sleep(max(deadline_seconds, 0.0))
        raise time_bound_exceeded(deadline_seconds)
    if seconds > 0:
        time.sleep(seconds)


def _result(answer: Answer, prompt: str, name: str) -> ModelResult:
    if isinstance(answer, BaseException):
        raise answer
    if isinstance(answer, type) and issubclass(answer, BaseException):
        raise answer()
    if isinstance(answer, ModelResult):
        return answer
    text = _text(answer)
    return ModelResult(
        text=text,
        input_tokens=estimate_tokens(prompt),
        output_tokens=estimate_tokens(text),
        model=name,
    )


def _text(answer: object) -> str:
    if isinstance(answer, str):
        return answer
    if isinstance(answer, BaseModel):
        return answer.model_dump_json()
    if isinstance(answer, dict | list):
        return json.dumps(answer, ensure_ascii=False)
    raise Internal(f"the scripted model cannot answer with a {type(answer).__name__}")
