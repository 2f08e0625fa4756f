"""The `local` model's extraction: its own small-model prompt, and the answer mapped back.

The formation's extract prompt is read for its data block only (turns, roles,
clock, structures). The 1.5B model gets a short prompt with worked examples and
writes, per fact, only the turn it comes from and a third-person sentence
(`{"facts": [{"turn": 2, "text": "The user ..."}]}`, grammar-constrained); code
does the rest, deterministically:

- tool calls and results are not shown to the model (tool output counts only where
  the assistant passed it on, and then the assistant's turn says it); tables and code
  blocks are shown as a placeholder and kept by code (below); lines posing as the
  system or as another turn, and sentences telling the model to ignore its
  instructions, are not shown, and no fact is checked against them;
- relative dates, copied as said, are written as absolute ones from the clock
  (`local_dates.resolve`);
- the cited turn is checked against the words of the fact: the user or assistant
  turn sharing most of them is cited (the model's own turn on a tie), a fact sharing
  none with any is dropped; the quote is the cited turn's sentence sharing most;
- a fact from an assistant turn says so ("The assistant said that ...") when the
  model did not; a fact quoting a user's question (unless it is an instruction), an
  assistant's restatement of what the user said (most of its words the user's, no
  figure of its own), a restatement of the conversation ("The user asked ...", "The
  assistant will ..."), a fact only saying a kept table was shared, chit-chat
  (thanks, greetings, offers of help) and repeats are dropped;
- a fact written as an instruction to the assistant ("Please always ...", "The
  assistant must ...") is the user's directive, worded "The user wants the assistant
  to ..."; so is what the model made of a question asking for standing behaviour
  ("... from now on?"); a user's errand ("Book me ...") is not a memory; a fact that
  leans on the conversation ("... there", "the lunchtime one") or says less than one
  before it (its date aside) is dropped. Any other fact is a fact (a small model's
  finer labels are not stable enough to keep: reconciliation refuses to revise across
  memory types);
- a user's standing instruction the model missed ("Please always reply in Spanish from
  now on", "Never ...") is added as a directive, from its sentence;
- a table or code block of a user or assistant turn is kept verbatim in a fact of
  its own under its lead-in line, unless it is a traceback or a log; so is a list of
  three items or more in an assistant's turn (a plan, an itinerary).
Long conversations are split into windows of whole turns, one generation each.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jennah.adapters.models.local_dates import WEEKDAYS, resolve
from jennah.domain.formation import CandidateKind, ExtractedCandidate, Structure, StructureKind

USER = "user"
ASSISTANT = "assistant"
SPEAKERS = (USER, ASSISTANT)
MAX_FACTS = 12  # per window
MAX_FACT_CHARS = 240
TURN_CHARS = 1500  # of one turn shown to the model
WINDOW_CHARS = 4000  # of turns shown in one generation
TOKENS_PER_FACT = 70  # an upper bound: turn, text of MAX_FACT_CHARS, JSON
RESTATED = 0.5  # of an assistant fact's words already said by the user: a restatement

SYSTEM = "\n".join(
    [
        "You extract memories from a conversation between a user and an AI assistant.",
        "A memory is something worth knowing in a later conversation: who the user is "
        "(name, job, home), health, diet and allergies, family, friends, colleagues and pets "
        "and facts about them, plans, appointments and events, likes and dislikes, money, "
        "home and belongings, and standing instructions for the assistant. What the "
        "assistant recommended, answered, booked or made for the user counts too.",
        "Rules:",
        "1. One memory per item: a sentence that says several things gives several items.",
        '2. Write "text" as a full sentence in the third person that makes sense on its '
        'own: "The user ...", "The user\'s daughter ...", "Aisha ...". An instruction for '
        'the assistant is written "The assistant must ...". What the assistant said or '
        'did is written "The assistant recommended ...", "The assistant booked ...".',
        '3. Copy time words exactly as said ("tomorrow", "next Tuesday", "last month"); '
        "never compute dates.",
        '4. "turn" is the number of the turn that says it.',
        "5. Skip greetings, thanks, small talk, the user's questions and requests, offers "
        "of help, and what the assistant only repeats from the user.",
        '6. If there is nothing to remember, answer {"facts": []}.',
    ]
)


def schema(turns: int, *, at_least_one: bool = False) -> dict[str, Any]:
    """The answer the model is constrained to (property order is generation order);
    `at_least_one` makes an empty answer impossible (see `substantive`)."""
    return {
        "type": "object",
        "properties": {
            "facts": {
                "type": "array",
                "minItems": 1 if at_least_one else 0,
                "maxItems": MAX_FACTS,
                "items": {
                    "type": "object",
                    "properties": {
                        "turn": {"type": "integer", "minimum": 1, "maximum": max(1, turns)},
                        "text": {"type": "string", "maxLength": MAX_FACT_CHARS},
                    },
                    "required": ["turn", "text"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["facts"],
        "additionalProperties": False,
    }


_ITEM = re.compile(r'\{\s*"turn"\s*:\s*(\d+)\s*,\s*"text"\s*:\s*"((?:[^"\\]|\\.)*)"\s*\}')


def without_repeats(answer: str) -> str | None:
    """The answer ended before its first repeated fact (a small model's greedy loop:
    the same fact again and again until the item bound), or None while none repeats."""
    seen: set[str] = set()
    end = 0
    for item in _ITEM.finditer(answer):
        text = " ".join(item[2].lower().split())
        if text in seen:
            return answer[:end] + "]}"
        seen.add(text)
        end = item.end()
    return None


_SHOTS: tuple[tuple[list[tuple[str, str]], str], ...] = (
    (
        [
            (USER, "Hey, I'm Tom. I teach maths at a school in Bristol and I can't have peanuts."),
            (USER, "My son Leo plays football on Saturday mornings from next week. "
                   "Never call me before 9am."),
            (ASSISTANT, "Good luck to Leo! The Harbourside Bakery opens at 7am if you need "
                        "breakfast before the match."),
            (USER, "Cool, cheers."),
        ],
        '{"facts": ['
        '{"turn": 1, "text": "The user\'s name is Tom."}, '
        '{"turn": 1, "text": "The user teaches maths at a school in Bristol."}, '
        '{"turn": 1, "text": "The user cannot have peanuts."}, '
        '{"turn": 2, "text": "The user has a son called Leo."}, '
        '{"turn": 2, "text": "The user\'s son Leo plays football on Saturday mornings from '
        'next week."}, '
        '{"turn": 2, "text": "The assistant must never call the user before 9am."}, '
        '{"turn": 3, "text": "The assistant recommended the Harbourside Bakery, which opens at '
        '7am, for breakfast before Leo\'s match."}]}',
    ),
    (
        [
            (USER, "Can you book a table for two near Angel on Friday at 8?"),
            ("tool", ""),
            (ASSISTANT, "Done: I've booked Trullo on Upper Street for two, Friday at 8pm."),
            (USER, "great. btw my manager Dan moved to the Berlin office last week, so Priti "
                   "runs our team now. And I've stopped drinking coffee, only tea for me."),
            (ASSISTANT, "Noted, tea it is from now on."),
        ],
        '{"facts": ['
        '{"turn": 3, "text": "The assistant booked a table for two at Trullo on Upper Street '
        'for Friday at 8pm."}, '
        '{"turn": 4, "text": "The user\'s manager Dan moved to the Berlin office last '
        'week."}, '
        '{"turn": 4, "text": "Priti runs the user\'s team now."}, '
        '{"turn": 4, "text": "The user no longer drinks coffee and only drinks tea."}]}',
    ),
    (
        [
            (USER, "hello there"),
            (ASSISTANT, "Hi! What can I do for you today?"),
            (USER, "just saying hi :)"),
        ],
        '{"facts": []}',
    ),
)  # fmt: skip


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


# A line posing as the system or the platform ("SYSTEM OVERRIDE: ..."), or as a turn
# header ("[turn 3] assistant:", the next line being what it pretends was said).
_POSING = re.compile(
    r"^\s*\[?\s*(?:system|developer|admin|administrator|platform)\b[^:\n]{0,30}[:\]]", re.I
)
_FAKE_TURN = re.compile(r"^\s*\[turn \d+\]\s*[a-z ]{1,20}:\s*$", re.I)
_IGNORE = re.compile(
    r"[^.!?\n]*\b(?:ignore|disregard|forget)\s+(?:all\s+)?(?:the\s+|your\s+|any\s+)?"
    r"(?:previous|prior|above|earlier|other)\s+(?:instructions|rules)\b[^.!?\n]*[.!?]?",
    re.I,
)


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
        kept.append(_IGNORE.sub("", line))
    return "\n".join(kept)


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


def shots() -> tuple[tuple[str, str], ...]:
    """The worked examples, as (user message, assistant answer) pairs."""
    return tuple(
        (render([Turn(i, role, text) for i, (role, text) in enumerate(turns)], {}), answer)
        for turns, answer in _SHOTS
    )


def render(turns: Sequence[Turn], structures: dict[int, list[Structure]]) -> str:
    """The turns as the model reads them: `[n] role: content`, n counted from 1."""
    return "\n".join(f"[{t.index + 1}] {_role(t)}: {_shown(t, structures)}" for t in turns)


def _role(turn: Turn) -> str:
    return turn.role if turn.role in SPEAKERS else "tool"


def _shown(turn: Turn, structures: dict[int, list[Structure]]) -> str:
    if turn.role not in SPEAKERS:
        return "(tool output, not shown)"
    content = turn.visible
    for structure in structures.get(turn.index, []):
        content = content.replace(structure.text, f"[{structure.kind.value}]")
    content = " ".join(content.split())
    return content if len(content) <= TURN_CHARS else content[:TURN_CHARS] + " ..."


_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|my|we|we're|we've|our|me)\b", re.I)
_SMALL_TALK = re.compile(
    r"\b(?:hi|hello|hey|morning|night|thanks?|thank you|cheers|bye|haha|lol|joke)\b", re.I
)


def substantive(turns: Sequence[Turn]) -> bool:
    """Whether the turns say something a small model should not answer with nothing:
    a user's statement (eight words or more, or six about themselves; no small talk), or an
    assistant's turn of 25 words or more (an answer, a plan). A 1.5B model answers
    some of these with an empty list; asked again, it must name at least one fact."""
    for turn in turns:
        if turn.role == ASSISTANT and len(turn.visible.split()) >= 25:
            return True
        if turn.role == USER and any(_statement(s) for s in _SENTENCE.findall(turn.visible)):
            return True
    return False


def _statement(sentence: str) -> bool:
    sentence = sentence.strip()
    words = len(sentence.split())
    if sentence.endswith("?") or _SMALL_TALK.search(sentence):
        return False
    return words >= 8 or (words >= 6 and bool(_FIRST_PERSON.search(sentence)))


def windows(turns: Sequence[Turn], structures: dict[int, list[Structure]]) -> list[list[Turn]]:
    """Consecutive runs of whole turns, each rendering to at most WINDOW_CHARS."""
    found: list[list[Turn]] = []
    size = 0
    for turn in turns:
        length = len(render([turn], structures)) + 1
        if found and size + length <= WINDOW_CHARS:
            found[-1].append(turn)
            size += length
        else:
            found.append([turn])
            size = length
    return found


# The answer, mapped back.

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
_CHITCHAT = re.compile(
    r"\b(thank(?:s|ed|ing)?|greet(?:s|ed|ing)?|said (?:hello|hi|goodbye|good night)|"
    r"how (?:are|is) (?:you|the user)|offer(?:s|ed)? (?:to help|help|further)|"
    r"(?:happy|glad) to help|wish(?:es|ed)? the user|good luck|congratulat\w*|"
    r"(?:asked|asks) (?:the assistant|what|how|whether|if|for help))\b",
    re.IGNORECASE,
)
# How a small model restates the conversation instead of what was said in it: "The user
# asked ...", "The user mentioned ...", and the assistant's acknowledgements and promises
# ("The assistant saved ...", "The assistant will ...": an instruction says "must").
_META = re.compile(
    r"^the user (?:asked|asks|mentioned|mentions|said|says|told|tells|wants to know|"
    r"wondered|requested|requests|is asking|confirmed|confirms|agreed|replied|responded)\b|"
    r"^the assistant (?:saved|noted|stored|remembered|will|would|can|could|is going to|"
    r"offered|offers|asked|asks|acknowledged|confirmed|understood|agreed)\b",
    re.IGNORECASE,
)
# Words of a fact that only says a table or code block was shared or kept.
_STRUCTURE_WORDS = frozenset({"table", "shown", "provi", "saved", "share", "code", "block"})
_DIRECTIVE = re.compile(
    r"^(?:the assistant (?:must|should|needs? to|has to|is to|shall|will always|will never)|"
    r"the user wants the assistant (?:to|not to)|always|never|do not|don't)\b",
    re.IGNORECASE,
)
# A user's question asking for standing behaviour ("Can you set all my reminders to
# Lisbon time from now on?"): what the model made of it is a directive.
_STANDING = re.compile(
    r"\b(?:from now on|going forward|in future|always|never|every time|whenever)\b", re.I
)
# An instruction the model wrote as it was said ("Please always ask ..."), or as the
# assistant's duty ("The assistant must ..."), rewritten as the user's: "The user wants
# the assistant to always ask ..." (a user's instruction is the user's memory).
_IMPERATIVE = re.compile(
    r"^(?:please\s+|the assistant (?:must|should|needs? to|has to)\s+)?"
    r"(?P<neg>do not\s+|don't\s+|not\s+)?(?=\w)",
    re.IGNORECASE,
)
_IMPERATIVE_START = re.compile(
    r"^(?:please|always|never|do not|don't|the assistant (?:must|should|needs? to|has to))\b",
    re.IGNORECASE,
)
# A user's request for something done now ("Book me a hotel ...", "Find me ..."): what
# the user "wants" then is the errand, not a memory.
_ERRAND = re.compile(
    r"^(?:please\s+)?(?:book|find|get|show|search|look up|send|order|buy|call|email|"
    r"check|give|tell|write|draft|make)\b",
    re.IGNORECASE,
)
_WANTS = re.compile(r"^the user (?:wants|would like|needs|is looking)\b", re.IGNORECASE)
# A fact that leans on the conversation for its meaning ("The user has been there for
# two years", "... the lunchtime one").
_VAGUE = re.compile(
    r"\b(?:there|the \w+ one)\b(?! (?:is|are|was|were)\b)|\b(?:it|that|them)\.$", re.I
)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_TRACE = re.compile(
    r"traceback \(most recent call last\)|^\s*(?:error|exception|warning)\b"
    r"|\w+(?:error|exception):",
    re.IGNORECASE | re.MULTILINE,
)


def _stems(text: str) -> set[str]:
    """Content words, without a plural "s" and cut to 5 letters, so "allergic" meets
    "allergy" and "seats" meets "seat"."""
    words = (w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOPWORDS)
    return {_singular(w)[:5] for w in words}


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _undated(stems: set[str]) -> set[str]:
    """Stems that are not part of a date (weekday, month, year, day of month, "week")."""
    return {s for s in stems if not (s.isdigit() or s in _DATE_STEMS)}


_DATE_STEMS = frozenset(
    [d[:5] for d in WEEKDAYS]
    + [m.lower()[:5] for m in calendar.month_name[1:]]
    + ["week", "month", "year", "night", "morni", "after", "eveni"]
)


def candidates(
    facts: Iterable[dict[str, Any]],
    turns: Sequence[Turn],
    structures: dict[int, list[Structure]],
    clock: datetime,
) -> list[ExtractedCandidate]:
    """The model's facts as extraction candidates, the user's standing instructions it
    missed, then the kept structures and the assistant's lists; a fact that only says a
    kept structure was shared is left to the structure's own fact."""
    kept = structure_candidates(turns, structures) + list_candidates(turns)
    headings = [_stems(c.text.split("\n\n", 1)[0]) for c in kept]
    about_kept = set().union(*headings) | _STRUCTURE_WORDS if kept else set()
    found: list[ExtractedCandidate] = []
    seen: list[set[str]] = []
    for fact in facts:
        candidate = _candidate(fact, turns, clock)
        if candidate is None:
            continue
        stems = _stems(candidate.text)
        if any(_same(stems, other) for other in seen) or (kept and stems <= about_kept):
            continue
        if len(_undated(stems)) > 1 and any(_undated(stems) <= other for other in seen):
            continue  # says less than a fact before it (its date aside)
        seen.append(stems)
        found.append(candidate)
    for instruction in instruction_candidates(turns, clock):
        stems = _stems(instruction.text)
        if not any(len(stems & other) * 2 >= len(stems) for other in seen):
            seen.append(stems)
            found.append(instruction)
    return found + kept


