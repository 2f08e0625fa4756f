"""The `local` model's extraction: its own small-model prompt, and the answer mapped back.

The formation's extract prompt is read for its data block only (turns, roles,
clock, structures). The 1.5B model gets a short prompt with worked examples and
writes, per fact, only the turn it comes from and a third-person sentence
(`{"facts": [{"turn": 2, "text": "The user ..."}]}`, grammar-constrained); code
does the rest, deterministically:

- tool calls and results are not shown to the model (tool output counts only where
  the assistant passed it on, and then the assistant's turn says it); tables and code
  blocks are shown as a placeholder; text posing as the system or another turn is
  not shown (`local_turns`);
- relative dates, copied as said, are written as absolute ones from the clock
  (`local_dates.resolve`);
- the cited turn is checked against the words of the fact: the user or assistant
  turn sharing most of them is cited (the model's own turn on a tie), unless an
  assistant's turn is the only one saying one of its figures (the assistant supplied
  it), or else a user's turn is (the user said it there); a fact sharing none with any
  is dropped; the quote is the cited turn's sentence
  sharing most (a statement rather than a question; a point between digits ends no
  sentence);
- a fact from an assistant turn says so ("The assistant said that ...") when the
  model did not; a fact quoting a user's question (unless it is an instruction; a
  statement of the turn sharing only the question's words does not make it one), a
  user's errand ("Book me ...", or a need the assistant went to a tool for), a name
  for the user they never gave themselves, an assistant's restatement of what the
  user said (most of its words the user's, no figure of its own), its promises
  ("I'll ...") and questions (but "How about ...?"), its answers about the present
  moment ("today", "right now", or answering a question about it), its general
  remarks made into a fact about someone it did not name, a second fact from one
  assistant sentence (a sentence starting "It ..." counts as the one before), a
  restatement of the conversation ("The user asked ...", "The assistant will ..."), a
  fact that leans on the conversation ("... there", "the lunchtime one", "he" or
  "she" with nobody named), one that says less than a fact before it (its date
  aside) or says an earlier fact's figures again of the same thing, or only that a
  kept table was shared, and chit-chat (thanks, greetings, offers of help) are
  dropped; a fact of two clauses whose second has the user's own subject ("... and
  we moved to Exeter") is two facts;
- a fact written as an instruction ("Please always ...", "The assistant must ...")
  is the user's directive, worded "The user wants the assistant to ..."; so is what
  the model made of a question asking for standing behaviour ("... from now on?").
  Any other fact is a fact: a small model's finer labels are not stable enough to
  keep (reconciliation refuses to revise across memory types);
- tables, code blocks, the assistant's lists, the user's standing instructions and
  the hard constraints the user states (an allergy, a reaction, a diet, an access need,
  of the user or of someone named) and the rule a condition sets ("I'm diabetic, so keep
  the sugar down") the model missed are added by code (`local_verbatim`); a fact of the
  assistant's relaying one does not count as the user having said it.
Long conversations are split into windows of whole turns, one generation each; a
greedy loop is cut at its first repeated fact; an empty answer to turns that say
something substantive is asked again, for at least one fact.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from jennah.adapters.models.local_dates import resolve
from jennah.adapters.models.local_turns import (
    ASSISTANT,
    SENTENCE,
    SPEAKERS,
    USER,
    Turn,
    as_sentence,
    figures,
    sentence_group,
    sentences,
    stems_of,
    undated,
)
from jennah.adapters.models.local_verbatim import (
    constraint_candidates,
    instruction_candidates,
    list_candidates,
    names_a_condition,
    says_the_same,
    structure_candidates,
)
from jennah.domain.formation import CandidateKind, ExtractedCandidate, Structure

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
        if turn.role == USER and any(_statement(s) for s in SENTENCE.findall(turn.visible)):
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

# "he", "she" ... in a fact that names nobody but the user: someone from the conversation
# ("The user wants to fly over for the weekend of her birthday"); a small model calls the
# user "they". Someone named: a name (a capitalised word) or a relative, a friend, a
# colleague, a pet.
_HE_OR_SHE = re.compile(r"\b(?:he|she|him|his|her|hers)\b", re.IGNORECASE)
_SOMEONE = re.compile(
    r"\b(?!(?:The|A|An|It|This|That|He|She|His|Her|They|Their)\b)[A-Z][a-z]|"
    r"\b(?:mother|mum|mom|father|dad|parent|son|daughter|child|kid|baby|wife|husband|"
    r"partner|sister|brother|sibling|aunt|uncle|niece|nephew|cousin|grand\w+|friend|boss|"
    r"manager|colleague|coworker|neighbou?r|landlord|landlady|doctor|teacher|dog|cat|puppy|"
    r"kitten|pet|horse)s?\b"
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
    headings = [stems_of(c.text.split("\n\n", 1)[0]) for c in kept]
    about_kept = set().union(*headings) | _STRUCTURE_WORDS if kept else set()
    found: list[ExtractedCandidate] = []
    seen: list[set[str]] = []
    dated: list[tuple[set[str], set[str]]] = []  # (figures, stems) of the facts kept
    answered: set[tuple[int, int]] = set()  # (assistant turn, sentence) a fact was drawn from
    for part in (part for fact in facts for part in _split(fact)):
        candidate = _candidate(part, turns, clock)
        if candidate is None:
            continue
        stems = stems_of(candidate.text)
        if any(_same(stems, other) for other in seen) or (kept and stems <= about_kept):
            continue
        if len(undated(stems)) > 1 and any(undated(stems) <= other for other in seen):
            continue  # says less than a fact before it (its date aside)
        if any(_same_figures(candidate.text, stems, other) for other in dated):
            seen.append(stems)  # said again: what says less than it is a repeat too
            continue  # an earlier fact's figures said again of the same thing
        sentence = _assistant_sentence(candidate, turns)
        if sentence in answered:
            continue  # a detail of an assistant's sentence already kept
        if sentence is not None:
            answered.add(sentence)
        seen.append(stems)
        dated.append((figures(candidate.text), stems))
        found.append(candidate)
    # What code finds in the user's words is said already only by a fact of the user's: an
    # assistant's fact ("The assistant said that the profile says no pork") binds nobody.
    roles = {t.index: t.role for t in turns}
    said = [stems_of(c.text) for c in found if roles.get(c.turns[0]) == USER]
    for instruction in instruction_candidates(turns, clock):
        stems = stems_of(instruction.text)
        if not any(len(stems & other) * 2 >= len(stems) for other in said):
            said.append(stems)
            found.append(instruction)
    # The rule a condition sets ("so keep the sugar down") is not said again by a fact
    # giving it with its condition ("The user is diabetic and avoids sugar"): that is a
    # health claim, which the brief never shows.
    rules = [
        stems_of(c.text)
        for c in found
        if roles.get(c.turns[0]) == USER and not names_a_condition(c.text)
    ]
    for constraint in constraint_candidates(turns, clock):
        against = rules if constraint.memory_type == "directive" else said
        if not any(says_the_same(other, constraint) for other in against):
            said.append(stems_of(constraint.text))
            rules.append(said[-1])
            found.append(constraint)
    return found + kept


def _assistant_sentence(
    candidate: ExtractedCandidate, turns: Sequence[Turn]
) -> tuple[int, int] | None:
    """(turn, sentence) of an assistant's fact: what it quotes, a sentence leaning on the
    one before it ("It takes 25 minutes.") counted as that one; None for a user's fact."""
    turn = next(t for t in turns if t.index == candidate.turns[0])
    if turn.role != ASSISTANT:
        return None
    return turn.index, sentence_group(turn.visible, candidate.quote or "")


