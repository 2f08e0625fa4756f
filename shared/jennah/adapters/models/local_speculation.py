"""Greedy decoding under a grammar, plain or speculative: the same tokens either way.

Plain: the target picks one token (its grammar-constrained greedy choice), decodes it,
and picks the next. Speculative: a drafter proposes up to k next tokens; the target
decodes its pending token and the proposal in one batch, with logits for every row,
and picks row by row under the same grammar. A proposed token is kept while it equals
the target's pick; the first pick that differs (or the pick after the last proposed
token) is the target's own next token. Every emitted token is thus the target's greedy
pick given the tokens before it, as in plain decoding; what changes is how many
target forwards it takes.

Both loops end the same way: on an end-of-generation token (finished), when `finish`
returns the final text (finished), or at `max_tokens` (not finished); `should_stop` is
asked before each forward of the target.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

LAST = -1  # the logits row of the last token decoded


class Grammar(Protocol):
    """A grammar's state: what it has accepted so far (a sampler chain in llama.cpp)."""

    def clone(self) -> Grammar: ...


class Model(Protocol):
    """One model's KV cache and its greedy picks under a grammar."""

    @property
    def length(self) -> int:
        """How many tokens the KV cache holds."""
        ...

    def feed(self, tokens: Sequence[int]) -> None:
        """Decode `tokens` after the cached ones, with logits for every one of them."""
        ...

    def cut(self, length: int) -> None:
        """Forget the cached tokens from position `length` on."""
        ...

    def pick(self, row: int, grammar: Grammar) -> int:
        """The greedy token the grammar allows at a logits row of the last decode; the
        grammar accepts it."""
        ...


class Drafter(Protocol):
    """Proposes the tokens that should follow the prompt (which the drafter was given
    before the loop) and the answer so far: at most `k`, each allowed by `grammar` (the
    target's grammar after the answer so far: a clone the drafter may advance)."""

    def propose(self, answer: Sequence[int], grammar: Grammar, k: int) -> list[int]: ...


class Stopped(Exception):
    """`should_stop` said so, after `generated` tokens."""

    def __init__(self, generated: int) -> None:
        super().__init__("generation stopped")
        self.generated = generated


@dataclass
class Answer:
    """The tokens emitted so far and whether the answer is complete."""

    max_tokens: int
    is_eog: Callable[[int], bool]
    text: Callable[[Sequence[int]], str]
    finish: Callable[[str], str | None] | None
    tokens: list[int] = field(default_factory=list)
    final: str | None = None  # the text `finish` chose
    finished: bool = False
    done: bool = False

    def full(self) -> bool:
        """Room for no further token: the answer ends unfinished."""
        if len(self.tokens) >= self.max_tokens:
            self.done = True
        return self.done

    def emit(self, token: int) -> bool:
        """Take the target's next token; True when the answer is complete."""
        if self.is_eog(token):
            self.finished = self.done = True
            return True
        self.tokens.append(token)
        if self.finish is not None and any(c in self.text([token]) for c in "}]"):
            self.final = self.finish(self.text(self.tokens))
            if self.final is not None:
                self.finished = self.done = True
        return self.done or self.full()


@dataclass
class Stats:
    """Speculation's effect: target forwards, draft tokens proposed and kept."""

    forwards: int = 0
    proposed: int = 0
    accepted: int = 0


def greedy(
    target: Model, grammar: Grammar, answer: Answer, should_stop: Callable[[], bool]
) -> None:
    """Plain greedy decoding; the target's logits of the prompt's last token are ready."""
    while not answer.full():
        if should_stop():
            raise Stopped(len(answer.tokens))
        token = target.pick(LAST, grammar)
        if answer.emit(token):
            if not answer.is_eog(token):
                target.feed([token])
            return
        target.feed([token])


def speculative(
    target: Model,
    drafter: Drafter,
    grammar: Grammar,
    answer: Answer,
    should_stop: Callable[[], bool],
    k: int,
    stats: Stats,
) -> None:
    """Speculative greedy decoding (see the module's docstring): the same tokens as
    `greedy`. The target's logits of the prompt's last token are ready; at the end its
    KV cache holds the prompt and the answer (but for the answer's last token)."""
    prompt = target.length
    if answer.full():
        return
    if should_stop():
        raise Stopped(0)
    pending = target.pick(LAST, grammar)
    while not answer.emit(pending):
        if should_stop():
            raise Stopped(len(answer.tokens))
        room = answer.max_tokens - len(answer.tokens)
        proposal = drafter.propose(answer.tokens, grammar.clone(), min(k, room))
        target.feed([pending, *proposal])
        stats.forwards += 1
        stats.proposed += len(proposal)
        pending = _verify(target, grammar, answer, proposal, stats)
        target.cut(prompt + len(answer.tokens))
        if answer.done:
            return


def _verify(
    target: Model, grammar: Grammar, answer: Answer, proposal: list[int], stats: Stats
) -> int:
    """Emit the proposal's longest prefix the target agrees with; the target's own next
    token after it (not emitted yet; the grammar has accepted it)."""
    for row, token in enumerate(proposal):
        pick = target.pick(row, grammar)
        if pick != token:
            return pick
        stats.accepted += 1
        if answer.emit(token):
            return token
    return target.pick(len(proposal), grammar)


class DraftModel:
    """A Drafter on a smaller model with the target's tokenizer: its own greedy picks
    under the grammar. Its KV cache holds the prompt when the loop starts."""

    def __init__(self, model: Model, prompt: Sequence[int], is_eog: Callable[[int], bool]) -> None:
        self._model = model
        self._prompt = len(prompt)
        self._answer: list[int] = []  # the answer tokens after the prompt in the cache
        self._is_eog = is_eog

    def propose(self, answer: Sequence[int], grammar: Grammar, k: int) -> list[int]:
        self._catch_up(answer)
        proposal: list[int] = []
        while len(proposal) < k:
            token = self._model.pick(LAST, grammar)
            if self._is_eog(token):
                break
            proposal.append(token)
            if len(proposal) < k:
                self._model.feed([token])
                self._answer.append(token)
        return proposal

    def _catch_up(self, answer: Sequence[int]) -> None:
        """Make the cache hold the prompt and `answer`, its last token decoded now."""
        keep = 0
        for cached, token in zip(self._answer, answer[:-1], strict=False):
            if cached != token:
                break
            keep += 1
        self._model.cut(self._prompt + keep)
        self._model.feed(answer[keep:])
        self._answer = list(answer)
