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
  point of its turn. The constraint's words include a reaction said as a symptom
  ("shellfish makes her ill", "he reacts badly to penicillin"), a diet by its rule ("we
  don't eat pork", "no meat on Fridays for us", "low-salt"), what someone cannot have or
  do ("Tom can't have nuts", "can't manage stairs") and access needs (a hearing aid,
  blind, crutches); its subject is the user, someone named, or "he" / "she" when the
  user named who before; a subject left out after "and" is the clause's before it;
- the rule a condition sets, said after "so" ("I'm diabetic, so keep the sugar right
  down"; "I'm pregnant, so no soft cheese"), as the user's directive without the
  condition: the condition is a health claim the brief never shows, the rule must show.
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
from jennah.domain import claims
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

# What may come before an instruction: "And", "Going forward,", "For train bookings,".
_BEFORE = (
    r"(?:(?:and|also|oh|so|for the record|by the way|btw)[ ,]+)*"
    r"(?P<context>(?:going forward|in future|for (?!the record\b)(?:[\w'-]+ ){0,3}[\w'-]+),\s*)?"
    r"(?:please\s+)?(?:make sure (?:that )?(?:you )?(?=always|never|only)|"
    r"(?:can|could|would|will) you\s+(?=always|never|only ever))?"
)
_INSTRUCTION = re.compile(
    rf"^{_BEFORE}"
    r"(?P<neg>never|don't ever|do not ever|don't|do not|no more)?\s*"
    r"(?P<rest>(?:always\s+|only ever\s+)?\w.*?)"
    r"(?:,\s*(?:i|i'm|i've|we|we've|because|as|since|so|the)\b.*)?[.!]*$",
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
    rf"^{_BEFORE}(?:always|never|don't|do not|only ever|no more)\b"
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
    context = (match["context"] or "").strip().rstrip(",")
    context = f"{context[0].upper()}{context[1:]}, the user" if context else "The user"
    if negation == "no more":  # "No more early flights": "The user wants no more early ..."
        return as_sentence(f"{context} wants no more {rest}")
    if negation.startswith("never"):
        rest = f"never {rest}"
    to = "not to" if negation and not negation.startswith("never") else "to"
    return as_sentence(f"{context} wants the assistant {to} {rest[0].lower()}{rest[1:]}")


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


# A hard constraint's words: an allergy, an intolerance, coeliac disease, a reaction
# said as a symptom, a diet (by name or by its rule), something someone cannot have or
# do, an access need.
_SAFETY = re.compile(
    rf"\b(?:{claims.SAFETY_CONDITION_WORDS}|{claims.DIET_WORDS}|{claims.REACTION_WORDS}|"
    r"makes? (?:me|him|her|them|us) (?:really |very |so |quite )?(?:ill|sick|unwell|poorly)|"
    r"(?:can't|cannot|can not|mustn't|must not) (?:have|eat|drink|take|tolerate|digest|do|"
    r"manage|handle|climb|use) (?!it\b|that\b|this\b|them\b|the\b|a\b|an\b|any\b)\w+|"
    r"(?:don't|doesn't|do not|does not|never) (?:eat|eats|drink|drinks|touch|touches) |"
    rf"{claims.DIET_RULE_WORDS}|{claims.ACCESS_WORDS})\b",
    re.IGNORECASE,
)
# A condition that sets a rule without being one ("I'm diabetic, so keep the sugar
# down"): the condition stays a health statement, its rule is the constraint.
_REASON = re.compile(
    r"\b(?:diabet\w*|pregnan\w*|heart|blood pressure|cholesterol|kidneys?|ibs|crohn's|"
    r"hearing|eyesight|back|knees?|hips?)\b",
    re.IGNORECASE,
)


def names_a_condition(text: str) -> bool:
    """Whether `text` names a condition that sets a rule (`_REASON`)."""
    return _REASON.search(text) is not None


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
    (r"\bus\b", "the user and their family"),
)
_RELATIONS = (
    r"(?:(?:mother|father|sister|brother|son|daughter)-in-law|mum|mom|mother|dad|father|parents?|wife|husband|partner|fianc\w*|girlfriend|boyfriend|"
    r"sons?|daughters?|child|children|kids?|baby|sister|brother|grand\w+|nan|nana|granny|"
    r"grandma|grandad|grandpa|aunt|auntie|uncle|niece|nephew|cousin|step\w+|friend|"
    r"flatmate|housemate|neighbou?r|boss|"
    r"colleague|guests?)"
)
# Someone of the user's, as said: "my wife Aisha", "my dad", "my father-in-law Ken".
_MY_PERSON = re.compile(
    rf"\bmy ((?:[\w-]+ ){{0,1}}?{_RELATIONS})(?:,? ([A-Z][a-z]+)(?!'s? \w+ing\b))?\b",
    re.IGNORECASE,
)
# A relative named as a name: "Mum can't do stairs".
_FAMILY_NAME = re.compile(
    r"^(?P<who>Mum|Mom|Dad|Nan|Nana|Granny|Grandma|Grandad|Grandpa)\b(?P<rest>.*)$"
)
# A named person as a clause's subject: "Tom can't have nuts", "Sam is blind".
_NAMED = re.compile(
    r"^(?P<name>[A-Z][a-z]+(?: [A-Z][a-z]+)?)(?P<rest>(?:'s)? (?:is|has|can't|cannot|"
    r"can not|mustn't|must not|uses|needs|reacts|gets|doesn't|does not|never|only|wears|"
    r"carries|keeps|follows|eats|won't|will not)\b.*)$"
)
_NOT_NAMES = frozenset({"The", "This", "That", "These", "Those", "It", "There", "They",
                        "He", "She", "We", "I", "Please", "Can", "Could", "Would", "What",
                        "When", "If", "You", "No", "Not", "Nothing"})  # fmt: skip
# A rule with no subject but who it is for: "No meat on Fridays for us".
_FOR_US = re.compile(r"^no\b.*\bfor (?:me|us)\b", re.IGNORECASE)
_HE_SHE = re.compile(r"^(?:he|she)(?P<verb>'s| is| has)?\b", re.IGNORECASE)
_VAGUE = re.compile(r"(?:it|that|this|they)\b", re.IGNORECASE)
_OBJECT = re.compile(r"\b(makes? |agree with )(him|her|me|us)\b", re.IGNORECASE)
# A subject left out after "and": "I'm on crutches and can't manage stairs".
_NO_SUBJECT = re.compile(
    r"^(?:can't|cannot|can not|mustn't|must not|is|has|uses|needs|reacts|gets|doesn't|"
    r"does not|don't|do not|never|wears|carries|am|have)\b",
    re.IGNORECASE,
)


def constraint_candidates(turns: Sequence[Turn], clock: datetime) -> list[ExtractedCandidate]:
    """A user's clause stating a hard constraint (see the module doc), in the third
    person; the clause, as the user wrote it, is its quote. Then the rule a condition
    sets, said after it ("I'm diabetic, so keep the sugar right down"), as the user's
    directive."""
    found: list[ExtractedCandidate] = []
    person: str | None = None  # the last person of the user's named: "the user's wife Aisha"
    for turn, sentence in _user_sentences(turns):
        if sentence.endswith("?"):
            person = _last_person(sentence) or person
            continue
        subject = ""
        reason = False
        for_whom = re.search(r"\bfor (?:me|us)\b", sentence, re.IGNORECASE)
        for said in (c.strip() for c in _CLAUSE_BREAK.split(sentence) if c.strip()):
            clause = f"{subject} {said}" if subject and _NO_SUBJECT.match(said) else said
            if for_whom and said.lower().startswith("no ") and not _FOR_US.match(said):
                clause = f"{said} {for_whom[0]}"  # "No pork and no alcohol for me"
            text = _constraint(clause, person)
            person = _last_person(clause) or person
            subject = _subject_word(clause) or subject
            reason = reason or _REASON.search(clause) is not None
            if text is not None:
                found.append(_fact(turn, text, clock, said, "fact"))
        rule = _consequence(sentence) if reason else None
        if rule is not None:
            found.append(_fact(turn, rule[0], clock, rule[1], "directive"))
    return found


def _fact(turn: Turn, text: str, clock: datetime, quote: str, kind: str) -> ExtractedCandidate:
    return ExtractedCandidate(
        kind=CandidateKind.FACT,
        text=resolve(text, clock),
        memory_type=kind,
        turns=[turn.index],
        quote=quote,
    )


def _last_person(text: str) -> str | None:
    """The last person of the user's `text` names ("my wife Aisha": "the user's wife
    Aisha"), a relative called by name ("Mum": "the user's mum"), or a name."""
    mine = list(_MY_PERSON.finditer(text))
    mentions = [(m.start(), _person(m[1], m[2])) for m in mine]
    mentions += [
        (m.start(), f"the user's {m[0].lower()}")
        for m in re.finditer(r"\b(?:Mum|Mom|Dad|Nan|Grandad|Grandma)\b", text)
    ]
    mentions += [
        (m.start(), m[0])
        for m in re.finditer(r"(?<=[a-z,] )[A-Z][a-z]+\b(?!'s)", text)
        if m[0] not in _NOT_NAMES
        and m[0].lower() not in _CALENDAR_WORDS
        and not any(my.start() <= m.start() < my.end() for my in mine)
    ]
    return max(mentions)[1] if mentions else None


def _person(relation: str, name: str | None) -> str:
    return f"the user's {relation.lower()}" + (f" {name}" if name else "")


_CALENDAR_WORDS = frozenset(
    ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
     "january", "february", "march", "april", "may", "june", "july", "august",
     "september", "october", "november", "december", "christmas", "easter"]
)  # fmt: skip


def _subject_word(clause: str) -> str:
    """The clause's own subject, for a clause after it that leaves it out."""
    rest = clause[m.end() if (m := _LEAD.match(clause)) else 0 :]
    first = re.match(r"(?:I|we|he|she|[A-Z][a-z]+)\b", rest, re.IGNORECASE)
    if first is None or (first[0] in _NOT_NAMES and first[0].lower() not in _PRONOUNS):
        return ""
    return first[0]


_PRONOUNS = frozenset({"i", "we", "he", "she"})


def _constraint(clause: str, person: str | None = None) -> str | None:
    """The clause as a third-person constraint, when it names one (`_SAFETY`) of a
    subject it says: the user ("I", "my ...", "we"), someone by name ("Tom", "Mum"), or
    "he" / "she" / "her" when `person` (the last one the user named) says who."""
    if _SAFETY.search(clause) is None:
        return None
    mine = _MY_ALLERGY.search(clause)
    if mine is not None:
        return as_sentence(f"The user has a {mine[1]}{mine[2].lower()}")
    lead = _LEAD.match(clause)
    rest = clause[lead.end() if lead else 0 :]
    family = _FAMILY_NAME.match(rest)
    named = _NAMED.match(rest)
    he_she = _HE_SHE.match(rest)
    if family is not None:  # "Mum can't do stairs": "The user's mum can't do stairs"
        rest = f"the user's {family['who'].lower()}{family['rest']}"
    elif named is not None and named["name"].split()[0] not in _NOT_NAMES:
        rest = named[0]
    elif he_she is not None:
        if person is None:
            return None
        verb = {"'s": " is"}.get((he_she["verb"] or "").lower(), he_she["verb"] or "")
        rest = f"{person}{verb}{rest[he_she.end() :]}"
    elif (said_to := _OBJECT.search(rest)) is not None and not _VAGUE.match(rest):
        own = said_to[2].lower() in ("me", "us")
        if (person is None and not own) or _SUBJECT.match(rest) is not None:
            return None
        if not own:
            rest = _OBJECT.sub(lambda m: f"{m[1]}{person}", rest, count=1)
    elif _SUBJECT.match(rest) is None and _FOR_US.match(rest) is None:
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


# The rule a constraint or condition sets, said after it: "..., so keep the sugar right
# down, no puddings", "..., so please message me instead", "..., so any hotel you find
# has to have a lift". An errand ("so swap the bacon") or a clause leaning on what was
# said before it ("so keep it out") is not one.
_SO = re.compile(r"(?:,\s*|\s)(?:so|which means|that means)\s+(?P<rule>\S.*?)[.!]*$", re.I)
_RULE_START = re.compile(
    r"^(?:please\s+)?(?P<verb>keep|avoid|go easy|make sure|stick to|steer clear|leave out|"
    r"cut out|message|text|email|write|use|check|ask|always|never|don't|do not)\b"
    r"|^(?P<none>no|nothing|only)\b"
    r"|^(?P<any>any|every|anywhere|wherever|whatever|all)\b.*\b(?:has to|have to|must|"
    r"needs? to|should)\b",
    re.IGNORECASE,
)
_LEANS = re.compile(r"\b(?:it|that|this|them|those|there)\b", re.IGNORECASE)
_TO_THIRD_PERSON = (
    (r"\byou are\b", "the assistant is"),
    (
        r"\byou\b(?= (?:can|could|will|would|should|may|might|must|also|always|never)\b)",
        "the assistant",
    ),
    (r"\byou (?=[a-z]+\b)", "the assistant @"),  # "you pick": "the assistant picks"
    (r"\byou\b", "the assistant"),
    (r"\byour\b", "the assistant's"),
    *_THIRD_PERSON,
)


def _consequence(sentence: str) -> tuple[str, str] | None:
    """(the user's rule, its words) said after "so" in a sentence naming a condition; None
    when the words after it are no rule (see `_RULE_START`)."""
    match = _SO.search(sentence)
    if match is None:
        return None
    said = match["rule"]
    start = _RULE_START.match(said)
    if start is None or _LEANS.search(said):
        return None
    rule = said
    for pattern, replacement in _TO_THIRD_PERSON:
        rule = re.sub(pattern, replacement, rule, flags=re.IGNORECASE)
    rule = re.sub(r"@([a-z]+)", lambda m: _third_person_verb(m[1]), rule)
    rule = re.sub(r"^please\s+", "", rule, flags=re.IGNORECASE)
    if start["verb"]:
        negation = re.match(r"(?:don't|do not)\s+", rule, re.IGNORECASE)
        if negation is not None:
            return as_sentence(
                f"The user wants the assistant not to {rule[negation.end() :]}"
            ), said
        return as_sentence(f"The user wants the assistant to {rule[0].lower()}{rule[1:]}"), said
    if start["none"]:
        return as_sentence(f"The user wants {rule[0].lower()}{rule[1:]}"), said
    return as_sentence(f"For the user, {rule[0].lower()}{rule[1:]}"), said


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