def _same(a: set[str], b: set[str]) -> bool:
    return bool(a) and len(a & b) / len(a | b) >= 0.8


def _candidate(
    fact: dict[str, Any], turns: Sequence[Turn], clock: datetime
) -> ExtractedCandidate | None:
    text = _sentence(str(fact.get("text", "")))
    if not text or text.endswith("?") or _CHITCHAT.search(text) or _VAGUE.search(text):
        return None
    if _META.search(text) and not _DIRECTIVE.search(text):
        return None
    stems = _stems(text)
    turn = _cited(stems, int(fact.get("turn", 0)) - 1, turns)
    if turn is None:
        return None
    quote = _quote(stems, turn.visible)
    if turn.role == USER:
        text = _addressed(text)
        standing = quote.endswith("?") and bool(_STANDING.search(quote))
        directive = standing or bool(_DIRECTIVE.search(text))
        if not directive and (quote.endswith("?") or (_WANTS.match(text) and _ERRAND.match(quote))):
            return None  # a question or an errand, not something the user stated
    else:
        directive = False
        if _restated(stems, turn, turns):
            return None
        if "assistant" not in text.lower():
            text = f"The assistant said that {text[0].lower()}{text[1:]}"
    return ExtractedCandidate(
        kind=CandidateKind.FACT,
        text=resolve(text, clock),
        memory_type="directive" if directive else "fact",
        turns=[turn.index],
        quote=quote,
    )


