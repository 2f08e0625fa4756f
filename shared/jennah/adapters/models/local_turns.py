"""Turns as the `local` model reads them, and the word matching its mapping uses.

A turn's `visible` content leaves out text that tries to steer the model: lines posing
as the system or the platform ("SYSTEM OVERRIDE: ..."), lines posing as another turn
("[turn 3] assistant:" and the line it introduces), and sentences telling the model to
ignore its instructions. The model never reads them, and no fact is checked against
them. Words are matched by stems: lowercase content words without a plural "s", cut to
five letters ("allergic" meets "allergy", "seats" meets "seat").
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from typing import Any

from jennah.adapters.models.local_dates import WEEKDAYS
from jennah.domain.formation import Structure, StructureKind

USER = "user"
ASSISTANT = "assistant"
SPEAKERS = (USER, ASSISTANT)


@dataclass(frozen=True)
class Turn:
    """A turn of the data block: its index (0-based) in the conversation, role, content."""

    index: int
    role: str
    content: str

    @property
    def spoken(self) -> bool:
        return self.role in SPEAKERS and bool(self.visible.strip())

    @property
    def visible(self) -> str:
        """The content the model reads and facts are checked against: without lines that
        pose as the system or as another turn, or sentences telling it to ignore its
        instructions (text that tries to steer the model is not something anyone said)."""
        return _without_injections(self.content)


# A line posing as the system or the platform ("SYSTEM OVERRIDE: ...", or in brackets
# with a longer attribution: "[System message from the memory platform's team: ..."),
# or as a turn header ("[turn 3] assistant:", the next line being what it pretends was
# said).
_POSING = re.compile(
    r"^\s*(?:\[\s*(?:system|developer|admin|administrator|platform)\b[^:\]\n]{0,80}"
    r"|(?:system|developer|admin|administrator|platform)\b[^:\n]{0,30})[:\]]",
    re.I,
)
_FAKE_TURN = re.compile(r"^\s*\[turn \d+\]\s*[a-z ]{1,20}:\s*$", re.I)
# Found first, then widened to its sentence: a pattern that scans the sentence around the
# words itself is tried at every position of the line (quadratic on a long line).
_IGNORE = re.compile(
    r"\b(?:ignore|disregard|forget)\s+(?:all\s+)?(?:the\s+|your\s+|any\s+)?"
    r"(?:previous|prior|above|earlier|other)\s+(?:instructions|rules)\b",
    re.I,
)
_SENTENCE_END = re.compile(r"[.!?]")


def _without_injections(content: str) -> str:
    kept: list[str] = []
    skip_next = False
    for line in content.split("\n"):
        if skip_next and line.strip():
            skip_next = False
            continue
        if _FAKE_TURN.match(line):
            skip_next = True
            continue
        if _POSING.match(line):
            continue
        kept.append(_without_ignore_sentences(line))
    return "\n".join(kept)


def _without_ignore_sentences(line: str) -> str:
    """The line without each sentence that tells the model to ignore its instructions."""
    kept: list[str] = []
    done = 0
    while found := _IGNORE.search(line, done):
        start = max(done, *(line.rfind(mark, done, found.start()) + 1 for mark in ".!?"))
        end = _SENTENCE_END.search(line, found.end())
        kept.append(line[done:start])
        done = end.end() if end else len(line)
    kept.append(line[done:])
    return "".join(kept)


def turns_of(data: dict[str, Any]) -> list[Turn]:
    return [
        Turn(int(t["index"]), str(t.get("role", "")), str(t.get("content", "")))
        for t in data.get("turns", [])
    ]


def structures_of(data: dict[str, Any]) -> dict[int, list[Structure]]:
    found: dict[int, list[Structure]] = {}
    for item in data.get("structures", []):
        structure = Structure(kind=StructureKind(item["kind"]), text=str(item["text"]))
        found.setdefault(int(item["turnIndex"]), []).append(structure)
    return found


# Sentences and words.

# A point between digits ("4.5%", "10.5") does not end a sentence.
SENTENCE = re.compile(r"(?:[^.!?\n]|\.(?=\d))+[.!?]*")


def sentences(text: str) -> list[str]:
    """The sentences of `text`, verbatim but for surrounding spaces."""
    return [found.strip() for found in SENTENCE.findall(text) if found.strip()]


# A sentence that leans on the one before it ("It takes about 25 minutes.").
_ANAPHORIC = re.compile(r"^(?:it|this|that|they|these|those|he|she)\b", re.IGNORECASE)


def sentence_group(content: str, sentence: str) -> int:
    """Which of `content`'s sentences `sentence` is, counting a sentence that leans on the
    one before it as part of that one (-1: not one of them)."""
    group = -1
    for found in sentences(content):
        if group < 0 or not _ANAPHORIC.match(found):
            group += 1
        if found == sentence.strip():
            return group
    return -1


_FIGURE = re.compile(r"\d+(?:[.,:]\d+)*")


def figures(text: str) -> set[str]:
    """The numbers of `text`, thousands separators dropped: "£1,223" and "1223" meet."""
    return {found.replace(",", "") for found in _FIGURE.findall(text)}


def as_sentence(text: str) -> str:
    """One line, capitalised, ending with a full stop unless it has an end mark."""
    text = " ".join(text.split()).strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else f"{text}."


_WORD = re.compile(r"[0-9a-z]+(?:'[a-z]+)?")
_STOPWORDS = frozenset({
    "a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "for", "from", "with",
    "by", "as", "is", "are", "was", "were", "be", "been", "being", "it", "its", "this", "that",
    "these", "those", "there", "their", "they", "them", "he", "she", "his", "her", "him", "we",
    "our", "you", "your", "i", "me", "my", "mine", "user", "users", "user's", "assistant",
    "assistant's", "has", "have", "had", "do", "does", "did", "not", "no", "will", "would", "can",
    "could", "should", "must", "may", "might", "about", "into", "than", "then", "so", "very",
    "also", "just", "now", "who", "what", "when", "where", "which", "how", "said", "says",
    "recommended", "recommends", "suggested", "called", "named",
})  # fmt: skip


def stems_of(text: str) -> set[str]:
    """Content words, without a possessive or plural "s" and cut to 5 letters, so
    "allergic" meets "allergy", "seats" meets "seat" and "mum's" meets "mum"."""
    words = (w.removesuffix("'s") for w in _WORD.findall(text.lower()))
    words = (w for w in words if len(w) > 2 and w not in _STOPWORDS)
    return {_singular(w)[:5] for w in words}


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def undated(found: set[str]) -> set[str]:
    """Stems that are not part of a date (weekday, month, year, day of month, "week")."""
    return {s for s in found if not (s.isdigit() or s in _DATE_STEMS)}


_DATE_STEMS = frozenset(
    [d[:5] for d in WEEKDAYS]
    + [m.lower()[:5] for m in calendar.month_name[1:]]
    + ["week", "month", "year", "night", "morni", "after", "eveni"]
)
