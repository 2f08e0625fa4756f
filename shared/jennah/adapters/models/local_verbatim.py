"""Facts the `local` model's extraction makes in code, verbatim from the turns.

What a 1.5B model summarises into nothing or rewrites loosely is better copied:
- a table or code block of a user or assistant turn, under its lead-in line, unless
  it is a traceback or a log (`preservesStructure` then holds);
- a list of three items or more in an assistant's turn (a plan, an itinerary);
- a user's standing instruction ("Please always reply in Spanish from now on", "Never
  ..."), as the user's directive: "The user wants the assistant to always reply ...";
- a hard constraint the user states, often in passing or inside a request ("Bear in
  mind my son Ben is lactose intolerant", "... because of my shellfish allergy", "we
  keep kosher at home"): the clause naming an allergy, an intolerance, coeliac disease,
  a religious or other diet or an accessibility need, in the third person ("The user's
  son Ben is lactose intolerant", "The user has a shellfish allergy"). The brief must
  carry every hard constraint (design §13), and a small model skips what is not the
  point of its turn.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import datetime

from jennah.adapters.models.local_dates import resolve
from jennah.adapters.models.local_turns import (
    ASSISTANT,
    SENTENCE,
    SPEAKERS,
    USER,
    Turn,
    as_sentence,
    stems_of,
)
from jennah.domain.claims import SAFETY_CONDITION_WORDS
from jennah.domain.formation import CandidateKind, ExtractedCandidate, Structure, StructureKind

_TRACE = re.compile(
    r"traceback \(most recent call last\)|^\s*(?:error|exception|warning)\b"
    r"|\w+(?:error|exception):",
    re.IGNORECASE | re.MULTILINE,
)


def structure_candidates(
    turns: Sequence[Turn], structures: dict[int, list[Structure]]
) -> list[ExtractedCandidate]:
    """A fact per table or code block of a user or assistant turn (not a trace or a log):
    its lead-in line, then the structure verbatim."""
    found: list[ExtractedCandidate] = []
    for turn in turns:
        if turn.role not in SPEAKERS:
            continue
        for structure in structures.get(turn.index, []):
            if not structure.text.strip() or structure.text not in turn.content:
                continue
            if structure.kind is StructureKind.CODE and _TRACE.search(structure.text):
                continue
            found.append(_structure_fact(turn, structure))
    return found


_LIST_ITEM = re.compile(r"^\s*(?:[-*\u2022]|\d{1,2}[.)])\s+\S")


def list_candidates(turns: Sequence[Turn]) -> list[ExtractedCandidate]:
    """A fact per list of three items or more in an assistant's turn (a plan, an
    itinerary, options): its lead-in line, then the list verbatim. The assistant made
    it for the user; a small model summarises it into nothing."""
    found: list[ExtractedCandidate] = []
    for turn in turns:
        if turn.role != ASSISTANT:
            continue
        lines = turn.visible.split("\n")
        items = [i for i, line in enumerate(lines) if _LIST_ITEM.match(line)]
        if len(items) < 3:
            continue
        block = "\n".join(lines[items[0] : items[-1] + 1])
        lead_in = next((ln.strip() for ln in reversed(lines[: items[0]]) if ln.strip()), "")
        heading = "The assistant gave the user this list" + (f": {lead_in}" if lead_in else ":")
        found.append(
            ExtractedCandidate(
                kind=CandidateKind.FACT,
                text=f"{heading}\n{block}",
                memory_type="fact",
                turns=[turn.index],
                quote=block,
            )
        )
    return found


# Standing instructions, when the model missed them.

_INSTRUCTION = re.compile(
    r"^(?:(?:and|also|oh|so)[ ,]+)?(?:please\s+)?"
    r"(?P<neg>never|don't ever|do not ever|don't|do not)?\s*(?P<rest>(?:always\s+)?\w.*?)"
    r"(?:,\s*(?:i|i'm|i've|because|as|since|so)\b.*)?[.!]*$",
    re.IGNORECASE,
)
_SECOND_PERSON = (
    (r"\bme\b", "the user"),
    (r"\bmy\b", "the user's"),
    (r"\bmyself\b", "the user"),
    (r"\bI\b", "the user"),
    (r"\bI'm\b", "the user is"),
)


def instruction_candidates(turns: Sequence[Turn], clock: datetime) -> list[ExtractedCandidate]:
    """A user's sentence that tells the assistant how to behave from now on ("Please
    always reply in Spanish from now on", "Never book meetings before 10am"), as a
    directive: "The user wants the assistant to always reply in Spanish from now on"."""
    found: list[ExtractedCandidate] = []
    for turn, sentence in _user_sentences(turns):
        text = _instruction(sentence)
        if text is not None:
            found.append(
                ExtractedCandidate(
                    kind=CandidateKind.FACT,
                    text=resolve(text, clock),
                    memory_type="directive",
                    turns=[turn.index],
                    quote=sentence,
                )
            )
    return found


def _user_sentences(turns: Sequence[Turn]) -> Iterator[tuple[Turn, str]]:
    """Every sentence of the user's turns, stripped, with its turn."""
    for turn in turns:
        if turn.role == USER:
            for sentence in SENTENCE.findall(turn.visible):
                yield turn, sentence.strip()


