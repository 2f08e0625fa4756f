"""The `rules` model's reconciliation: decisions by normalized tokens.

A text is normalized to its lowercase word tokens (underscores split words, so
the relation `lives_in` reads as "lives in"; the articles a/an/the dropped). A
candidate is compared only with existing memories of its own kind:

- the same tokens as an existing memory -> "known" (that memory);
- the same subject and the same single-valued verb (lives in = resides in =
  moved to, works at = works for, and "X's <attribute> is") as an existing
  memory of the same memory type, with a different object -> "revised";
- anything else -> "new".

Multi-valued verbs (likes, loves, prefers, hates, is a ...) never revise: a
second preference is another memory, not a replacement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from jennah.ports.prompts import ReconcileChoice

NEW = "new"
KNOWN = "known"
REVISED = "revised"

_WORD = re.compile(r"[0-9a-z]+")
_ARTICLES = frozenset({"a", "an", "the"})
_VERBS = frozenset(
    {"lives", "resides", "works", "moved", "is", "prefers", "likes", "loves", "hates"}
)
_PREPOSITIONS = frozenset({"in", "at", "for", "to"})
# verb phrases that mean the same for revision
_SAME_AS = {
    ("moved", "to"): ("lives", "in"),
    ("resides", "in"): ("lives", "in"),
    ("works", "for"): ("works", "at"),
}
_SINGLE_VALUED = frozenset({("lives", "in"), ("works", "at")})


@dataclass(frozen=True)
class _Statement:
    """subject - verb phrase - object, as normalized tokens."""

    subject: tuple[str, ...]
    verb: tuple[str, str]
    object: tuple[str, ...]

    @property
    def single_valued(self) -> bool:
        # "the user's city is X" names one attribute; "the user is a nurse" does not
        return self.verb in _SINGLE_VALUED or (self.verb == ("is", "") and len(self.subject) > 1)


def reconcile(data: dict[str, Any]) -> list[ReconcileChoice]:
    """One decision per candidate of a `reconcile` prompt's data."""
    existing = list(data.get("existing", []))
    return [_decide(candidate, existing) for candidate in data.get("candidates", [])]


def _decide(candidate: dict[str, Any], existing: list[dict[str, Any]]) -> ReconcileChoice:
    index = int(candidate["candidateIndex"])
    same_kind = [e for e in existing if _kind(e) == _kind(candidate)]
    tokens = normalized(str(candidate.get("text", "")))
    for memory in same_kind:
        if normalized(str(memory.get("text", ""))) == tokens:
            return ReconcileChoice(candidate_index=index, decision=KNOWN, matched_id=memory["id"])
    for memory in same_kind:
        if _same_type(candidate, memory) and _replaces(candidate, memory):
            return ReconcileChoice(candidate_index=index, decision=REVISED, matched_id=memory["id"])
    return ReconcileChoice(candidate_index=index, decision=NEW)


def normalized(text: str) -> tuple[str, ...]:
    """Lowercase word tokens, underscores splitting words, articles dropped."""
    words = _WORD.findall(text.lower().replace("_", " "))
    return tuple(w for w in words if w not in _ARTICLES)


def statement(text: str) -> _Statement | None:
    """The text split at its first known verb, or None when it has none."""
    tokens = normalized(text)
    for i, token in enumerate(tokens):
        if token in _VERBS and i > 0:
            after = tokens[i + 1 :]
            preposition = after[0] if after and after[0] in _PREPOSITIONS else ""
            verb = _SAME_AS.get((token, preposition), (token, preposition))
            rest = after[1:] if preposition else after
            return _Statement(subject=tokens[:i], verb=verb, object=rest)
    return None


def _replaces(candidate: dict[str, Any], memory: dict[str, Any]) -> bool:
    new = statement(str(candidate.get("text", "")))
    old = statement(str(memory.get("text", "")))
    if new is None or old is None or not new.object or not old.object:
        return False
    return (
        new.subject == old.subject
        and new.verb == old.verb
        and new.single_valued
        and new.object != old.object
    )


def _kind(item: dict[str, Any]) -> str:
    """'relationship' or 'fact', whichever spelling the prompt used (enum name, edge, chunk)."""
    kind = str(item.get("kind", "")).lower()
    return "relationship" if ("relation" in kind or "edge" in kind) else "fact"


def _same_type(candidate: dict[str, Any], memory: dict[str, Any]) -> bool:
    """Only a memory of the candidate's own type can be revised (an unnamed type matches)."""
    new, old = _memory_type(candidate), _memory_type(memory)
    return not new or not old or new == old


def _memory_type(item: dict[str, Any]) -> str:
    return str(item.get("memoryType") or "").lower().removeprefix("memory_type_")
