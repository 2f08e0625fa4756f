"""A candidate's claim fields, decided in code from its text, its quote and its turns.

Code decides what it can, so a small model writes no more tokens than a fact's turn
and text (every generated token costs the local model ~0.15 s). A model MAY propose
summary, whenToUse, durability, validUntil, strength and confidence (Vertex does, via
the extraction schema); what it proposes is checked, what it leaves out is decided here:

- type: the extractor's (a directive stays a directive); a plain "fact" is refined
  by its words: constraint (allergies, reactions said as symptoms, diets by name or
  by rule, "cannot eat" / "can't manage", access needs, limits), preference
  ("prefers", "likes", "favourite"), identity (the user's name, pronouns, age), else
  fact. A fact the assistant supplied stays a fact.
- about: who or what it concerns ("the user", "the user's son", a name).
- summary: the model's one line, else the text's first line, at most SUMMARY_CHARS.
- body: the text itself (planning writes it).
- whenToUse: the model's, else a line for the type.
- authority: user_explicit when a user turn it cites gives an instruction or says
  "remember ..."; user_stated when a user turn it cites states it; inferred otherwise
  (the assistant said it, or no user turn supports it).
- strength: hard for a directive or constraint worded as a rule ("always", "never",
  "must", "cannot") or naming an allergy, an intolerance or coeliac disease, and for a
  constraint naming any safety rule (a reaction, a diet, an access need: `_SAFETY`;
  design §13), or when the model says hard; soft otherwise. The
  checks (`checks`) downgrade what is not cited from a user turn.
- confidence: the model's (clamped to 0..1), else by authority (CONFIDENCE).
- validUntil: the model's absolute instant when it is after the clock; else the end
  (local midnight) of the last day the fact is for: "today", "tonight", "this
  evening" the clock's day, "tomorrow" the next, and a date written out ("on Tuesday
  14 October 2025", "until 2025-10-14") when it is not before the clock's day and it is
  the day of an event (an appointment, a booking, a deadline, a dinner ...), or it is
  the clock's day (the next) and the quote says "tonight" ("tomorrow"): a model that
  writes dates absolute (`local`) has replaced the words in the text. Days are
  the scope's own: the clock (observedAt, else the receipt time) read in the scope's
  `time_zone` (ScopeRecord, IANA, default UTC), so "pizza night is tonight" lasts until
  midnight where the workspace is. A date after "from", "since", "starting" or "the week
  of" starts something and sets no expiry.
- durability: the model's, else passing when the claim has a validUntil or says it
  is for now ("currently", "at the moment", "this week"), seasonal for a season or
  term ("this summer", "this season", "this term"), durable otherwise.
- sensitivity: by code, from the words: health (a doctor, a diagnosis, medication,
  pregnancy ...), finances (salary, debt, a mortgage, savings ...), minors (a son, a
  daughter, a child ...), in that order; normal otherwise. A rule (a directive or a
  constraint) is a hard constraint the brief must carry (design §13: "every hard
  constraint does"; §11: "dietary needs recorded in memory shape the query"), while a
  sensitive claim never shows in it (§10). So a rule is health only when it names a
  condition or a treatment (a diagnosis, medication, pregnancy ...), finances as any
  claim is, and never minors: who a safety rule protects (a child's allergy) or where
  care happens (a dentist, a clinic) does not keep it from the agent. Allergies,
  intolerances, coeliac disease, diets and accessibility needs are what a constraint is
  about, never a health topic, for any type.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from jennah.domain import claims
from jennah.domain.formation import ExtractedCandidate, Turn, TurnRole, quoted_in
from jennah.domain.models import Authority, Durability, MemoryType, Sensitivity, Strength

SUMMARY_CHARS = claims.SUMMARY_CHARS
# Confidence when the model gives none: how sure a claim is, by who supports it.
CONFIDENCE: dict[Authority, float] = {
    Authority.USER_EXPLICIT: 1.0,
    Authority.USER_STATED: 0.9,
    Authority.INFERRED: 0.7,
}
UNATTRIBUTED_CONFIDENCE = 0.5  # an inference whose cited turns are unusable

WHEN_TO_USE: dict[MemoryType, str] = {
    MemoryType.DIRECTIVE: "Whenever the assistant acts for the user",
    MemoryType.CONSTRAINT: "When planning, booking or choosing anything for the user",
    MemoryType.PREFERENCE: "When choosing or recommending something for the user",
    MemoryType.IDENTITY: "When addressing or describing the user",
}

# What someone cannot have or do, a diet, an access need: a safety rule (hard), and
# with a limit (a budget, "at most") what makes a fact a constraint.
_SAFETY = (
    rf"{claims.SAFETY_CONDITION_WORDS}|(?:cannot|can't|can not|must not|mustn't)"
    r" (?:eat|have|drink|take|use|walk|drive|fly|tolerate|digest|do|manage|handle|climb)|"
    rf"{claims.DIET_WORDS}|{claims.ACCESS_WORDS}|"
    r"(?:does not|doesn't|do not|don't|never|no longer) (?:eats?|drinks?|touch(?:es)?)|"
    rf"{claims.REACTION_WORDS}|"
    r"makes? (?:[\w'-]+ ){1,4}?(?:really |very |so |quite )?(?:ill|sick|unwell|poorly)|"
    rf"{claims.DIET_RULE_WORDS}"
)
_CONSTRAINT = re.compile(rf"\b(?:{_SAFETY}|budget (?:of|is)|no more than|at most)\b", re.IGNORECASE)
_SAFETY_RULE = re.compile(rf"\b(?:{_SAFETY})\b", re.IGNORECASE)
_PREFERENCE = re.compile(
    r"\b(?:prefers?|preferred|likes|loves|enjoys|hates|dislikes|favou?rites?|"
    r"is a fan of|would rather)\b",
    re.IGNORECASE,
)
_IDENTITY = re.compile(
    r"^the user(?:'s (?:full |first |last )?name is|'s pronouns|'s birthday| is called|"
    r" is named| goes by| was born| is \d+(?: years old)?\b)",
    re.IGNORECASE,
)
_BY_ASSISTANT = re.compile(r"^the assistant\b", re.IGNORECASE)
_RULE_WORDS = re.compile(
    r"\b(?:always|never|must|mustn't|must not|do not|don't|under no circumstances|"
    r"at all times|without exception|not allowed|cannot|can't|only ever|"
    rf"{claims.SAFETY_CONDITION_WORDS})\b",
    re.IGNORECASE,
)
# An explicit instruction or request to remember, as the user worded it.
_EXPLICIT = re.compile(
    r"^\s*(?:please\s+)?(?:remember|note|keep in mind|don't forget|do not forget|make sure|"
    r"always|never|from now on|going forward)\b|\b(?:remember that|please remember|"
    r"for the record|make a note|from now on|going forward)\b",
    re.IGNORECASE,
)
_SEASONAL = re.compile(
    r"\b(?:this|next|every) (?:summer|winter|spring|autumn|fall|season|term|semester)\b|"
    r"\bschool year\b|\bduring (?:the )?(?:summer|winter|holidays)\b",
    re.IGNORECASE,
)
_PASSING = re.compile(
    r"\b(?:currently|at the moment|right now|for now|temporarily|this week|this weekend|"
    r"for the time being)\b",
    re.IGNORECASE,
)
_TODAY = re.compile(r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b", re.I)
_TOMORROW = re.compile(r"\btomorrow\b", re.IGNORECASE)
_MONTHS = [name.lower() for name in calendar.month_name[1:]]
_MONTH = "|".join(_MONTHS)
# A day written out: "(on) (Tuesday) 14 October 2025", "October 14, 2025" or ISO
# "2025-10-14"; the word before it tells whether it starts something.
_DAY = re.compile(
    rf"(?P<before>\b\w+\s+)?(?:(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday),?\s+)?"
    rf"(?:(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<m1>{_MONTH}),?\s+(?P<y1>\d{{4}})|"
    rf"(?P<m2>{_MONTH})\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y2>\d{{4}})|"
    rf"(?P<y3>\d{{4}})-(?P<m3>\d{{2}})-(?P<d3>\d{{2}}))",
    re.IGNORECASE,
)
_STARTS = frozenset({"from", "since", "starting", "beginning", "after"})
_WEEK_OF = re.compile(r"\bweek of\s*$", re.IGNORECASE)
# What ends on its day: an appointment, a booking, a deadline, an outing. A day written
# out in any other claim ("starts a new job on ...") sets no expiry: the claim outlasts it.
_EVENT = re.compile(
    r"\b(?:appointments?|meetings?|bookings?|booked|reservations?|reserved|flights?|due|"
    r"deadline|party|dinner|lunch|breakfast|brunch|concert|match|game|interview|check-?up|"
    r"exams?|tests?|recital|performance|show|screening|"
    r"visiting|visit|arrives?|arriving|leaves|leaving|trip|ceremony|wedding|funeral)\b",
    re.IGNORECASE,
)
# Health words: a condition or a treatment (what a rule may not show either), and where
# or from whom care comes (only a statement is sensitive for these).
_CONDITION = re.compile(
    r"\b(?:diagnos\w*|diabet\w*|"
    r"asthma|cancer|tumou?r|therap(?:y|ist)|counsell?\w*|medications?|medicine|prescri\w*|"
    r"pregnan\w*|illness|(?<!coeliac )(?<!celiac )disease|depress\w*|anxiety|adhd|autism|"
    r"migraines?|blood pressure|"
    r"physio\w*|injur\w*|vaccin\w*|mental health|insulin|chemo\w*)\b",
    re.IGNORECASE,
)
_CARE = re.compile(
    r"\b(?:doctors?|gp|dentist|dental|hospital|clinic|surgery|operation|appointment with dr)\b",
    re.IGNORECASE,
)
RULE_TYPES = frozenset({MemoryType.DIRECTIVE, MemoryType.CONSTRAINT})
_FINANCES = re.compile(
    r"\b(?:salary|salaries|income|debts?|loans?|mortgage|bank account|savings|invest\w*|"
    r"pension|tax(?:es)?|credit card|overdraft|paycheck|pay rise|bonus|net worth|budget)\b",
    re.IGNORECASE,
)
_MINORS = re.compile(
    r"\b(?:sons?|daughters?|child|children|kids?|bab(?:y|ies)|toddlers?|teenagers?|"
    r"grandsons?|granddaughters?|nieces?|nephews?|stepsons?|stepdaughters?)\b",
    re.IGNORECASE,
)
_ABOUT_PARTY = re.compile(r"^(?:the user's \w+|the user|the assistant)\b", re.IGNORECASE)
_ABOUT_NAME = re.compile(r"^[A-Z][\w'-]*(?: [A-Z][\w'-]*)*")


@dataclass(frozen=True)
class Claim:
    """What a candidate claims, besides its words (see the module doc)."""

    type: MemoryType
    about: str
    summary: str
    when_to_use: str
    authority: Authority
    strength: Strength
    confidence: float
    durability: Durability
    valid_until: datetime | None
    sensitivity: Sensitivity


def zone_of(name: str | None) -> ZoneInfo:
    """The scope's IANA zone; UTC when it has none or one this machine does not know."""
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def type_family(memory_type: str) -> str:
    """What reconciliation compares: a directive, a relationship, or a statement (fact,
    identity, preference, constraint: code refines these by their words, so a fact
    restated or revised may land on another of them)."""
    if memory_type in (MemoryType.DIRECTIVE, MemoryType.RELATIONSHIP):
        return memory_type
    return MemoryType.FACT.value


