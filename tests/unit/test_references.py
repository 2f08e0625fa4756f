"""memory:// and conv:// references: built and parsed one way everywhere."""

from __future__ import annotations

import pytest

from jennah.domain.references import (
    ConvRef,
    MemoryRef,
    conv_ref,
    memory_ref,
    parse_conv_ref,
    parse_memory_ref,
)
from jennah.errors import InvalidArgument


def test_a_memory_reference_round_trips() -> None:
    text = memory_ref("team.x", "chk_0123")
    assert text == "memory://team.x/chk_0123"
    assert parse_memory_ref(text) == MemoryRef("team.x", "chk_0123")
    assert str(parse_memory_ref(text)) == text


def test_a_conversation_reference_round_trips_with_and_without_turns() -> None:
    assert conv_ref("team.x", "frm_1", (12, 14)) == "conv://team.x/frm_1#turn=12-14"
    assert parse_conv_ref("conv://team.x/frm_1#turn=12-14") == ConvRef("team.x", "frm_1", 12, 14)
    assert parse_conv_ref("conv://team.x/frm_1#turn=3") == ConvRef("team.x", "frm_1", 3, 3)
    assert parse_conv_ref("conv://team.x/frm_1") == ConvRef("team.x", "frm_1")
    assert str(ConvRef("team.x", "frm_1", 3, 3)) == "conv://team.x/frm_1#turn=3-3"
    assert str(ConvRef("team.x", "frm_1")) == "conv://team.x/frm_1"


def test_turns_are_numbered_from_0_as_formation_cites_them() -> None:
    """Formation renders `[turn 0] user:` and writes evidence as #turn=0-0: it parses."""
    assert parse_conv_ref("conv://team.x/frm_1#turn=0-0") == ConvRef("team.x", "frm_1", 0, 0)
    assert parse_conv_ref("conv://team.x/frm_1#turn=0") == ConvRef("team.x", "frm_1", 0, 0)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("conv://team.x/frm_1", "must start with memory://"),
        ("memory://team.x", "must be memory://"),
        ("memory:///chk_1", "scope id ''"),
        ("memory://team.x/chk 1", "memory id 'chk 1'"),
        ("memory://team.x/chk_1#turn=1", "no fragment"),
    ],
)
def test_a_bad_memory_reference_names_the_part_at_fault(text: str, why: str) -> None:
    with pytest.raises(InvalidArgument, match=why) as err:
        parse_memory_ref(text, field="name")
    assert err.value.reason == "INVALID_REFERENCE"
    assert err.value.metadata["field"] == "name"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("memory://team.x/frm_1", "must start with conv://"),
        ("conv://team.x/frm_1#turns=1-2", "#turn=a-b"),
        ("conv://team.x/frm_1#turn=-1-2", "turn number ''"),
        ("conv://team.x/frm_1#turn=a-2", "turn number 'a'"),
        ("conv://team.x/frm_1#turn=2-", "turn number ''"),
        ("conv://team.x/frm_1#turn=\u0661-2", "turn number"),
        ("conv://team.x/frm_1#turn=5-2", "ends before it starts"),
        ("conv://team.x/frm_1#turn=1234567890", "turn number"),
        ("conv://team.x/#turn=1", "step id ''"),
    ],
)
def test_a_bad_conversation_reference_names_the_part_at_fault(text: str, why: str) -> None:
    with pytest.raises(InvalidArgument, match=why) as err:
        parse_conv_ref(text)
    assert err.value.reason == "INVALID_REFERENCE"
    assert err.value.metadata["field"] == "ref"
