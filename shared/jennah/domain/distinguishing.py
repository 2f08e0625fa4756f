"""The words that carry a fact, and whether two statements differ in them (the guard of the
suppression check, `domain.suppression.match`).

An embedding scores "Mira swims on Tuesdays" and "Mira swims on Thursdays" as nearly the
same sentence (MiniLM: 0.985), though they are different facts; it scores some true
paraphrases lower than that. The guard looks at the words a fact hangs on, without a model:

- anchors: numbers (digits, "one" to "twelve", "first" to "twelfth", "once", "twice"),
  weekdays, months, times of day, and
  the people a fact is about (kin and relations: "brother", "wife", "neighbour"...).
  Two statements whose anchors differ in ANY way are different facts ("... 7 years old" /
  "... 9 years old"; "Ana ..." / "Ana's brother ...").
- names: capitalised words (the opening word too unless it is a stop word or a common
  verb; a word that is a name in either statement is a name in both). Names that differ
  are different facts ("Tokyo" / "Osaka"; "St Mary's hospital" / "the city clinic").
- things: the content words left (stop words and common verbs removed, lightly stemmed).
  When EACH statement has a thing the other lacks ("peanuts" / "shellfish", "dark" /
  "light"), the thing changed. Measured (bench/suppression.py) this cost more true
  paraphrases ("pills" / "tablets", "manager" / "manages") than it saved new facts, so the
  suppression rule does not guard it (`suppression.SUPPRESSION_GUARD`); it is reported.

Verbs are left out of the things because paraphrases swap them most ("lives" / "resides",
"goes to" / "attends"). The word lists are short and English; a statement in another
language has no anchors found and falls back to names and the similarity.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


def _wordlist(words: str) -> frozenset[str]:
    return frozenset(words.split())


class Difference(StrEnum):
    """Which kind of fact-carrying word two statements differ in."""

    ANCHORS = "anchors"
    NAMES = "names"
    THINGS = "things"


_STOP = _wordlist(
    """a an the is are was were be been being am do does did not no to of in on at by for
    with from as and or but this that these those it its their them they there he she his
    her him hers we our us you your i me my mine has have had having will would can could
    should shall may might must very really every each than then so too also just only
    about into over under up down out off own same such what which who whom whose user
    users one's any other more most much many some all both either neither how"""
)
# Common verbs and feelings (stems): the words paraphrases swap most.
_VERBS = _wordlist(
    """liv resid go goe attend call nam tak drink get mak lik prefer want send sent work start
    play speak follow giv caus see pay cost celebrat born leav depart fli run train prepar
    mov relocat earn learn teach lov hat dislik enjoy own driv support owe lend lent expect
    diagnos practis stand eat keep use need say said tell told know think feel seem becom
    bring buy sell show hold meet visit stay spend wear come came put set let afraid scar
    fear frighten worri fond keen"""
)
_KIN = {
    "mum": "mother", "mom": "mother", "mother": "mother", "dad": "father", "father": "father",
    "grandma": "grandmother", "granny": "grandmother", "grandmother": "grandmother",
    "grandpa": "grandfather", "grandfather": "grandfather", "wife": "spouse",
    "husband": "spouse", "spouse": "spouse", "married": "spouse", "partner": "partner",
    "brother": "brother", "sister": "sister", "son": "son", "daughter": "daughter",
    "niece": "niece", "nephew": "nephew", "aunt": "aunt", "uncle": "uncle",
    "cousin": "cousin", "friend": "friend", "boss": "boss", "colleague": "colleague",
    "neighbour": "neighbour", "neighbor": "neighbour", "girlfriend": "partner",
    "boyfriend": "partner", "fiance": "partner", "fiancee": "partner", "kid": "child",
    "child": "child", "children": "child", "parent": "parent", "grandson": "grandchild",
    "granddaughter": "grandchild", "stepson": "son", "stepdaughter": "daughter",
}  # fmt: skip
_NUMBERS = {
    word: str(value)
    for words in (
        "zero one two three four five six seven eight nine ten eleven twelve",
        "zeroth first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth",
        "never once twice thrice",
    )
    for value, word in enumerate(words.split())
}
_WHEN = _wordlist(
    """monday tuesday wednesday thursday friday saturday sunday january february march april
    may june july august september october november december morning afternoon evening
    night weekend"""
)
_TOKEN = re.compile(r"[^\W\d_][\w'\u2019.@-]*[^\W_]|[^\W\d_]|\d[\d,.:]*\w*")
_SUFFIXES = ("ies", "ing", "ly", "ed", "es", "s", "ic", "y", "e")


@dataclass(frozen=True)
class FactWords:
    """The fact-carrying words of one statement."""

    anchors: frozenset[str]
    names: frozenset[str]
    things: frozenset[str]


def differences(a: str, b: str) -> frozenset[Difference]:
    """The kinds of fact-carrying word in which statements `a` and `b` differ (empty: the
    same fact as far as the words tell)."""
    names = _names(a) | _names(b)
    left, right = fact_words(a, names), fact_words(b, names)
    found: set[Difference] = set()
    if left.anchors != right.anchors:
        found.add(Difference.ANCHORS)
    if left.names != right.names:
        found.add(Difference.NAMES)
    if left.things - right.things and right.things - left.things:
        found.add(Difference.THINGS)
    return frozenset(found)


def fact_words(statement: str, names: frozenset[str] = frozenset()) -> FactWords:
    """Anchors, names (`names`: lower-cased words known to be names, else the statement's
    own) and things of one statement."""
    names = names or _names(statement)
    anchors: set[str] = set()
    found_names: set[str] = set()
    things: set[str] = set()
    for token in _TOKEN.findall(statement):
        word = _word(token)
        anchor = None if word == "may" and token.islower() else _anchor(word)
        if anchor is not None:
            anchors.add(anchor)
        elif word in names:
            found_names.add(word)
        elif word not in _STOP and (stem := _stem(word)) not in _VERBS:
            things.add(stem)
    return FactWords(frozenset(anchors), frozenset(found_names), frozenset(things))


def _names(statement: str) -> frozenset[str]:
    """Capitalised words; the opening one only when it is no stop word or common verb
    ("Mira starts ..." has a name, "Send the user ..." has none)."""
    tokens = _TOKEN.findall(statement)
    words = [(t, _word(t)) for t in tokens]
    return frozenset(
        word
        for position, (token, word) in enumerate(words)
        if token[0].isupper()
        and word not in _STOP
        and (position > 0 or _stem(word) not in _VERBS)
        and _anchor(word) is None
    )


def _word(token: str) -> str:
    word = token.casefold().replace("\u2019", "'").rstrip(".'")
    return word[:-2] if word.endswith("'s") else word


def _anchor(word: str) -> str | None:
    if word[0].isdigit():
        return "#" + re.sub(r"(?<=\d)(st|nd|rd|th)$", "", word.replace(",", ""))
    if word in _NUMBERS:
        return "#" + _NUMBERS[word]
    single = word[:-1] if word.endswith("s") else word
    for candidate in (word, single):
        if candidate in _WHEN:
            return "@" + candidate
        if candidate in _KIN:
            return "&" + _KIN[candidate]
    return None


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word
