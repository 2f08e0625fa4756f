"""Facts the `local` model's extraction makes in code, verbatim from the turns.

What a 1.5B model summarises into nothing or rewrites loosely is better copied:
- a table or code block of a user or assistant turn, under its lead-in line, unless
  it is a traceback or a log (`preservesStructure` then holds);
- a list of three items or more in an assistant's turn (a plan, an itinerary);
- a user's standing instruction ("Please always reply in Spanish from now on", "Never
  ..."), as the user's directive: "The user wants the assistant to always reply ...".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from jennah.adapters.models.local_dates import resolve
from jennah.adapters.models.local_turns import (
    ASSISTANT,
    SENTENCE,
    SPEAKERS,
    USER,
    Turn,
    as_sentence,
)
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
    for turn in turns:
        if turn.role != USER:
            continue
        for sentence in (s.strip() for s in SENTENCE.findall(turn.visible)):
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
