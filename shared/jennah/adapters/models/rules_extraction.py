"""The `rules` model's extraction: a small, documented set of sentence patterns.

See `jennah.adapters.models.rules` for what it extracts and what it cannot.
Every candidate cites its turn and a verbatim quote: a slice of the turn's
content, so verification in code always finds it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from jennah.domain.formation import (
    CandidateKind,
    EntityRef,
    ExtractedCandidate,
    Structure,
    StructureKind,
    detect_structures,
)

USER = "user"
ASSISTANT = "assistant"
THE_USER = "the user"

# Leading words that carry nothing ("Oh, and I live in ...", "Sure, try ...").
_FILLER = (
    r"(?:(?:also|and|so|oh|well|btw|actually|anyway|fyi|plus|sure|ok|okay|noted|great|yes|yeah)"
    r"\b[\s,:;\u2014-]*)*"
)
# Adverbs allowed between "I" and the verb, dropped from the fact.
_ADVERB = r"(?:(?:also|now|currently|still|really|actually|just|recently)\s+)?"
# Sentences that are offers or conversation mechanics: never a source of memory.
_OFFER = re.compile(
    r"^(?:anything else|is there anything|let me know|feel free|would you like|do you want|"
    r"shall i|happy to help|glad to help|if you(?:'d| would)? (?:want|like|need|prefer))\b",
    re.IGNORECASE,
)
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")
_CLAUSE_BREAK = re.compile(r"\s*;\s*|,?\s+(?:and|but)\s+(?=(?:I|I'm|my|My)\b)")
_TRAILING = ".!?;:, \t"
# An object that is only a pronoun says nothing on its own ("I love it").
_BARE_PRONOUNS = frozenset({"it", "that", "this", "them", "those", "these", "you", "him", "her"})
# Where an entity's name ends inside an object ("Tokyo with my wife" -> "Tokyo").
_ENTITY_END = re.compile(
    r",|\s+(?:with|since|as|because|for|from|and|but|until|when|where|while|on|in|at|near)\s+"
)


@dataclass(frozen=True)
class _Relation:
    """A first-person statement that is also a relationship: "I live in X"."""

    pattern: str  # the words after "I", as a regex
    verb: str  # the third-person words of the fact
    relation: str  # the default relation name
    aliases: tuple[str, ...]  # declared relation types that mean the same
    object_classes: tuple[str, ...]  # declared entity classes that always fit the object


_LIVES = ("lives_in", "resides_in")
_WORKS = ("works_at", "works_for", "employed_by")
_PLACES = ("place", "location")
_ORGANIZATIONS = ("organization", "organisation")
_RELATIONS = (
    _Relation(r"live\s+in", "lives in", "lives_in", _LIVES, _PLACES),
    _Relation(r"moved\s+to", "moved to", "lives_in", _LIVES, _PLACES),
    _Relation(r"work\s+at", "works at", "works_at", _WORKS, _ORGANIZATIONS),
    _Relation(r"work\s+for", "works for", "works_at", _WORKS, _ORGANIZATIONS),
)
_PREFERENCES = (("prefer", "prefers"), ("like", "likes"), ("love", "loves"), ("hate", "hates"))
_PERSON_CLASSES = ("person", "user")

_USER_WORDS = (
    (r"\bI am\b", "the user is"),
    (r"\bI'm\b", "the user is"),
    (r"\bI\b", "the user"),
    (r"\bmyself\b", "the user"),
    (r"\bmy\b", "the user's"),
    (r"\bmine\b", "the user's"),
    (r"\bour\b", "the user's"),
    (r"\bme\b", "the user"),
)
_ASSISTANT_WORDS = (
    (r"\byou are\b", "the user is"),
    (r"\byou're\b", "the user is"),
    (r"\byourself\b", "the user"),
    (r"\byours\b", "the user's"),
    (r"\byour\b", "the user's"),
    (r"\byou\b", "the user"),
)


@dataclass(frozen=True)
class _Context:
    turn_index: int
    vocabulary: dict[str, Any]


def extract(data: dict[str, Any]) -> list[ExtractedCandidate]:
    """Candidates from the turns of an `extract` prompt's data, in turn order, without repeats."""
    vocabulary = data.get("vocabulary") or {}
    structures = _structures_by_turn(data)
    found: list[ExtractedCandidate] = []
    for turn in data.get("turns", []):
        index, content = int(turn["index"]), str(turn["content"])
        context = _Context(index, vocabulary)
        if turn.get("role") == USER:
            found += _from_user_turn(content, structures.get(index), context)
        elif turn.get("role") == ASSISTANT:
            found += _from_assistant_turn(content, context)
    return _unique(found)