_INSTRUCTION_START = re.compile(
    r"^(?:(?:and|also|oh|so)[ ,]+)?(?:please\s+)?(?:always|never|don't|do not)\b"
    r"|.*\bfrom now on\b",
    re.IGNORECASE,
)
_FROM_NOW_ON = re.compile(r"^from now on[, ]*", re.IGNORECASE)


def _instruction(sentence: str) -> str | None:
    if sentence.endswith("?") or not _INSTRUCTION_START.match(sentence):
        return None
    match = _INSTRUCTION.match(sentence)
    if match is None or re.match(r"(?:i|i'm|i've|my|we)\b", match["rest"], re.IGNORECASE):
        return None
    rest = match["rest"]
    if _FROM_NOW_ON.match(rest):
        rest = _FROM_NOW_ON.sub("", rest) + " from now on"
    for pattern, replacement in _SECOND_PERSON:
        rest = re.sub(pattern, replacement, rest, flags=re.IGNORECASE)
    negation = (match["neg"] or "").lower()
    if negation.startswith("never"):
        rest = f"never {rest}"
    to = "not to" if negation and not negation.startswith("never") else "to"
    return as_sentence(f"The user wants the assistant {to} {rest[0].lower()}{rest[1:]}")


def _structure_fact(turn: Turn, structure: Structure) -> ExtractedCandidate:
    who = "The user" if turn.role == USER else "The assistant"
    lead_in = _lead_in(turn.content, structure.text)
    heading = f"{who} shared this {structure.kind.value}" + (f": {lead_in}" if lead_in else ":")
    return ExtractedCandidate(
        kind=CandidateKind.FACT,
        text=f"{heading}\n\n{structure.text}",
        memory_type="fact",
        turns=[turn.index],
        quote=structure.text,
    )


def _lead_in(content: str, text: str) -> str:
    """The last non-blank line before the structure, unless it is structure itself."""
    before = content[: content.index(text)].rstrip().split("\n")
    line = before[-1].strip() if before else ""
    return "" if line.startswith(("|", "```", "~~~")) else line


# A hard constraint's words: an allergy, an intolerance, coeliac disease, a diet, an
# accessibility need.
_SAFETY = re.compile(
    rf"\b(?:{SAFETY_CONDITION_WORDS}|"
    r"halal|kosher|vegan|vegetarian|pescatarian|gluten[- ]free|dairy[- ]free|nut[- ]free|"
    r"wheelchair|step[- ]free)\b",
    re.IGNORECASE,
)
_CLAUSE_BREAK = re.compile(r"[,;:\u2013\u2014]|\b(?:and|but|so)\b", re.IGNORECASE)
# Words that may lead a clause before its subject: "Bear in mind my son ...".
_LEAD = re.compile(
    r"^(?:(?:yes|oh|also|and|so|but|well|just|note|remember|bear in mind|heads up|fyi|"
    r"for the record|by the way|btw|that)\b[\s,]*)*",
    re.IGNORECASE,
)
# "my shellfish allergy", "my severe nut intolerance": said as the reason for something.
_MY_ALLERGY = re.compile(
    r"\bmy ((?:[\w-]+ ){0,2}?)(allergy|allergies|intolerance)\b", re.IGNORECASE
)
# Where the clause's own subject starts: the user, the household, or someone of theirs.
_SUBJECT = re.compile(r"\b(?:I'm|I am|I've|I have|I|my|we|we're|we are|our)\b", re.IGNORECASE)
_THIRD_PERSON = (
    (r"\b(?:I'm|I am)\b", "the user is"),
    (r"\b(?:I've|I have)\b", "the user has"),
    (r"\bI\b", "the user"),
    (r"\bmy\b", "the user's"),
    (r"\bme\b", "the user"),
    (r"\b(?:we're|we are)\b", "the user and their family are"),
    (r"\bwe\b", "the user and their family"),
    (r"\bour\b", "the family's"),
)