# A second clause with a subject of its own, as the user said it: "The user joined the Met
# Office and we moved to Exeter" (each can revise a different memory).
_AND_WE = re.compile(
    r"^(?P<first>the user\b.+?),? and (?P<subject>we|i)(?P<verb>'ve|'re|'m| have| are| am)?\s+"
    r"(?P<rest>\w.*)$",
    re.IGNORECASE,
)
_VERBS = {"'ve": "has", " have": "has", "'re": "is", " are": "is", "'m": "is", " am": "is"}


def _split(fact: dict[str, Any]) -> list[dict[str, Any]]:
    """A fact of two clauses, the second the user's own words ("... and we moved to
    Exeter"), as two facts of the user's."""
    match = _AND_WE.match(" ".join(str(fact.get("text", "")).split()))
    if match is None:
        return [fact]
    verb = _VERBS.get((match["verb"] or "").lower(), "")
    second = " ".join(w for w in ("The user", verb, match["rest"]) if w)
    return [fact | {"text": match["first"]}, fact | {"text": second}]


def _same_figures(text: str, stems: set[str], earlier: tuple[set[str], set[str]]) -> bool:
    """The fact's figures (a date's day, an amount) are all an earlier fact's, and so is
    half of the rest of what it says: "The user's mother's birthday is on 3 May" after
    "The user's mother turns 70 on 3 May"."""
    own, rest = figures(text), undated({s for s in stems if not s.isdigit()})
    numbers, other = earlier
    return bool(own) and own <= numbers and len(rest & other) * 2 >= len(rest)