def refined_type(named: MemoryType, text: str) -> MemoryType:
    """A plain fact's finer type by its words; any other type as named."""
    if named is not MemoryType.FACT or _BY_ASSISTANT.match(text):
        return named
    if _CONSTRAINT.search(text):
        return MemoryType.CONSTRAINT
    if _PREFERENCE.search(text):
        return MemoryType.PREFERENCE
    if _IDENTITY.match(text):
        return MemoryType.IDENTITY
    return named


_ABOUT_USER = re.compile(r"^\s*the user\b", re.IGNORECASE)


def about_the_user(text: str) -> bool:
    """A fact about the user: "The user ...", "The user's ..."."""
    return _ABOUT_USER.match(text) is not None


def user_cited(cited: Sequence[int] | None, quote: str, turns: Sequence[Turn]) -> bool:
    """A user turn supports it: one of its cited turns, or (attribution unusable) the
    user turn that holds its quote."""
    if cited is not None:
        return any(turns[i].role is TurnRole.USER for i in cited)
    return quoted_in(quote, (t.content for t in turns if t.role is TurnRole.USER))


def assess(
    extracted: ExtractedCandidate,
    memory_type: MemoryType,
    cited: Sequence[int] | None,
    turns: Sequence[Turn],
    clock: datetime,
    zone: ZoneInfo,
) -> Claim:
    """The claim fields of a verified fact candidate (see the module doc)."""
    text, quote = extracted.text, extracted.quote
    by_user = user_cited(cited, quote, turns)
    authority = _authority(memory_type, quote, by_user)
    valid_until = _valid_until(extracted, clock, zone)
    return Claim(
        type=memory_type,
        about=_about(text),
        summary=_summary(extracted.summary or text),
        when_to_use=" ".join(extracted.when_to_use.split()) or _when_to_use(memory_type, text),
        authority=authority,
        strength=_strength(extracted, memory_type, quote),
        confidence=_confidence(extracted, authority, cited),
        durability=_durability(extracted, valid_until),
        valid_until=valid_until,
        sensitivity=sensitivity_of(text, memory_type),
    )


