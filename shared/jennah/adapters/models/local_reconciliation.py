"""The `local` model's reconciliation: one short question per candidate/memory pair.

The formation's reconcile prompt is read for its data block: the candidates, the
existing memories, and which memories are each candidate's neighbours (the similar
ones the service retrieved). A small model judges one pair at a time far better than
a list, so each pair (at most MAX_PAIRS per candidate, nearest first) gets its own
tiny generation on a cached prompt: two yes/no answers, `same_topic` (the same
attribute of the same person or thing) and `same_meaning` (nothing changed).
Mapped back to the port's answer per candidate: a pair with the same meaning ->
"known" (that memory); else a pair on the same topic -> "revised" (that memory);
else "new". Code decides what needs no judgment: a relationship candidate (the
local model extracts none) and a candidate without neighbours are "new".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from jennah.ports.prompts import ReconcileChoice

NEW = "new"
KNOWN = "known"
REVISED = "revised"
MAX_PAIRS = 3  # per candidate
ANSWER_TOKENS = 16  # {"same_topic": false, "same_meaning": false} and the end

SYSTEM = "\n".join(
    [
        "You compare a NEW memory with an OLD memory about the same user and answer two "
        "yes/no questions.",
        "same_topic: are NEW and OLD about the same attribute of the same person or thing "
        "(both about the user's job, or both about where the user lives, or both about "
        "the same appointment)? Two different people, two different events or two "
        "different attributes are not the same topic.",
        "same_meaning: does NEW say the same thing as OLD, so nothing changed?",
    ]
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"same_topic": {"type": "boolean"}, "same_meaning": {"type": "boolean"}},
    "required": ["same_topic", "same_meaning"],
    "additionalProperties": False,
}

SHOTS: tuple[tuple[str, str], ...] = (
    (
        "OLD: The user lives in Bristol.\nNEW: The user has moved to Cardiff.",
        '{"same_topic": true, "same_meaning": false}',
    ),
    (
        "OLD: The user likes jazz.\nNEW: The user's favourite music is jazz.",
        '{"same_topic": true, "same_meaning": true}',
    ),
    (
        "OLD: The user lives in Bristol.\nNEW: The user likes jazz.",
        '{"same_topic": false, "same_meaning": false}',
    ),
    (
        "OLD: The user's son is called Leo.\nNEW: The user's wife is called Ana.",
        '{"same_topic": false, "same_meaning": false}',
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
    memories = [existing[i] for i in ids if i in existing and not _is_relationship(existing[i])]
    for memory in memories[:MAX_PAIRS]:
        yield Pair(
            int(candidate["candidateIndex"]),
            str(memory["id"]),
            str(memory.get("text", "")),
            str(candidate.get("text", "")),
        )


def _is_relationship(item: dict[str, Any]) -> bool:
    kind = str(item.get("kind", "")).lower()
    return "relation" in kind or "edge" in kind


def verdict(answer: dict[str, Any]) -> str:
    """One pair's answer as a decision about the pair."""
    if not answer.get("same_topic"):
        return NEW
    return KNOWN if answer.get("same_meaning") else REVISED


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