def constraint_candidates(turns: Sequence[Turn], clock: datetime) -> list[ExtractedCandidate]:
    """A user's clause stating a hard constraint (see the module doc), in the third
    person; the clause, as the user wrote it, is its quote."""
    found: list[ExtractedCandidate] = []
    for turn, sentence in _user_sentences(turns):
        if sentence.endswith("?"):
            continue
        for clause in (c.strip() for c in _CLAUSE_BREAK.split(sentence) if c.strip()):
            text = _constraint(clause)
            if text is not None:
                found.append(
                    ExtractedCandidate(
                        kind=CandidateKind.FACT,
                        text=resolve(text, clock),
                        memory_type="fact",
                        turns=[turn.index],
                        quote=clause,
                    )
                )
    return found


def _constraint(clause: str) -> str | None:
    if _SAFETY.search(clause) is None:
        return None
    mine = _MY_ALLERGY.search(clause)
    if mine is not None:
        return as_sentence(f"The user has a {mine[1]}{mine[2].lower()}")
    lead = _LEAD.match(clause)
    rest = clause[lead.end() if lead else 0 :]
    if _SUBJECT.match(rest) is None:
        return None
    first = re.match(
        r"I\s+(?P<adverb>(?:only|also|never|always|still|now|just|usually)\s+)?"
        r"(?P<verb>[a-z']+)\b",
        rest,
    )
    if first is not None:  # "I only eat halal": "The user only eats halal"
        verb = _third_person_verb(first["verb"])
        rest = f"the user {first['adverb'] or ''}{verb}{rest[first.end() :]}"
    for pattern, replacement in _THIRD_PERSON:
        rest = re.sub(pattern, replacement, rest, flags=re.IGNORECASE)
    return as_sentence(rest[0].upper() + rest[1:])


_MODALS = frozenset({"can", "can't", "cannot", "will", "won't", "would", "should", "must",
                     "may", "might", "could", "am", "was", "had", "did", "didn't"})  # fmt: skip
_IRREGULAR = {"have": "has", "do": "does", "don't": "doesn't", "am": "is", "go": "goes"}


def _third_person_verb(verb: str) -> str:
    """A verb after "I" as it is after "the user": "eat" eats, "carry" carries."""
    lower = verb.lower()
    if lower in _MODALS:
        return verb
    if lower in _IRREGULAR:
        return _IRREGULAR[lower]
    if re.search(r"[^aeiou]y$", lower):
        return verb[:-1] + "ies"
    if re.search(r"(?:s|sh|ch|x|o)$", lower):
        return verb + "es"
    return verb + "s"


# Constraint words that need an object to say which constraint ("allergic to ...").
_NEEDS_OBJECT = stems_of("allergic allergy allergies intolerant intolerance")


def says_the_same(found: set[str], constraint: ExtractedCandidate) -> bool:
    """A fact already kept states the constraint: it shares half its words, or a diet or
    need it names ("vegetarian", "halal", "wheelchair"), or its allergy or intolerance
    word and another ("allergic" and "shellfish")."""
    stems = stems_of(constraint.text)
    safety = stems_of(" ".join(m[0] for m in _SAFETY.finditer(constraint.text)))
    shared = safety & found
    return (
        len(stems & found) * 2 >= len(stems)
        or bool(shared - _NEEDS_OBJECT)
        or (bool(shared) and len(stems & found - safety) >= 1)
    )
