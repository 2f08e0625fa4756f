"""References that connect the tiers of memory (family-memory-design.md §7).

- `memory://{scopeId}/{memoryId}` names one claim: brief lines and search candidates carry
  it; reading a claim follows it.
- `conv://{scopeId}/{stepId}#turn=a-b` names turns a..b (inclusive) of one execution-log
  step (one formation), numbered from 0 as the step renders them (`[turn 0] user:`) and
  as formation cites them: evidence lines carry it; reading an excerpt follows it.
  `#turn=a` names one turn; a reference without a fragment names the whole step.

Parsing refuses anything else with INVALID_ARGUMENT naming the field and the part at fault.
Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from jennah.domain.rules import IDENTIFIER_PATTERN
from jennah.errors import InvalidArgument

MEMORY_SCHEME = "memory://"
CONV_SCHEME = "conv://"
_TURN_FRAGMENT = "turn="


@dataclass(frozen=True, slots=True)
class MemoryRef:
    scope_id: str
    memory_id: str

    def __str__(self) -> str:
        return memory_ref(self.scope_id, self.memory_id)


@dataclass(frozen=True, slots=True)
class ConvRef:
    """Turns `first`..`last` of a step; both None for the whole step."""

    scope_id: str
    step_id: str
    first: int | None = None
    last: int | None = None

    def __str__(self) -> str:
        turns = None if self.first is None else (self.first, self.last or self.first)
        return conv_ref(self.scope_id, self.step_id, turns)


def memory_ref(scope_id: str, memory_id: str) -> str:
    return f"{MEMORY_SCHEME}{scope_id}/{memory_id}"


def conv_ref(scope_id: str, step_id: str, turns: tuple[int, int] | None = None) -> str:
    ref = f"{CONV_SCHEME}{scope_id}/{step_id}"
    return ref if turns is None else f"{ref}#{_TURN_FRAGMENT}{turns[0]}-{turns[1]}"


def parse_memory_ref(text: str, field: str = "ref") -> MemoryRef:
    scope_id, memory_id = _split(text, MEMORY_SCHEME, field)
    if "#" in memory_id:
        raise _refusal(field, text, "a memory:// reference has no fragment")
    _identifier(memory_id, "memory id", field, text)
    return MemoryRef(scope_id, memory_id)


def parse_conv_ref(text: str, field: str = "ref") -> ConvRef:
    scope_id, rest = _split(text, CONV_SCHEME, field)
    step_id, hashed, fragment = rest.partition("#")
    _identifier(step_id, "step id", field, text)
    if not hashed:
        return ConvRef(scope_id, step_id)
    if not fragment.startswith(_TURN_FRAGMENT):
        raise _refusal(field, text, "the fragment must be #turn=a-b (or #turn=a)")
    first_text, dash, last_text = fragment[len(_TURN_FRAGMENT) :].partition("-")
    first = _turn_number(first_text, field, text)
    last = _turn_number(last_text, field, text) if dash else first
    if last < first:
        raise _refusal(field, text, f"the turn range {first}-{last} ends before it starts")
    return ConvRef(scope_id, step_id, first, last)


def _split(text: str, scheme: str, field: str) -> tuple[str, str]:
    if not text.startswith(scheme):
        raise _refusal(field, text, f"it must start with {scheme}")
    scope_id, slash, rest = text[len(scheme) :].partition("/")
    if not slash:
        raise _refusal(field, text, f"it must be {scheme}{{scopeId}}/{{id}}")
    _identifier(scope_id, "scope id", field, text)
    return scope_id, rest


def _identifier(value: str, part: str, field: str, text: str) -> None:
    if not IDENTIFIER_PATTERN.fullmatch(value):
        raise _refusal(field, text, f"the {part} {value!r} is not a valid identifier")


def _turn_number(value: str, field: str, text: str) -> int:
    if not value.isascii() or not value.isdigit() or len(value) > 9:
        raise _refusal(field, text, f"the turn number {value!r} must be a whole number >= 0")
    return int(value)


def _refusal(field: str, text: str, why: str) -> InvalidArgument:
    return InvalidArgument(
        f"{field} {text[:200]!r} is not a valid reference: {why}",
        field=field,
        reason="INVALID_REFERENCE",
    )
