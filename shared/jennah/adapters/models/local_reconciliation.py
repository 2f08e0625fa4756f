"""The `local` model's reconciliation: one short question per candidate/memory pair.

The formation's reconcile prompt is read for its data block: the candidates, the
existing memories, and which memories are each candidate's neighbours (the similar
ones the service retrieved). A small model judges one pair at a time far better than
a list, so each pair (at most MAX_PAIRS per candidate, nearest first) gets its own
tiny generation on a cached prompt: two yes/no answers, `same_meaning` (NEW says
what OLD says) and `contradicts` (NEW makes OLD false or out of date). Measured on
16 labelled pairs (bench/README.md), this wording was right 14 times; "can both be
true?" 7 of its first 14, and "same topic?" missed 3 of its first 4 ("lives in Tokyo"
and "lives in Osaka" were not the same topic to it). Mapped back to the port's answer per
candidate: a pair with the same meaning -> "known" (that memory), unless NEW says
something changed that OLD does not ("no longer", a negation: then "revised"); else
a contradicted pair -> "revised" (that memory); else "new". Code decides what needs
no judgment: a relationship candidate (the local model extracts none) and a
candidate without neighbours, or whose neighbours are all of another memory type (it can
neither restate nor revise them), are "new".
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from jennah.ports.prompts import ReconcileChoice

NEW = "new"
KNOWN = "known"
REVISED = "revised"
MAX_PAIRS = 3  # per candidate
ANSWER_TOKENS = 16  # {"same_meaning": false, "contradicts": false} and the end

SYSTEM = "\n".join(
    [
        "You compare an OLD memory and a NEW memory about the same user and answer two "
        "yes/no questions.",
        "same_meaning: does NEW say the same thing as OLD, maybe in other words?",
        "contradicts: does NEW make OLD false or out of date, so OLD should be replaced by NEW?",
    ]
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"same_meaning": {"type": "boolean"}, "contradicts": {"type": "boolean"}},
    "required": ["same_meaning", "contradicts"],
    "additionalProperties": False,
}

_SAME = '{"same_meaning": true, "contradicts": false}'
_REPLACES = '{"same_meaning": false, "contradicts": true}'
_OTHER = '{"same_meaning": false, "contradicts": false}'
SHOTS: tuple[tuple[str, str], ...] = (
    ("OLD: The user lives in Bristol.\nNEW: The user has moved to Cardiff.", _REPLACES),
    ("OLD: The user likes jazz.\nNEW: The user's favourite music is jazz.", _SAME),
    ("OLD: The user lives in Bristol.\nNEW: The user likes jazz.", _OTHER),
    ("OLD: The user's son is called Leo.\nNEW: The user's wife is called Ana.", _OTHER),
    ("OLD: The user drives a Ford.\nNEW: The user sold the car and now cycles.", _REPLACES),
    (
        "OLD: The user works at Tesco as a cashier.\nNEW: The user is now a manager at Aldi.",
        _REPLACES,
    ),
    (
        "OLD: The user has a dentist appointment on 3 May.\n"
        "NEW: The user has a haircut booked on 5 May.",
        _OTHER,
    ),
)


@dataclass(frozen=True)
class Pair:
    candidate_index: int
    memory_id: str
    old: str
    new: str

    @property
    def question(self) -> str:
        return f"OLD: {_line(self.old)}\nNEW: {_line(self.new)}"


def _line(text: str) -> str:
    return " ".join(text.split())[:600]


def pairs(data: dict[str, Any]) -> list[Pair]:
    """The pairs to ask about, candidate by candidate, nearest memory first."""
    existing = {str(m["id"]): m for m in data.get("existing", []) if "id" in m}
    candidates = data.get("candidates", [])
    return [pair for candidate in candidates for pair in _pairs(candidate, existing)]


def _pairs(candidate: dict[str, Any], existing: dict[str, dict[str, Any]]) -> Iterator[Pair]:
    if _is_relationship(candidate):
        return
    named = candidate.get("neighbours")
    ids = [str(i) for i in named] if isinstance(named, list) else list(existing)
    memories = [
        existing[i]
        for i in ids
        if i in existing
        and not _is_relationship(existing[i])
        and _same_type(candidate, existing[i])
    ]
    for memory in memories[:MAX_PAIRS]:
        yield Pair(
            int(candidate["candidateIndex"]),
            str(memory["id"]),
            str(memory.get("text", "")),
            str(candidate.get("text", "")),
        )


def _same_type(candidate: dict[str, Any], memory: dict[str, Any]) -> bool:
    """Whether the memory is of the candidate's memory type (either unnamed: assumed so):
    a candidate can only restate or revise a memory of its own type (the formation
    rejects any other verdict), so another type's memory is not asked about."""
    mine, theirs = candidate.get("memoryType"), memory.get("memoryType")
    return not mine or not theirs or mine == theirs


def _is_relationship(item: dict[str, Any]) -> bool:
    kind = str(item.get("kind", "")).lower()
    return "relation" in kind or "edge" in kind


def verdict(answer: dict[str, Any], pair: Pair) -> str:
    """One pair's answer as a decision about the pair; "the same" is not believed when
    NEW says something changed that OLD does not (a negation, "no longer", "now" ...)."""
    if answer.get("same_meaning"):
        return REVISED if _changed(pair.old, pair.new) else KNOWN
    return REVISED if answer.get("contradicts") else NEW


_CHANGE = re.compile(
    r"\b(?:not|no longer|any ?more|stopped|quit|gave up|switched|moved|now|instead|"
    r"used to|never)\b|n't\b",
    re.IGNORECASE,
)


def _changed(old: str, new: str) -> bool:
    return bool(_CHANGE.search(new)) and not _CHANGE.search(old)


def decisions(data: dict[str, Any], verdicts: dict[Pair, str]) -> list[ReconcileChoice]:
    """One choice per candidate of the data: known over revised over new."""
    choices = []
    for candidate in data.get("candidates", []):
        index = int(candidate["candidateIndex"])
        mine = [(p, v) for p, v in verdicts.items() if p.candidate_index == index]
        choices.append(_choice(index, mine))
    return choices


def _choice(index: int, judged: list[tuple[Pair, str]]) -> ReconcileChoice:
    for wanted in (KNOWN, REVISED):
        for pair, decided in judged:
            if decided == wanted:
                return ReconcileChoice(
                    candidate_index=index, decision=wanted, matched_id=pair.memory_id
                )
    return ReconcileChoice(candidate_index=index, decision=NEW)