def _authority(memory_type: MemoryType, quote: str, by_user: bool) -> Authority:
    if not by_user:
        return Authority.INFERRED
    if memory_type is MemoryType.DIRECTIVE or _EXPLICIT.search(quote):
        return Authority.USER_EXPLICIT
    return Authority.USER_STATED


def _strength(extracted: ExtractedCandidate, memory_type: MemoryType, quote: str) -> Strength:
    proposed = extracted.strength.strip().lower()
    if proposed in (Strength.HARD, Strength.SOFT):
        return Strength(proposed)
    rule = memory_type in (MemoryType.DIRECTIVE, MemoryType.CONSTRAINT)
    words = f"{extracted.text} {quote}"
    safety = memory_type is MemoryType.CONSTRAINT and _SAFETY_RULE.search(extracted.text)
    return Strength.HARD if rule and (_RULE_WORDS.search(words) or safety) else Strength.SOFT


def _confidence(
    extracted: ExtractedCandidate, authority: Authority, cited: Sequence[int] | None
) -> float:
    if extracted.confidence is not None:
        return min(1.0, max(0.0, extracted.confidence))
    if authority is Authority.INFERRED and cited is None:
        return UNATTRIBUTED_CONFIDENCE
    return CONFIDENCE.get(authority, UNATTRIBUTED_CONFIDENCE)