def _same(a: set[str], b: set[str]) -> bool:
    return bool(a) and len(a & b) / len(a | b) >= 0.8


def _candidate(
    fact: dict[str, Any], turns: Sequence[Turn], clock: datetime
) -> ExtractedCandidate | None:
    text = as_sentence(str(fact.get("text", "")))
    if not text or text.endswith("?") or _CHITCHAT.search(text) or _VAGUE.search(text):
        return None
    if _HE_OR_SHE.search(text) and not _SOMEONE.search(text):
        return None
    if _META.search(text) and not _DIRECTIVE.search(text):
        return None
    stems = stems_of(text)
    turn = _cited(text, int(fact.get("turn", 0)) - 1, turns)
    if turn is None:
        return None
    quote = _quote(stems, turn.visible)
    if turn.role == USER:
        text = _addressed(text)
        question = _asked(stems, turn.visible)
        standing = question is not None and bool(_STANDING.search(question))
        directive = standing or bool(_DIRECTIVE.search(text))
        if not directive and (question is not None or _errand(text, quote, turn, turns)):
            return None  # a question or an errand, not something the user stated
        text = _as_the_user(text, turn, turns)
        if not _named_by_the_user(text, turns):
            return None
    else:
        directive = False
        if _DIRECTIVE.search(text):
            return None  # the assistant's turn gives no instruction: a misreading
        if _restated(text, turn, turns) or _for_now(text, turn, turns):
            return None
        if not _about_what_it_said(text, quote):
            return None
        if _PROMISE.search(quote) or (quote.endswith("?") and not _SUGGESTION.match(quote)):
            return None  # a promise or a question: nothing the assistant supplied
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


def _restated(text: str, turn: Turn, turns: Sequence[Turn]) -> bool:
    """The words the fact takes from the assistant's turn are mostly the user's own,
    said before, and it adds no figure: an acknowledgement or restatement, not something
    the assistant supplied."""
    stems = stems_of(text)
    taken = stems & stems_of(turn.visible)
    before = [t.visible for t in turns if t.role == USER and t.index < turn.index]
    said = set().union(*(stems_of(t) for t in before))
    if not taken or any(any(c.isdigit() for c in word) for word in taken - said):
        return False
    if figures(text) & figures(turn.visible) - figures(" ".join(before)):
        return False
    return len(taken & said) / len(taken) >= RESTATED


# An assistant's promise or acknowledgement ("I'll flag anything over budget."): what it
# will do is not something it supplied; the user's wish behind it is the memory.
_PROMISE = re.compile(r"\bI(?:'ll| will| won't| will not|'m going to| am going to)\b", re.I)
# A question that suggests something ("How about miso-glazed salmon?").
_SUGGESTION = re.compile(r"^(?:how about|what about|why not|have you (?:tried|considered))\b", re.I)
# Words for the present moment: an answer about it ("Light rain from 3pm", "UTC+13 right
# now") is over by the next conversation.
_NOW = re.compile(
    r"\b(?:today|tonight|this (?:morning|afternoon|evening)|right now|at the moment)\b", re.I
)


def _for_now(text: str, turn: Turn, turns: Sequence[Turn]) -> bool:
    """An assistant's fact about the present moment: its text says so, or it answers the
    user's question about it (the last user turn before it asks about now)."""
    if _NOW.search(text):
        return True
    asked = [t for t in turns if t.role == USER and t.index < turn.index][-1:]
    return any(
        s.endswith("?") and bool(_NOW.search(s)) for t in asked for s in sentences(t.visible)
    )


# A fact's subject when it is a name ("Biscuit needs a coat ...").
_NAMED_SUBJECT = re.compile(r"^(?!(?:The|A|An|It|This|That|These|Those)\b)(?P<name>[A-Z][\w'-]*)")


def _about_what_it_said(text: str, quote: str) -> bool:
    """An assistant's fact about someone or something by name is about what the assistant
    said only when the sentence it quotes names them: "Many ex-racers need a coat in
    winter" is not "Biscuit needs a coat in winter"."""
    match = _NAMED_SUBJECT.match(text)
    if match is None:
        return True
    return re.search(rf"\b{re.escape(match['name'])}\b", quote, re.IGNORECASE) is not None


