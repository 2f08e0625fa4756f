"""Speculative decoding gives plain greedy decoding's tokens, on scripted models.

A scripted model scores every token of a small vocabulary from the context it was
decoded in (a hash), so a pick made from a stale or wrong KV cache gives other tokens;
a scripted grammar forbids tokens depending on what it has accepted, and ends the
answer after a while. The drafter is a second scripted model that agrees with the
target only part of the time, so proposals are kept, cut short and rejected.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import pytest

from jennah.adapters.models.local_speculation import (
    LAST,
    Answer,
    DraftModel,
    Stats,
    Stopped,
    greedy,
    speculative,
)

VOCAB = 12
EOG = 11


class ScriptedGrammar:
    """Forbids the token equal to (sum of accepted) mod 5, and EOG before `length`
    tokens; allows only EOG after them."""

    def __init__(self, length: int, accepted: Sequence[int] = ()) -> None:
        self.length = length
        self.accepted = list(accepted)

    def clone(self) -> ScriptedGrammar:
        return ScriptedGrammar(self.length, self.accepted)

    def allows(self, token: int) -> bool:
        if len(self.accepted) >= self.length:
            return token == EOG
        return token not in (EOG, sum(self.accepted) % 5)

    def accept(self, token: int) -> None:
        assert self.allows(token), "a pick the grammar forbids"
        self.accepted.append(token)


class ScriptedModel:
    """Scores tokens by a hash of (salt, the cached context); `agree` in 0..100 is the
    share of contexts where it scores like salt 'target' instead of its own salt."""

    def __init__(self, prompt: Sequence[int], salt: str = "target", agree: int = 100) -> None:
        self.cache = list(prompt)
        self.rows: list[tuple[int, ...]] = [tuple(self.cache)]
        self.salt = salt
        self.agree = agree
        self.forwards = 0

    @property
    def length(self) -> int:
        return len(self.cache)

    def feed(self, tokens: Sequence[int]) -> None:
        assert tokens, "a forward of no token"
        self.rows = []
        for token in tokens:
            self.cache.append(token)
            self.rows.append(tuple(self.cache))
        self.forwards += 1

    def cut(self, length: int) -> None:
        assert length <= len(self.cache)
        del self.cache[length:]

    def pick(self, row: int, grammar: ScriptedGrammar) -> int:  # type: ignore[override]
        context = self.rows[row]
        best = max(
            (t for t in range(VOCAB) if grammar.allows(t)), key=lambda t: self._score(context, t)
        )
        grammar.accept(best)
        return best

    def _score(self, context: tuple[int, ...], token: int) -> bytes:
        salt = self.salt
        if self._hash("agree", context)[0] % 100 < self.agree:
            salt = "target"
        return self._hash(salt, (*context, token))

    @staticmethod
    def _hash(salt: str, values: tuple[int, ...]) -> bytes:
        return hashlib.sha256(f"{salt}:{values}".encode()).digest()


def text(tokens: Sequence[int]) -> str:
    return "".join("}" if t == 7 else chr(ord("a") + t) for t in tokens)


def answer(max_tokens: int, finish_at: int | None = None) -> Answer:
    def finish(so_far: str) -> str | None:  # ends at the `finish_at`-th closing brace
        return so_far if finish_at is not None and so_far.count("}") >= finish_at else None

    return Answer(max_tokens, lambda t: t == EOG, text, finish)


def plain(prompt: list[int], length: int, max_tokens: int, finish_at: int | None) -> Answer:
    result = answer(max_tokens, finish_at)
    greedy(ScriptedModel(prompt), ScriptedGrammar(length), result, lambda: False)
    return result


def spec(
    prompt: list[int], length: int, max_tokens: int, finish_at: int | None, k: int, agree: int
) -> tuple[Answer, ScriptedModel, Stats]:
    result = answer(max_tokens, finish_at)
    target = ScriptedModel(prompt)
    drafter = DraftModel(ScriptedModel(prompt, "draft", agree), prompt, lambda t: t == EOG)
    stats = Stats()
    speculative(target, drafter, ScriptedGrammar(length), result, lambda: False, k, stats)
    return result, target, stats


CASES = [
    (prompt, length, max_tokens, finish_at, k, agree)
    for prompt in ([1, 2, 3], [4])
    for length, max_tokens, finish_at in (
        (30, 100, None),
        (30, 17, None),
        (60, 100, 2),
        (0, 5, None),
    )
    for k in (1, 2, 4, 6)
    for agree in (0, 60, 95, 100)
]


@pytest.mark.parametrize(("prompt", "length", "max_tokens", "finish_at", "k", "agree"), CASES)
def test_speculative_decoding_emits_the_tokens_of_plain_greedy_decoding(
    prompt: list[int], length: int, max_tokens: int, finish_at: int | None, k: int, agree: int
) -> None:
    expected = plain(prompt, length, max_tokens, finish_at)
    got, target, _ = spec(prompt, length, max_tokens, finish_at, k, agree)
    assert (got.tokens, got.finished, got.final) == (
        expected.tokens,
        expected.finished,
        expected.final,
    )
    # the target's cache holds the prompt and the answer, but for its last token at most
    assert target.cache == (prompt + got.tokens)[: len(target.cache)]
    assert len(target.cache) >= len(prompt) + len(got.tokens) - 1


def test_a_drafter_the_target_agrees_with_saves_target_forwards() -> None:
    got, target, stats = spec([1, 2, 3], 60, 100, None, 4, 100)
    assert len(got.tokens) == 60
    assert stats.accepted == stats.proposed
    assert target.forwards == stats.forwards <= 60 // 5 + 1


def test_a_drafter_the_target_never_agrees_with_costs_no_extra_token() -> None:
    got, _, stats = spec([1, 2, 3], 30, 100, None, 3, 0)
    assert got.tokens == plain([1, 2, 3], 30, 100, None).tokens
    assert stats.forwards <= len(got.tokens)


def test_no_room_means_no_pick() -> None:
    got, target, stats = spec([1, 2, 3], 30, 0, None, 4, 100)
    assert got.tokens == [] and not got.finished and stats.forwards == 0
    assert target.cache == [1, 2, 3]


def test_should_stop_is_asked_before_every_target_forward() -> None:
    target = ScriptedModel([1])
    calls: list[int] = []

    def should_stop() -> bool:
        calls.append(target.forwards)
        return len(calls) > 3

    drafter = DraftModel(ScriptedModel([1], "draft", 50), [1], lambda t: t == EOG)
    with pytest.raises(Stopped) as stopped:
        speculative(target, drafter, ScriptedGrammar(40), answer(100), should_stop, 3, Stats())
    assert target.forwards == 2  # the checks before the first pick and before two forwards
    assert stopped.value.generated >= 2


def test_the_plain_loop_picks_from_the_prompts_last_row() -> None:
    model = ScriptedModel([5, 6])
    grammar = ScriptedGrammar(3)
    first = ScriptedModel([5, 6]).pick(LAST, ScriptedGrammar(3))
    result = answer(10)
    greedy(model, grammar, result, lambda: False)
    assert result.tokens[0] == first and result.finished and len(result.tokens) == 3


def test_the_draft_model_proposes_from_the_prompt_and_the_answer_so_far() -> None:
    draft = ScriptedModel([1, 2], "draft", 100)
    drafter = DraftModel(draft, [1, 2], lambda t: t == EOG)
    first = drafter.propose([3, 4], ScriptedGrammar(30, [3, 4]), 3)
    assert draft.cache == [1, 2, 3, 4, *first[:-1]]
    # the target kept one proposed token and picked another: the cache follows
    second = drafter.propose([3, 4, first[0], 9], ScriptedGrammar(30, [3, 4, first[0], 9]), 2)
    assert draft.cache == [1, 2, 3, 4, first[0], 9, second[0]]
    assert len(second) == 2
