"""The grammar check: our GBNF stacks agree with the language, and picking the plain
greedy token when the grammar allows it gives the same tokens as masking the whole
vocabulary (scripted model and grammar sampler)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from jennah.adapters.models import local_reconciliation as reconciliation
from jennah.adapters.models.local_grammar import (
    Check,
    CheckedGrammar,
    GrammarError,
    Matcher,
    parse,
)
from jennah.adapters.models.local_runner import schema_to_gbnf
from jennah.ports.prompts import EXTRACTION_SCHEMA

SMALL = r"""
root ::= "{" space (pair ("," space pair)*)? "}" space
pair ::= "\"" [a-b]{1,2} "\"" space ":" space ( [0-9]+ | "null" ) space
space ::= " "?
"""  # a JSON-like object: {"a": 1, "ab": null}


def check(grammar: str = SMALL) -> Check:
    matcher = Matcher(parse(grammar))
    return Check(matcher, matcher.start)


def viable(text: str) -> bool:
    """`text` is a prefix of some sentence of SMALL."""
    return check().allows(text)


def complete(text: str) -> bool:
    """`text` is a sentence of SMALL."""
    stacks = check().after(text).stacks
    return stacks is not None and () in stacks


@pytest.mark.parametrize(
    ("text", "allowed"),
    [
        ("{", True),
        (" {", False),
        ("{}", True),
        ("{} ", True),
        ("{}  ", False),
        ('{"a', True),
        ('{"abc', False),
        ('{"c', False),
        ('{"ab" : 42', True),
        ('{"ab" : 42 ,', True),
        ('{"ab" : 42  ,', False),
        ('{"ab": 42, "b": null}', True),
        ('{"ab": nul', True),
        ('{"ab": nulx', False),
        ('{"": 1}', False),
    ],
)
def test_the_check_allows_exactly_the_prefixes_of_the_language(text: str, allowed: bool) -> None:
    assert check().allows(text) is allowed


def test_the_check_knows_where_a_sentence_may_end() -> None:
    assert complete("{}") and complete('{"a": 1} ') and complete('{"ab":null,"b":42}')
    assert not complete("{") and not complete('{"a": 1') and not complete('{"a": nul}')


def test_the_extraction_grammar_is_read_and_checked() -> None:
    start = check(schema_to_gbnf(EXTRACTION_SCHEMA))
    assert start.allows('{"candidates": [{"kind": "CANDIDATE_KIND_FACT", "text": "x\\u00e9')
    assert not start.allows('{"candidates": [{"kind": "CANDIDATE_KIND_OTHER"')
    assert not start.allows('{"candidates": [{"text": "x"')  # kind comes first
    assert start.allows('{"candidates": []}')


def test_the_reconciliation_grammar_is_read_and_checked() -> None:
    start = check(schema_to_gbnf(reconciliation.SCHEMA))
    assert start.allows('{"same_meaning": true, "contradicts": false}')
    assert not start.allows('{"same_meaning": maybe')
    assert not start.allows('{"contradicts"')  # same_meaning comes first


def test_unsure_pieces_are_never_allowed_by_the_check() -> None:
    """Empty pieces, NUL, an incomplete UTF-8 sequence (U+FFFD): llama.cpp masks them."""
    start = check()
    for piece in ["", "{\x00", "{\ufffd"]:
        assert not start.allows(piece)
    assert start.after(None).stacks is None  # a token it cannot follow: no more checks
    assert not start.after(None).allows("{")


def test_grammar_text_it_cannot_read_is_refused() -> None:
    with pytest.raises(GrammarError):
        parse('root ::= "a" undefined-rule')
    with pytest.raises(GrammarError):
        parse('other ::= "a"')


# -- the pick: scripted logits, a scripted llama.cpp grammar sampler --------------

PIECES: list[str | None] = [
    '{"', "{", "}", " ", '"', "a", "b", "ab", '":', ":", " 1", "1", "42", "null", ",", '"}',
    "} ", ", ", "x", None, "{\ufffd", "",
]  # fmt: skip
EOG = PIECES.index(None)


class FakeContext:
    """The logits of the last decode: one scripted row."""

    def __init__(self) -> None:
        self.row: list[float] = []


class GrammarSampler:
    """llama.cpp's grammar then greedy: masks every token the language rejects, picks
    the first of highest logit; accepting a rejected token aborts (an error here)."""

    def __init__(self, state: Check | None = None) -> None:
        self.state = state or check()

    def allowed(self, token: int) -> bool:
        piece = PIECES[token]
        if piece is None:
            return self.state.stacks is not None and () in self.state.stacks
        return bool(piece) and "\ufffd" not in piece and self.state.allows(piece)

    def sample(self, ctx: Any, row: int) -> int:
        logits = [x if self.allowed(t) else float("-inf") for t, x in enumerate(ctx.row)]
        token = logits.index(max(logits))
        self.accept(token)
        return token

    def accept(self, token: int) -> None:
        assert self.allowed(token), f"the grammar rejects {PIECES[token]!r}"
        if PIECES[token] is not None:
            self.state = self.state.after(PIECES[token])

    def clone(self) -> GrammarSampler:
        return GrammarSampler(self.state)


class PlainSampler:
    def sample(self, ctx: Any, row: int) -> int:
        return int(ctx.row.index(max(ctx.row)))

    def accept(self, token: int) -> None:
        pass

    def clone(self) -> PlainSampler:
        return self


def decode(rows: list[list[float]], fast: bool) -> tuple[list[int], CheckedGrammar]:
    ctx = FakeContext()
    grammar = CheckedGrammar(GrammarSampler(), PlainSampler(), PIECES.__getitem__, check(), fast)
    tokens = []
    for row in rows:
        ctx.row = row
        token = grammar.pick(ctx, -1)
        tokens.append(token)
        if token == EOG:
            break
    return tokens, grammar


def test_the_plain_token_is_kept_when_allowed_and_the_vocabulary_masked_when_not() -> None:
    row = [0.0] * len(PIECES)
    wanted = [PIECES.index("x"), PIECES.index("{")]  # "x" first: rejected
    rows = []
    for best, second in [wanted, [PIECES.index('"'), 0], [PIECES.index("a"), 0]]:
        rows.append([5.0 if t == best else 4.0 if t == second else 0.0 for t in range(len(row))])
    tokens, grammar = decode(rows, fast=True)
    assert [PIECES[t] for t in tokens] == ["{", '"', "a"]
    assert (grammar.kept, grammar.masked) == (2, 1)


def test_ties_go_to_the_first_token_either_way() -> None:
    a, b = PIECES.index("a"), PIECES.index("b")
    row = [0.0] * len(PIECES)
    rows = [
        [3.0 if PIECES[t] == '{"' else 0.0 for t in range(len(row))],
        [2.0 if t in (a, b) else 0.0 for t in range(len(row))],
    ]
    assert decode(rows, fast=True)[0] == decode(rows, fast=False)[0] == [0, a]


def test_the_fast_pick_gives_the_same_tokens_as_masking_on_random_logits() -> None:
    rng = random.Random(14)
    kept = masked = 0
    for _ in range(300):
        rows = [[float(rng.randint(0, 6)) for _ in PIECES] for _ in range(12)]  # many ties
        fast, grammar = decode(rows, fast=True)
        assert fast == decode(rows, fast=False)[0]
        kept, masked = kept + grammar.kept, masked + grammar.masked
    assert kept > 100 and masked > 100  # both ways were taken


def test_a_clone_picks_on_its_own_state() -> None:
    ctx = FakeContext()
    grammar = CheckedGrammar(GrammarSampler(), PlainSampler(), PIECES.__getitem__, check())
    ctx.row = [1.0 if PIECES[t] == "{" else 0.0 for t in range(len(PIECES))]
    grammar.pick(ctx, -1)
    clone = grammar.clone()
    ctx.row = [1.0 if PIECES[t] == "}" else 0.0 for t in range(len(PIECES))]
    assert PIECES[clone.pick(ctx, -1)] == "}"
    ctx.row = [1.0 if PIECES[t] == '"' else 0.0 for t in range(len(PIECES))]
    assert PIECES[grammar.pick(ctx, -1)] == '"'