def _structures_by_turn(data: dict[str, Any]) -> dict[int, list[Structure]]:
    """The prompt's detected structures; detected here when the prompt lists none."""
    if "structures" not in data:
        return {
            int(t["index"]): detect_structures(str(t["content"])) for t in data.get("turns", [])
        }
    found: dict[int, list[Structure]] = {}
    for item in data["structures"]:
        structure = Structure(kind=StructureKind(item["kind"]), text=item["text"])
        found.setdefault(int(item["turnIndex"]), []).append(structure)
    return found


def _unique(candidates: list[ExtractedCandidate]) -> list[ExtractedCandidate]:
    seen: set[tuple[CandidateKind, str]] = set()
    kept = []
    for candidate in candidates:
        if (candidate.kind, candidate.text) not in seen:
            seen.add((candidate.kind, candidate.text))
            kept.append(candidate)
    return kept


# Structures: a table or code block, kept verbatim under its lead-in line.


def _from_user_turn(
    content: str, structures: list[Structure] | None, context: _Context
) -> list[ExtractedCandidate]:
    found: list[ExtractedCandidate] = []
    prose = content
    for structure in structures or []:
        if structure.text.strip() and structure.text in content:
            lead_in = _lead_in(content, structure.text)
            found.append(_structure_fact(structure, lead_in, context))
            prose = prose.replace(structure.text, "\n")
            if lead_in:
                prose = prose.replace(lead_in, "\n", 1)
    for clause in _clauses(prose):
        found += _user_clause(clause, context)
    return found


def _lead_in(content: str, text: str) -> str:
    """The last non-blank line before the structure, unless it is structure itself."""
    before = content[: content.index(text)].rstrip().split("\n")
    line = before[-1].strip() if before else ""
    if not line or line.startswith(("|", "```", "~~~")):
        return ""
    return line


def _structure_fact(structure: Structure, lead_in: str, context: _Context) -> ExtractedCandidate:
    if lead_in:
        heading = _third_person(lead_in, _USER_WORDS)
    else:
        heading = f"The user shared a {structure.kind.value}:"
    return ExtractedCandidate(
        kind=CandidateKind.FACT,
        text=f"{_capitalized(heading)}\n\n{structure.text}",
        memory_type="fact",
        turns=[context.turn_index],
        quote=structure.text,
    )


# Sentences and clauses: verbatim slices of the turn.


def _clauses(content: str) -> Iterator[str]:
    """Statement clauses of the content (questions and offers left out), verbatim."""
    for sentence in _SENTENCE_BREAK.split(content):
        sentence = sentence.strip()
        if not sentence or sentence.endswith("?") or _OFFER.match(sentence):
            continue
        for clause in _CLAUSE_BREAK.split(sentence):
            clause = clause.strip().rstrip(_TRAILING)
            if clause:
                yield clause


# The user's first-person statements.


def _user_clause(clause: str, context: _Context) -> list[ExtractedCandidate]:
    for rule in _USER_RULES:
        found = rule(clause, context)
        if found is not None:
            return found
    return []


def _relation_rule(clause: str, context: _Context) -> list[ExtractedCandidate] | None:
    for relation in _RELATIONS:
        match = re.match(
            rf"{_FILLER}I\s+{_ADVERB}{relation.pattern}\s+(?P<object>.+)$", clause, re.IGNORECASE
        )
        if match and not _is_bare(match["object"]):
            obj = _object(match["object"], _USER_WORDS)
            fact = _fact(f"The user {relation.verb} {obj}.", "fact", clause, context)
            return [fact, *_relationship(relation, obj, clause, context)]
    return None


def _preference_rule(clause: str, context: _Context) -> list[ExtractedCandidate] | None:
    for verb, third in _PREFERENCES:
        match = re.match(rf"{_FILLER}I\s+{_ADVERB}{verb}\s+(?P<object>.+)$", clause, re.IGNORECASE)
        if match and not _is_bare(match["object"]):
            obj = _object(match["object"], _USER_WORDS)
            return [_fact(f"The user {third} {obj}.", "preference", clause, context)]
    return None


def _attribute_rule(clause: str, context: _Context) -> list[ExtractedCandidate] | None:
    match = re.match(
        rf"{_FILLER}my\s+(?P<attribute>\w+(?:[ '-]\w+){{0,3}}?)\s+is\s+(?P<object>.+)$",
        clause,
        re.IGNORECASE,
    )
    if not match or _is_bare(match["object"]):
        return None
    obj = _object(match["object"], _USER_WORDS)
    text = f"The user's {match['attribute']} is {obj}."
    return [_fact(text, "fact", clause, context)]