def _addressed(text: str) -> str:
    """An imperative ("Please always ask me ...", "Never call ...") or an assistant's duty
    ("The assistant must ...") as the user's instruction ("The user wants the assistant to
    always ask ..."); other text as it is."""
    if not _IMPERATIVE_START.match(text):
        return text
    match = _IMPERATIVE.match(text)
    assert match is not None  # the pattern matches the start of any text
    rest = text[match.end() :]
    wants = (
        "The user wants the assistant not to "
        if match["neg"]
        else "The user wants the assistant to "
    )
    return wants + rest[0].lower() + rest[1:] if rest else text


def _restated(stems: set[str], turn: Turn, turns: Sequence[Turn]) -> bool:
    """The words the fact takes from the assistant's turn are mostly the user's own,
    said before, and it adds no figure: an acknowledgement or restatement, not something
    the assistant supplied."""
    taken = stems & _stems(turn.visible)
    said = set().union(
        *(_stems(t.visible) for t in turns if t.role == USER and t.index < turn.index)
    )
    if not taken or any(any(c.isdigit() for c in word) for word in taken - said):
        return False
    return len(taken & said) / len(taken) >= RESTATED


def _sentence(text: str) -> str:
    text = " ".join(text.split()).strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else f"{text}."


def _cited(stems: set[str], named: int, turns: Sequence[Turn]) -> Turn | None:
    """The spoken turn sharing most words with the fact (the named one on a tie); None
    when the fact shares no word with any spoken turn (nothing said supports it)."""
    spoken = [t for t in turns if t.spoken]
    scores = {t.index: len(stems & _stems(t.visible)) for t in spoken}
    best = max(scores.values(), default=0)
    if best == 0:
        return None
    if scores.get(named) == best:
        return next(t for t in spoken if t.index == named)
    return next(t for t in spoken if scores[t.index] == best)


def _quote(stems: set[str], content: str) -> str:
    """The sentence of `content` sharing most words with the fact, verbatim; a statement
    rather than a question when a statement shares any."""
    sentences = [s.strip() for s in _SENTENCE.findall(content) if s.strip()]
    if not sentences:
        return content.strip()
    statements = [s for s in sentences if not s.endswith("?") and stems & _stems(s)]
    best: str = max(statements or sentences, key=lambda s: len(stems & _stems(s)))
    return best


# Structures.


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
        for sentence in (s.strip() for s in _SENTENCE.findall(turn.visible)):
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
    return _sentence(f"The user wants the assistant {to} {rest[0].lower()}{rest[1:]}")


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
