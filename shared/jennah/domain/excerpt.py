"""A conversation excerpt (family-memory-design.md §9, read_conversation_excerpt): the turns
a conv:// reference cites, cut from the execution-log step a formation wrote.

A step's `tool_input` is the rendered conversation (`formation.render`): a header line,
then each turn as `[turn N] role:` on its own line, its content, and a newline; the step's
metadata `jennah.turn_offsets` holds the UTF-8 byte offset at which each turn begins.
Turns are numbered from 0, as rendered and as formation cites them. A turn is cut by
those offsets, never found by parsing the text; only its own first line is read, for
the role. A reference without a fragment cites every turn of the step: at most
formation.MAX_TURNS (200), the most one formation takes. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from jennah.domain.formation import ROLE_LABELS, TURN_OFFSETS, TurnRole
from jennah.domain.models import ExecutionLogStep
from jennah.domain.references import ConvRef
from jennah.errors import Internal, InvalidArgument

_ROLES = {label: role for role, label in ROLE_LABELS.items()}


@dataclass(frozen=True)
class ExcerptTurn:
    number: int
    role: TurnRole
    text: str


def turn_offsets(step: ExecutionLogStep) -> list[int]:
    """Where each turn of the step begins (UTF-8 byte offsets into tool_input)."""
    raw = step.metadata.get(TURN_OFFSETS, "")
    try:
        return [int(part) for part in raw.split(",") if part.strip()]
    except ValueError:
        raise Internal(f"step {step.step_id!r} has unreadable {TURN_OFFSETS}") from None


def cited_turns(step: ExecutionLogStep, ref: ConvRef, field: str = "ref") -> list[ExcerptTurn]:
    """The turns `ref` cites, in order; INVALID_ARGUMENT naming the range and the step's
    turn count when they run past its last turn."""
    offsets = turn_offsets(step)
    count = len(offsets)
    if ref.first is None:
        first, last = 0, count - 1
    else:
        first, last = ref.first, ref.first if ref.last is None else ref.last
    if last >= count:
        held = f"turns 0-{count - 1}" if count else "no turns"
        raise InvalidArgument(
            f"{field} cites turns {first}-{last}, but step {step.step_id!r} has {count} "
            f"turns ({held})",
            field=field,
            reason="TURN_OUT_OF_RANGE",
            metadata={"turns": f"{first}-{last}", "turnCount": str(count)},
        )
    data = step.tool_input.encode("utf-8")
    return [_turn(step, data, offsets, number) for number in range(first, last + 1)]


def _turn(step: ExecutionLogStep, data: bytes, offsets: list[int], number: int) -> ExcerptTurn:
    end = offsets[number + 1] if number + 1 < len(offsets) else len(data)
    rendered = data[offsets[number] : end].decode("utf-8")
    header, _, content = rendered.partition("\n")
    prefix = f"[turn {number}] "
    label = header.removeprefix(prefix).removesuffix(":")
    if not header.startswith(prefix) or label not in _ROLES:
        raise Internal(f"step {step.step_id!r} turn {number} does not begin with its header")
    return ExcerptTurn(number, _ROLES[label], content.removesuffix("\n"))