def _identity_rule(clause: str, context: _Context) -> list[ExtractedCandidate] | None:
    match = re.match(
        rf"{_FILLER}(?:I\s+am|I'm|I\u2019m)\s+(?P<article>an?)\s+(?P<object>.+)$",
        clause,
        re.IGNORECASE,
    )
    if not match:
        return None
    obj = _object(match["object"], _USER_WORDS)
    return [_fact(f"The user is {match['article'].lower()} {obj}.", "identity", clause, context)]


_USER_RULES: tuple[Callable[[str, _Context], list[ExtractedCandidate] | None], ...] = (
    _relation_rule,
    _preference_rule,
    _attribute_rule,
    _identity_rule,
)


def _relationship(
    relation: _Relation, obj: str, quote: str, context: _Context
) -> list[ExtractedCandidate]:
    name = _ENTITY_END.split(obj, maxsplit=1)[0].strip()
    if not name or _is_bare(name):
        return []
    relation_name = _declared_relation(relation, context.vocabulary)
    subject = EntityRef(name=THE_USER, entity_class=_declared_class(_PERSON_CLASSES, context))
    target = EntityRef(name=name, entity_class=_declared_class(relation.object_classes, context))
    return [
        ExtractedCandidate(
            kind=CandidateKind.RELATIONSHIP,
            text=f"{THE_USER} {relation_name} {name}",
            memory_type="relationship",
            turns=[context.turn_index],
            quote=quote,
            subject=subject,
            relation=relation_name,
            object=target,
        )
    ]


# The assistant's recommendations.

_RECOMMENDATIONS = (
    re.compile(
        r"\bI(?:'d|\s+would)?\s+(?:strongly\s+|highly\s+)?(?P<verb>recommend|suggest)\s+"
        r"(?P<object>.+)$",
        re.IGNORECASE,
    ),
    re.compile(r"\byou\s+(?:should|could|might)\s+try\s+(?P<object>.+)$", re.IGNORECASE),
    re.compile(rf"^{_FILLER}try\s+(?P<object>.+)$", re.IGNORECASE),
)
_PAST = {"recommend": "recommended", "suggest": "suggested"}


def _from_assistant_turn(content: str, context: _Context) -> list[ExtractedCandidate]:
    found = []
    for clause in _clauses(content):
        candidate = _recommendation(clause, context)
        if candidate is not None:
            found.append(candidate)
    return found


def _recommendation(clause: str, context: _Context) -> ExtractedCandidate | None:
    for pattern in _RECOMMENDATIONS:
        match = pattern.search(clause)
        if match and not _is_bare(match["object"]):
            verb = _PAST[match["verb"].lower()] if "verb" in match.groupdict() else "recommended"
            obj = _object(match["object"], _ASSISTANT_WORDS)
            return _fact(f"The assistant {verb} {obj}.", "fact", clause, context)
    return None


# Wording.


def _fact(text: str, memory_type: str, quote: str, context: _Context) -> ExtractedCandidate:
    return ExtractedCandidate(
        kind=CandidateKind.FACT,
        text=text,
        memory_type=memory_type,
        turns=[context.turn_index],
        quote=quote,
    )


def _third_person(text: str, words: tuple[tuple[str, str], ...]) -> str:
    """First person (the user's words) or second person (the assistant's) made third."""
    for pattern, replacement in words:
        text = re.sub(pattern, replacement, text, flags=re.IGNORECASE)
    return text


def _object(text: str, words: tuple[tuple[str, str], ...]) -> str:
    """What a statement is about, in the third person, without its closing punctuation."""
    return _third_person(text, words).strip().rstrip(_TRAILING)


def _capitalized(text: str) -> str:
    return text[:1].upper() + text[1:]


def _is_bare(obj: str) -> bool:
    words = obj.strip().rstrip(_TRAILING).lower().split()
    return not words or (len(words) == 1 and words[0] in _BARE_PRONOUNS)


def _declared_class(names: tuple[str, ...], context: _Context) -> str | None:
    """The first declared entity class whose name is one of `names` (any case), else none."""
    declared = [str(c.get("name", "")) for c in context.vocabulary.get("entityClasses", [])]
    for wanted in names:
        for name in declared:
            if name.casefold() == wanted:
                return name
    return None


def _declared_relation(relation: _Relation, vocabulary: dict[str, Any]) -> str:
    """A declared relation type meaning the same (LIVES_IN for lives_in), else the default."""
    declared = [str(r.get("name", "")) for r in vocabulary.get("relationTypes", [])]
    for alias in relation.aliases:
        for name in declared:
            if _squashed(name) == _squashed(alias):
                return name
    return relation.relation


def _squashed(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", name.casefold())