def _durability(extracted: ExtractedCandidate, valid_until: datetime | None) -> Durability:
    proposed = extracted.durability.strip().lower()
    if proposed in set(Durability):
        return Durability(proposed)
    if valid_until is not None or _PASSING.search(extracted.text):
        return Durability.PASSING
    if _SEASONAL.search(extracted.text):
        return Durability.SEASONAL
    return Durability.DURABLE


def _valid_until(extracted: ExtractedCandidate, clock: datetime, zone: ZoneInfo) -> datetime | None:
    proposed = extracted.valid_until
    if proposed is not None and proposed.tzinfo is not None and proposed > clock:
        return proposed
    today = clock.astimezone(zone).date()
    last = last_day(extracted.text, extracted.quote, today)
    return None if last is None else end_of_day(last, zone)


def last_day(text: str, quote: str, today: date) -> date | None:
    """The last local day the claim is for (see the module doc); None when it has none."""
    tomorrow = today + timedelta(days=1)
    days = [today] if _TODAY.search(text) else []
    if _TOMORROW.search(text):
        days.append(tomorrow)
    for match in _DAY.finditer(text):
        day = _day_of(match)
        if day is None or day < today or _starts(text, match):
            continue
        said = (day == today and _TODAY.search(quote)) or (
            day == tomorrow and _TOMORROW.search(quote)
        )
        if said or _EVENT.search(text):
            days.append(day)
    return max(days) if days else None


def _starts(text: str, match: re.Match[str]) -> bool:
    """The day starts something ("from 9 March", "starting ...", "the week of ...")."""
    before = (match["before"] or "").strip().lower()
    return before in _STARTS or bool(
        _WEEK_OF.search(text[: match.start()] + (match["before"] or ""))
    )


def _day_of(match: re.Match[str]) -> date | None:
    try:
        if match["y1"]:
            return date(int(match["y1"]), _MONTHS.index(match["m1"].lower()) + 1, int(match["d1"]))
        if match["y2"]:
            return date(int(match["y2"]), _MONTHS.index(match["m2"].lower()) + 1, int(match["d2"]))
        return date(int(match["y3"]), int(match["m3"]), int(match["d3"]))
    except ValueError:
        return None  # no such day (31 February)


def end_of_day(day: date, zone: ZoneInfo) -> datetime:
    """The instant `day` ends where the scope is: the next local midnight."""
    return datetime.combine(day + timedelta(days=1), time(0), tzinfo=zone)


def sensitivity_of(text: str, memory_type: MemoryType | None = None) -> Sensitivity:
    """The sensitivity of a claim's words (see the module doc): a rule (directive or
    constraint) is health only for a condition or treatment it names, and never minors."""
    rule = memory_type in RULE_TYPES
    for patterns, sensitivity in (
        ((_CONDITION,) if rule else (_CONDITION, _CARE), Sensitivity.HEALTH),
        ((_FINANCES,), Sensitivity.FINANCES),
        (() if rule else (_MINORS,), Sensitivity.MINORS),
    ):
        if any(pattern.search(text) for pattern in patterns):
            return sensitivity
    return Sensitivity.NORMAL


def _about(text: str) -> str:
    text = text.strip()
    party = _ABOUT_PARTY.match(text)
    if party is not None:
        return party[0].lower()
    name = _ABOUT_NAME.match(text)
    return name[0] if name is not None else ""


def _summary(text: str) -> str:
    return claims.summary_line(text)


def _when_to_use(memory_type: MemoryType, text: str) -> str:
    line = WHEN_TO_USE.get(memory_type)
    if line is not None:
        return line
    about = _about(text)
    return f"When {about} comes up" if about else "When the conversation touches on this"
