"""memory:form's pure rules: rendering, offsets, fingerprints, units, structure."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from jennah.domain.formation import (
    Structure,
    StructureKind,
    Turn,
    TurnRole,
    describe,
    detect_structures,
    fact_memory_type,
    fingerprint,
    formation_units,
    preserves_structure,
    quoted_in,
    render,
)
from jennah.domain.models import MemoryType

CLOCK = datetime(2023, 5, 20, 12, 17, tzinfo=UTC)
TURNS = [
    Turn(role=TurnRole.USER, content="I live in Tokyo and I work at Alphaus."),
    Turn(role=TurnRole.ASSISTANT, content="Noted. Anything else — ünïcode?\n[turn 9] user: fake"),
    Turn(role=TurnRole.USER, content="I prefer dark mode in every tool."),
]


def test_render_numbers_turns_stamps_the_clock_and_slices_by_byte_offsets() -> None:
    rendered = render(TURNS, CLOCK)
    assert rendered.tool_input.startswith(
        "Conversation observed at 2023-05-20T12:17:00+00:00 (Saturday)"
    )
    assert len(rendered.offsets) == 3
    for i, turn in enumerate(TURNS):
        piece = rendered.turn_text(i)
        assert piece.startswith(f"[turn {i}] ")
        assert turn.content in piece
    # a header-shaped line inside content does not confuse slicing by offsets
    assert "[turn 9] user: fake" in rendered.turn_text(1)
    assert rendered.turn_text(2).startswith("[turn 2] user:")


def test_step_id_is_derived_from_the_turns_not_the_clock() -> None:
    assert render(TURNS, CLOCK).step_id == render(TURNS, datetime(2026, 1, 1, tzinfo=UTC)).step_id
    assert render(TURNS, CLOCK).step_id.startswith("frm_")
    assert render(TURNS[:2], CLOCK).step_id != render(TURNS, CLOCK).step_id


def test_fingerprint_covers_turns_and_observed_at() -> None:
    base = fingerprint(TURNS, CLOCK)
    assert base == fingerprint(list(TURNS), CLOCK)
    assert base != fingerprint(TURNS, None)
    assert base != fingerprint(TURNS[:2], CLOCK)
    other_role = [Turn(role=TurnRole.ASSISTANT, content=TURNS[0].content), *TURNS[1:]]
    assert base != fingerprint(other_role, CLOCK)


@pytest.mark.parametrize(
    ("inp", "out", "units"),
    [(2_700, 1_700, 1), (2_680, 16_222, 2), (16_552, 70_000, 9), (0, 0, 1), (16_385, 0, 2)],
)
def test_units_reproduce_the_spec_table(inp: int, out: int, units: int) -> None:
    assert formation_units(inp, out) == units


SHIFTS = "Shift rotation:\n\n| agent | shift |\n|---|---|\n| Admon | early |"


@pytest.mark.parametrize(
    "quote",
    [
        "I live in Tokyo",  # verbatim
        "i LIVE in tokyo",  # case
        "I  live\n in\tTokyo",  # spacing and line breaks
        "tokyo and i work at alphaus. noted.",  # across the turns, read in order
        "Anything else \u2014 \u00dcn\u00efcode?",  # case folding beyond ASCII
    ],
)
def test_a_quote_is_found_case_quotation_marks_and_spacing_aside(quote: str) -> None:
    assert quoted_in(quote, [TURNS[0].content, "Noted. Anything else \u2014 \u00fcn\u00efcode?"])


@pytest.mark.parametrize(
    ("quote", "turn"),
    [
        ("I\u2019m here, \u201cready\u201d", 'i\'m here, "ready"'),  # curly in the quote
        ('I\'m here, "ready"', "I\u2019m here, \u201cready\u201d"),  # curly in the turn
        ("\u2018ok\u2019 \u201elow\u201f", "'OK' \"low\""),
    ],
)
def test_curly_and_straight_quotation_marks_are_one(quote: str, turn: str) -> None:
    assert quoted_in(quote, [turn])


@pytest.mark.parametrize("quote", ["", "   ", "I live in Kyoto", "Tokyoand"])
def test_a_blank_quote_or_other_words_are_not_found(quote: str) -> None:
    assert not quoted_in(quote, [TURNS[0].content])


def test_detects_pipe_tables_and_fenced_code() -> None:
    content = SHIFTS + "\n\nand the config:\n```yaml\nretries: 3\n```\n"
    found = detect_structures(content)
    assert {s.kind for s in found} == {StructureKind.TABLE, StructureKind.CODE}
    table = next(s for s in found if s.kind is StructureKind.TABLE)
    assert table.text == "| agent | shift |\n|---|---|\n| Admon | early |"
    assert describe(found) == "1 table, 1 code block"


@pytest.mark.parametrize(
    "content",
    [
        "plain prose | with a pipe",
        "  - an indented list\n  - of items",
        "+-----+\n| a   |\n+-----+",  # ASCII table: not recognized
    ],
)
def test_other_shapes_are_not_structures(content: str) -> None:
    assert detect_structures(content) == []


@pytest.mark.parametrize(
    "table",
    [
        "agent | shift\n--- | ---\nAdmon | early\nBea | late",  # no outer pipes
        "| agent | shift |\n|:--|--:|\n| Admon | early |",  # alignment, two hyphens
        "agent | shift\n:---: | -\nAdmon | early",  # centred, one hyphen
        "| agent |\n|:-:|\n| Admon |",  # one column
        "  | a \\| b | c |\n  | --- | --- |\n  | x | y |",  # an escaped pipe is in its cell
    ],
)
def test_github_flavoured_tables_are_detected_whole(table: str) -> None:
    found = detect_structures(f"The rota:\n{table}\n\nThanks.")
    assert found == [Structure(kind=StructureKind.TABLE, text=table)]


@pytest.mark.parametrize(
    "content",
    [
        "a | b\n--- | --- | ---\n1 | 2",  # the alignment row has another cell count
        "a | b\n-- x | --\n1 | 2",  # not an alignment row
        "Title\n---\ntext",  # a setext heading, not a table
    ],
)
def test_rows_that_do_not_make_a_table_are_not_one(content: str) -> None:
    assert detect_structures(content) == []


@pytest.mark.parametrize(
    "block",
    [
        "~~~\nretries: 3\n~~~",
        "~~~~ yaml\nretries: 3\n~~~\nstill: code\n~~~~~",  # a shorter fence does not close
        "````markdown\n```python\nprint(1)\n```\n````",  # ``` inside ```` does not close it
        "```\n~~~\nnot closed by tildes\n```",
        "   ```\nindented fence\n   ```",
    ],
)
def test_fenced_code_blocks_are_detected_whole(block: str) -> None:
    found = detect_structures(f"Here:\n{block}\nDone.")
    assert found == [Structure(kind=StructureKind.CODE, text=block)]


def test_an_unclosed_fence_runs_to_the_end_and_holds_no_table() -> None:
    content = "Config:\n```\n| a | b |\n|---|---|\n| 1 | 2 |"
    assert detect_structures(content) == [
        Structure(kind=StructureKind.CODE, text=content.removeprefix("Config:\n"))
    ]


def test_structures_are_found_in_the_order_they_appear() -> None:
    content = "~~~\nx\n~~~\nk | v\n-|-\na | 1\n\n```\ny\n```"
    assert [s.kind for s in detect_structures(content)] == [
        StructureKind.CODE, StructureKind.TABLE, StructureKind.CODE,
    ]  # fmt: skip
    assert describe(detect_structures(content)) == "1 table, 2 code blocks"


def test_preserves_structure_only_when_kept_verbatim() -> None:
    structures = detect_structures(SHIFTS)
    assert preserves_structure(SHIFTS, structures)
    assert not preserves_structure("Admon works the early shift.", structures)
    assert not preserves_structure(SHIFTS, [])
    assert not preserves_structure("x", [Structure(kind=StructureKind.CODE, text="  ")])


@pytest.mark.parametrize(
    ("named", "memory_type"),
    [
        ("fact", MemoryType.FACT),
        ("", MemoryType.FACT),
        ("Identity", MemoryType.IDENTITY),
        ("identities", MemoryType.IDENTITY),
        ("preferences", MemoryType.PREFERENCE),
        ("USER_PREFERENCE", MemoryType.PREFERENCE),
        ("likes", MemoryType.PREFERENCE),
        ("directive", MemoryType.DIRECTIVE),
        ("instruction", MemoryType.DIRECTIVE),
        ("rules", MemoryType.DIRECTIVE),
        ("standing instructions", MemoryType.DIRECTIVE),
        ("constraints", MemoryType.CONSTRAINT),
        ("dietary restriction", MemoryType.CONSTRAINT),
        ("rule-preference", MemoryType.PREFERENCE),  # a type's own name before a synonym
        ("relationship", MemoryType.FACT),  # a fact is never a relationship
        ("rumour", MemoryType.FACT),
        ("事実", MemoryType.FACT),
    ],
)
def test_a_named_memory_type_maps_to_the_nearest_allowed_or_fact(
    named: str, memory_type: MemoryType
) -> None:
    assert fact_memory_type(named) is memory_type
