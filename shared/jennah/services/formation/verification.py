"""Verification in code, not by the model: what extraction proposed is checked
against the conversation and the platform's rules before anything is reconciled.

- The cited turns must exist; when they do not (or none are cited) the
  attribution is unusable: the fact is still stored, with `jennah.source_step`
  but no `jennah.source_turns`.
- The quote must appear verbatim (spacing aside) in the cited user or assistant
  turns, or, with unusable attribution, in some user or assistant turn; else
  REJECTED. Tool calls and results are what the agent read, not what anyone said:
  a quote found only there is REJECTED (tool output counts only where the
  assistant passed it on in its own reply, which is then the turn to quote).
- Extracted attributes may not use the reserved `jennah.` prefix, in any letter
  case (REJECTED, naming the key), must leave room for the platform's one or two provenance
  keys within the metadata bound (REJECTED, naming the limit), and must be
  valid metadata keys and values.
- A fact needs a known memory type; a relationship needs a subject, a relation
  and an object. Entity classes are kept only when the vocabulary declares
  them (otherwise the node has no class, never a placeholder).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from jennah.domain import rules
from jennah.domain.formation import PLATFORM_PREFIX, EntityRef, Turn, TurnRole
from jennah.domain.models import MemoryType
from jennah.errors import InvalidArgument
from jennah.services.formation.candidates import Candidate, EdgeShape, Entity, node_id

MAX_ENTITY_NAME_LENGTH = 256  # a node label's bound (memory:commit's)
# The turns whose words can be memory: what the user and the assistant said.
_SPOKEN = frozenset({TurnRole.USER, TurnRole.ASSISTANT})
_NOT_A_NAME_CHARACTER = re.compile(r"[^A-Za-z0-9_.\-]+")
_MEMORY_TYPES = ", ".join(t.value for t in MemoryType if t is not MemoryType.RELATIONSHIP)


class _Rejected(Exception):
    """A candidate fails verification; the message is its rejection reason."""


def verify(candidate: Candidate, turns: Sequence[Turn], entity_classes: Collection[str]) -> None:
    """Check one extracted candidate in place: fill its verified shape, or reject it."""
    try:
        _check_text(candidate)
        candidate.source_turns = _attribution(candidate, len(turns))
        _check_quote(candidate, turns)
        _check_attributes(candidate)
        if candidate.is_fact:
            candidate.memory_type = _memory_type(candidate)
        else:
            candidate.edge = _edge_shape(candidate, entity_classes)
    except _Rejected as rejected:
        candidate.reject(str(rejected))


def platform_keys(candidate: Candidate) -> int:
    """How many provenance keys the platform adds to a fact: source step, and source
    turns when attribution is usable; none on a relationship."""
    if not candidate.is_fact:
        return 0
    return 1 if candidate.source_turns is None else 2


def _check_text(candidate: Candidate) -> None:
    text = candidate.text
    if not text.strip():
        raise _Rejected("the candidate has no text")
    if len(text) > rules.MAX_TEXT_LENGTH:
        raise _Rejected(
            f"the candidate's text is {len(text)} characters; at most "
            f"{rules.MAX_TEXT_LENGTH} are allowed"
        )


def _attribution(candidate: Candidate, turn_count: int) -> list[int] | None:
    """Ascending cited turns, or None when they name no turn or a turn that does not exist."""
    cited = candidate.extracted.turns
    if not cited or any(not 0 <= turn < turn_count for turn in cited):
        return None
    return sorted(set(cited))


def _check_quote(candidate: Candidate, turns: Sequence[Turn]) -> None:
    quote = _spaced(candidate.extracted.quote)
    if not quote:
        raise _Rejected("extraction gave no quote from the conversation to support it")
    cited = candidate.source_turns
    indexes = cited if cited is not None else range(len(turns))
    if _quoted(quote, [turns[i] for i in indexes if turns[i].role in _SPOKEN]):
        return
    where = "turn " + ", ".join(str(i) for i in cited) if cited is not None else "the conversation"
    if _quoted(quote, [turns[i] for i in indexes]):
        raise _Rejected(
            f"its quote {_excerpt(quote)} comes from tool output in {where}, which no user or "
            "assistant turn it cites passes on"
        )
    raise _Rejected(f"its quote {_excerpt(quote)} does not appear in {where}")


def _quoted(quote: str, turns: Sequence[Turn]) -> bool:
    """Whether the quote appears in one of the turns, or across consecutive ones."""
    contents = [_spaced(turn.content) for turn in turns]
    return any(quote in content for content in contents) or quote in " ".join(contents)


def _check_attributes(candidate: Candidate) -> None:
    attributes = candidate.extracted.attributes
    for key in attributes:
        if key.casefold().startswith(PLATFORM_PREFIX):
            raise _Rejected(
                f"extracted attribute {key!r} uses the reserved {PLATFORM_PREFIX!r} prefix"
            )
    needed = platform_keys(candidate)
    if len(attributes) + needed > rules.MAX_METADATA_KEYS:
        raise _Rejected(
            f"its {len(attributes)} extracted attributes leave no room for the {needed} "
            f"provenance key{'s' if needed != 1 else ''}: the metadata limit is "
            f"{rules.MAX_METADATA_KEYS} keys per item"
        )
    try:
        rules.validate_metadata(attributes, "attributes")
    except InvalidArgument as invalid:
        raise _Rejected(invalid.message) from None


def _memory_type(candidate: Candidate) -> MemoryType:
    value = candidate.extracted.memory_type.strip().lower() or MemoryType.FACT.value
    try:
        memory_type = MemoryType(value)
    except ValueError:
        memory_type = MemoryType.RELATIONSHIP
    if memory_type is MemoryType.RELATIONSHIP:
        raise _Rejected(
            f"memory type {candidate.extracted.memory_type!r} is not a fact's; use one of "
            f"{_MEMORY_TYPES}"
        )
    return memory_type


def _edge_shape(candidate: Candidate, entity_classes: Collection[str]) -> EdgeShape:
    extracted = candidate.extracted
    subject = _entity(extracted.subject, "subject", entity_classes)
    target = _entity(extracted.object, "object", entity_classes)
    relation = _NOT_A_NAME_CHARACTER.sub("_", (extracted.relation or "").strip()).strip("_")[:64]
    if not relation:
        raise _Rejected("a relationship needs a relation (letters, digits, '_', '.' or '-')")
    return EdgeShape(source=subject, relation=relation, target=target)


def _entity(ref: EntityRef | None, role: str, entity_classes: Collection[str]) -> Entity:
    name = " ".join((ref.name if ref is not None else "").split())
    if not name:
        raise _Rejected(f"a relationship needs a named {role}")
    if len(name) > MAX_ENTITY_NAME_LENGTH:
        raise _Rejected(
            f"the {role}'s name is {len(name)} characters; at most "
            f"{MAX_ENTITY_NAME_LENGTH} are allowed"
        )
    entity_class = ref.entity_class if ref is not None else None
    kept = entity_class if entity_class and entity_class in entity_classes else None
    return Entity(node_id=node_id(name), label=name, node_type=kept)


def _spaced(text: str) -> str:
    return " ".join(text.split())


def _excerpt(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")
