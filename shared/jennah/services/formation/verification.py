"""Verification in code, not by the model: what extraction proposed is checked
against the conversation and the platform's rules before anything is reconciled.

- Attribution: the cited turns must exist, none of them blank (a blank turn
  cannot be cited), and the quote must appear in them (case, curly or straight
  quotation marks and spacing aside). When it is unusable (turns that do not
  exist, a blank turn, none cited, or cited turns that do not hold the quote)
  the fact is still stored, with `jennah.source_step` but no
  `jennah.source_turns`: an attribution never costs the fact.
- Grounding: the quote must appear in some user or assistant turn, else the
  candidate is REJECTED (no quote, or words nobody said). Tool calls and results
  are what the agent read, not what anyone said: a quote the conversation holds
  only in tool turns is REJECTED naming tool output (it counts only where the
  assistant passed it on in its own reply, which is then the turn to quote).
- Extracted attributes may not use the reserved `jennah.` prefix, in any letter
  case (REJECTED, naming the key), must leave room for the platform's one or two provenance
  keys within the metadata bound (REJECTED, naming the limit), and must be
  valid metadata keys and values.
- A fact's memory type is the allowed type nearest to what extraction named
  (a synonym or plural read as the type, anything else `fact`): never a reason
  to lose the fact. A relationship needs a subject, a relation and an object.
  The relation is recorded exactly as extracted (surrounding spaces aside), in
  any script and whether or not the vocabulary declares it, never rewritten:
  one longer than a stored relation (64 characters) or holding a control
  character is REJECTED naming why. Entity classes are kept only when the
  vocabulary declares them (otherwise the node has no class, never a
  placeholder).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Sequence

from jennah.domain import rules
from jennah.domain.formation import (
    PLATFORM_PREFIX,
    EntityRef,
    Turn,
    TurnRole,
    fact_memory_type,
    is_blank,
    quoted_in,
)
from jennah.errors import InvalidArgument
from jennah.services.formation.candidates import Candidate, EdgeShape, Entity, node_id

MAX_ENTITY_NAME_LENGTH = 256  # a node label's bound (memory:commit's)
MAX_RELATION_LENGTH = 64  # a stored edge's relation (graph_edges.relation)
# The turns whose words can be memory: what the user and the assistant said.
_SPOKEN = frozenset({TurnRole.USER, TurnRole.ASSISTANT})


class _Rejected(Exception):
    """A candidate fails verification; the message is its rejection reason."""


def verify(candidate: Candidate, turns: Sequence[Turn], entity_classes: Collection[str]) -> None:
    """Check one extracted candidate in place: fill its verified shape, or reject it."""
    try:
        _check_text(candidate)
        candidate.source_turns = _attribution(candidate, turns)
        _check_grounded(candidate, turns)
        _check_attributes(candidate)
        if candidate.is_fact:
            candidate.memory_type = fact_memory_type(candidate.extracted.memory_type)
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


def _attribution(candidate: Candidate, turns: Sequence[Turn]) -> list[int] | None:
    """The ascending cited turns when they exist, none is blank, and they hold the quote;
    else None (unusable)."""
    cited = candidate.extracted.turns
    if not cited or any(not 0 <= turn < len(turns) or is_blank(turns[turn]) for turn in cited):
        return None
    ordered = sorted(set(cited))
    spoken = (turns[i].content for i in ordered if turns[i].role in _SPOKEN)
    if not quoted_in(candidate.extracted.quote, spoken):
        return None
    return ordered


def _check_grounded(candidate: Candidate, turns: Sequence[Turn]) -> None:
    """REJECTED unless a user or assistant turn holds the quote: a fact needs words
    someone said. Words found only in tool turns were read, not said."""
    quote = candidate.extracted.quote
    if not quote or not quote.strip():
        raise _Rejected("extraction gave no quote from the conversation to support it")
    if candidate.source_turns is not None:
        return
    if quoted_in(quote, (turn.content for turn in turns if turn.role in _SPOKEN)):
        return  # an unusable attribution: the fact is kept, without source_turns
    if quoted_in(quote, (turn.content for turn in turns if turn.role not in _SPOKEN)):
        raise _Rejected(
            f"its quote {quote[:60]!r} comes from tool output, which no user or assistant "
            "turn passes on"
        )
    raise _Rejected(f"its quote {quote[:60]!r} does not appear in the conversation")


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


def _edge_shape(candidate: Candidate, entity_classes: Collection[str]) -> EdgeShape:
    extracted = candidate.extracted
    subject = _entity(extracted.subject, "subject", entity_classes)
    target = _entity(extracted.object, "object", entity_classes)
    relation = _relation(extracted.relation)
    return EdgeShape(source=subject, relation=relation, target=target)


def _relation(extracted: str | None) -> str:
    """The relation as extracted, surrounding spaces aside; never rewritten."""
    relation = (extracted or "").strip()
    if not relation:
        raise _Rejected("a relationship needs a relation")
    if len(relation) > MAX_RELATION_LENGTH:
        raise _Rejected(
            f"its relation is {len(relation)} characters; at most {MAX_RELATION_LENGTH} are allowed"
        )
    if any(unicodedata.category(character) == "Cc" for character in relation):
        raise _Rejected(f"its relation {relation!r} holds a control character")
    return relation


def _entity(ref: EntityRef | None, role: str, entity_classes: Collection[str]) -> Entity:
    name = " ".join((ref.name if ref is not None else "").split())
    if not name:
        raise _Rejected(f"a relationship needs a named {role}")
    if len(name) > MAX_ENTITY_NAME_LENGTH:
        raise _Rejected(
            f"the {role}'s name is {len(name)} characters; at most "
            f"{MAX_ENTITY_NAME_LENGTH} are allowed"
        )
    entity_class = (ref.entity_class or "").strip() if ref is not None else ""
    kept = entity_class if entity_class in entity_classes else None
    return Entity(node_id=node_id(name), label=name, node_type=kept)