def _asked(stems: set[str], content: str) -> str | None:
    """The question of `content` a fact comes from: one sharing its words, when no
    statement of `content` shares a word of it (a date aside) that the questions do not."""
    parts = sentences(content)
    questions = [s for s in parts if s.endswith("?") and stems & stems_of(s)]
    if not questions:
        return None
    asked = set().union(*(stems_of(q) for q in questions))
    stated = set().union(*(stems_of(s) for s in parts if not s.endswith("?")))
    if undated(stems & stated) - asked:
        return None
    return max(questions, key=lambda q: len(stems & stems_of(q)))


def _errand(text: str, quote: str, turn: Turn, turns: Sequence[Turn]) -> bool:
    """What the user "wants" or "needs" is an errand when the sentence asks for it ("Book
    me ...") or the assistant went to a tool for it next (a search, a booking)."""
    if not _WANTS.match(text):
        return False
    after = [t for t in turns if t.index > turn.index][:1]
    return bool(_ERRAND.match(quote)) or any(t.role not in SPEAKERS for t in after)


# "The user's name is Tomasz": a name the user gives themselves ("I'm Priya", "my name
# is ...", "call me ..."); a small model also names the user after someone else.
_USERS_NAME = re.compile(
    r"^the user(?:'s name is| is called| is named| goes by)\s+(?P<name>[A-Z][\w'-]*)", re.I
)


def _named_by_the_user(text: str, turns: Sequence[Turn]) -> bool:
    """A fact naming the user holds a name a user turn introduces them by."""
    match = _USERS_NAME.match(text)
    if match is None:
        return True
    name = re.escape(match["name"])
    introduced = re.compile(
        rf"\b(?:i'm|i am|im|my name is|my name's|call me|this is|it's)\s+{name}\b|"
        rf"^\s*{name}\s+here\b",
        re.IGNORECASE,
    )
    return any(introduced.search(t.visible) for t in turns if t.role == USER)


# A fact's leading capitalised word and the rest: "John now works at ...", "John's ...".
_LEADING_NAME = re.compile(r"^(?P<name>[A-Z][a-z]+)(?P<rest>(?:'s)?\s.*)$")
_NOT_NAMES = frozenset(
    [
        "the",
        "a",
        "an",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "their",
        "there",
        "her",
        "his",
        "my",
        "our",
        "your",
        "in",
        "on",
        "at",
        "from",
        "every",
        "each",
        "all",
        "some",
        "no",
        "one",
        "both",
        "either",
        "neither",
        "any",
        "after",
        "before",
        "when",
    ]
)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|im|ive|my|me)\b", re.IGNORECASE)


def _as_the_user(text: str, turn: Turn, turns: Sequence[Turn]) -> str:
    """A fact the user said of themselves ("I now work at the Infirmary") whose subject is
    a name no turn of the conversation holds ("John now works at ...": a small model names
    the user after its examples) is about the user."""
    match = _LEADING_NAME.match(text)
    if match is None or match["name"].lower() in _NOT_NAMES:
        return text
    name = re.compile(rf"\b{re.escape(match['name'])}\b", re.IGNORECASE)
    if any(name.search(t.visible) for t in turns) or not _FIRST_PERSON.search(turn.visible):
        return text
    return f"The user{match['rest']}"


def _cited(text: str, named: int, turns: Sequence[Turn]) -> Turn | None:
    """The spoken turn sharing most words with the fact (the named one on a tie), unless
    an assistant's turn is the only one saying a figure of it (the assistant supplied
    it), or else a user's turn is (the user said it there, whatever question before it
    shares more words: "I'm on about 15g" after "How much fibre ...?"); None when the
    fact shares no word with any spoken turn (nothing said supports it)."""
    stems = stems_of(text)
    spoken = [t for t in turns if t.spoken]
    for role in (ASSISTANT, USER):
        for turn in (t for t in spoken if t.role == role):
            others = " ".join(t.visible for t in spoken if t is not turn)
            if figures(text) & figures(turn.visible) - figures(others):
                return turn
    scores = {t.index: len(stems & stems_of(t.visible)) for t in spoken}
    best = max(scores.values(), default=0)
    if best == 0:
        return None
    if scores.get(named) == best:
        return next(t for t in spoken if t.index == named)
    return next(t for t in spoken if scores[t.index] == best)


def _quote(stems: set[str], content: str) -> str:
    """The sentence of `content` sharing most words with the fact, verbatim; a statement
    rather than a question when a statement shares any."""
    sentences = [s.strip() for s in SENTENCE.findall(content) if s.strip()]
    if not sentences:
        return content.strip()
    statements = [s for s in sentences if not s.endswith("?") and stems & stems_of(s)]
    best: str = max(statements or sentences, key=lambda s: len(stems & stems_of(s)))
    return best
