"""Pure rules of memory:query's retrieval: the modes, the query words a word search
looks for, and the merge of the ranked lists (semantic, word, typo-tolerant word).

The merge is the seed design's interleave: the top MERGE_LEAD by meaning lead, the
keyword matches follow (the word matches scoring at least KEYWORD_SCORE_SHARE of the
best one, then the best typo-tolerant match of each word the word matches do not
hold), the rest of the semantic list fills in, duplicates removed. Chosen over
reciprocal-rank fusion by measurement on LoCoMo (the first five conversations;
README, "Retrieval: hybrid search on LoCoMo"): R@10 0.662 against 0.577 (k 60) and
0.606 (k 20). `reciprocal_rank_fusion` is kept for that
comparison.

A hybrid query that names a month or a year ("in July", "June 2023", "in 2022")
also says when: `named_period` reads that period, and the merged list's memories
valid within it move ahead of the others, each group in merged order
(`promote_within`), out of a pool of PERIOD_POOL by meaning instead of topK.
Measured on the first five LoCoMo conversations (bench/locomo.py): R@10 0.662 ->
0.678 (the held-out half, only reported: 0.611 -> 0.627).

A hybrid query that names a value of a memory's metadata (a speaker "Melanie", a
project "Apollo") moves the merged memories carrying that value ahead of the others,
each group in merged order (`promote_named`), before the period rule: a memory
labelled with what the query names is about it. It reorders only the candidates the
parts already returned (no deeper search). Tuned half of LoCoMo: R@10 0.666 -> 0.681,
multi-hop 0.407 -> 0.440 (README, "Retrieval: hybrid search on LoCoMo").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class RetrievalMode(StrEnum):
    """How memory:query's semantic section searches: by meaning and words together
    (the default), by meaning alone, or by words alone."""

    HYBRID = "HYBRID"
    SEMANTIC = "SEMANTIC"
    LEXICAL = "LEXICAL"


# At most this many distinct words of a query reach the word search (the rest are dropped).
MAX_QUERY_WORDS = 32
# The hybrid merge: this many results by meaning lead the keyword matches, and a word
# match joins them only when it scores at least this share of the best word match
# (a match on a speaker's name alone is no evidence).
MERGE_LEAD = 3
KEYWORD_SCORE_SHARE = 0.5
# Reciprocal-rank fusion's usual rank offset (for the comparison of merges).
RRF_K = 60
# The typo-tolerant search matches words of at least this many characters
# (shorter ones share too few letter trigrams to tell a typo from another word).
MIN_FUZZY_WORD_LENGTH = 4

# A metadata value a query can name: at most this many words (longer values are text,
# not names, and not worth the tokenizing).
MAX_NAME_WORDS = 4

# A query naming a period draws its candidates from this many results by meaning
# (tuned half: a pool of 20 / 30 / 50 gives R@10 0.671 / 0.677 / 0.679; each result
# loaded costs the store about 0.1 ms, so 30 keeps most of the gain for half the cost).
PERIOD_POOL = 30

_WORD = re.compile(r"\w+", re.UNICODE)
_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
# A capitalised month name, with the year when one follows ("June 2023", "3 June, 2023").
_MONTH_DATE = re.compile(
    r"\b(" + "|".join(_MONTHS) + r")\b(?:\s+\d{1,2}(?:st|nd|rd|th)?\b)?(?:,?\s+(\d{4})\b)?"
)
_ISO_MONTH = re.compile(r"\b(\d{4})-(\d{2})(?:-\d{2})?\b")
_YEAR = re.compile(r"\b(19\d\d|20\d\d)\b")

# Words a question is made of and a memory is not found by: articles, auxiliaries,
# pronouns, prepositions, question words, and the verbs questions are built with.
_STOPWORD_TEXT = """
    a about above after again against all also am an and any are aren as at be because been
    before being below between both but by can cannot could couldn did didn do does doesn
    doing don down during each either else ever few for from further had hadn has hasn have
    haven having he her here hers herself him himself his how i if in into is isn it its
    itself just let me might more most must mustn my myself neither no nor not now of off on
    once only or other ought our ours ourselves out over own same shall shan she should
    shouldn so some such than that the their theirs them themselves then there these they
    this those through to too under until up upon us very was wasn we were weren what when
    whence where whereas whether which while who whom whose why will with won would wouldn
    yet you your yours yourself yourselves s t d ll m re ve
    anything something everything nothing someone anyone everyone kind sort thing things
    tell told say said like likely many much often recently last ago
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def query_words(text: str) -> list[str]:
    """The distinct lowercase words of `text` a word search looks for, in order:
    letters and digits only (so no search syntax reaches a store), stopwords dropped,
    at most MAX_QUERY_WORDS."""
    words: list[str] = []
    for word in _WORD.findall(text.lower()):
        word = word.strip("_")
        if word and word not in STOPWORDS and word not in words and "_" not in word:
            words.append(word)
        if len(words) == MAX_QUERY_WORDS:
            break
    return words


def fuzzy_words(words: Sequence[str]) -> list[str]:
    """The words long enough for the typo-tolerant search."""
    return [word for word in words if len(word) >= MIN_FUZZY_WORD_LENGTH]


def unmatched_words(words: Sequence[str], texts: Iterable[str]) -> list[str]:
    """The words none of `texts` holds, up to a common English ending ("adopting" is
    held by "adopted", "lisbn" by nothing): these, and only these, are worth a
    typo-tolerant search. (A word inside a longer one counts as held: that only
    spares a typo search.)"""
    joined = "\n".join(texts).lower()
    return [word for word in words if _bare(word) not in joined]


def _bare(word: str) -> str:
    """`word` without one common English ending, keeping at least three letters."""
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


_ENDINGS = ("ing", "ed", "es", "s", "ly", "er")


def trigrams(word: str) -> list[str]:
    """The distinct letter trigrams of one word, in order."""
    grams: list[str] = []
    for i in range(len(word) - 2):
        gram = word[i : i + 3]
        if gram not in grams:
            grams.append(gram)
    return grams


def reciprocal_rank_fusion(
    ranked_lists: Sequence[tuple[Sequence[str], float]], rrf_k: int = RRF_K
) -> list[tuple[str, float]]:
    """(id, fused score) over every id of the (ranked ids, weight) lists, best first,
    ties by id; an id repeated within one list counts at its first rank."""
    scores: dict[str, float] = {}
    for ids, weight in ranked_lists:
        for rank, record_id in enumerate(_distinct(ids), start=1):
            scores[record_id] = scores.get(record_id, 0.0) + weight / (rrf_k + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def interleave(semantic: Sequence[str], words: Sequence[str], lead: int = MERGE_LEAD) -> list[str]:
    """The seed design's merge: the first `lead` semantic ids, then the word matches,
    then the rest of the semantic list; duplicates removed, first place kept."""
    return _distinct([*semantic[:lead], *words, *semantic[lead:]])


def lexical_order(words: Sequence[str], fuzzy: Sequence[str]) -> list[str]:
    """A word search's answer: the exact word matches, then the typo-tolerant ones."""
    return _distinct([*words, *fuzzy])


def strong_matches(
    scored: Sequence[tuple[str, float]], share: float = KEYWORD_SCORE_SHARE
) -> list[str]:
    """The ids of the (id, score) matches scoring at least `share` of the best, in order."""
    if not scored:
        return []
    best = max(score for _, score in scored)
    return [record_id for record_id, score in scored if score >= share * best]


@dataclass(frozen=True)
class Period:
    """A month of a year, a month of any year (year None), or a whole year (month None)."""

    year: int | None
    month: int | None

    def holds(self, instant: datetime | None) -> bool:
        return (
            instant is not None
            and (self.year is None or instant.year == self.year)
            and (self.month is None or instant.month == self.month)
        )


def named_period(text: str) -> Period | None:
    """The period a query names: the first capitalised month name (with the year that
    follows it, if any; "May" or "March" opening the text is a verb), else an ISO date's
    month ("2023-06-03"), else a year from 1900 to 2099; None when it names none.
    A day is not kept: a day named in a question is rarely the day its memory was
    written (tuned half: R@10 0.675 with the day against 0.677 without)."""
    for match in _MONTH_DATE.finditer(text):
        if match.start() == 0 and match.group(1) in ("May", "March"):
            continue
        year = int(match.group(2)) if match.group(2) else None
        return Period(year, _MONTHS.index(match.group(1)) + 1)
    iso = _ISO_MONTH.search(text)
    if iso is not None and 1 <= int(iso.group(2)) <= 12:
        return Period(int(iso.group(1)), int(iso.group(2)))
    lone = _YEAR.search(text)
    return Period(int(lone.group(1)), None) if lone is not None else None


def promote_within(
    ids: Sequence[str], valid_at: Mapping[str, datetime | None], period: Period
) -> list[str]:
    """`ids` with those valid (by `valid_at`) within `period` first, each group in order."""
    inside = [i for i in ids if period.holds(valid_at.get(i))]
    return _distinct([*inside, *ids])


def names_a_value(metadata: Mapping[str, str], words: AbstractSet[str]) -> bool:
    """Whether the query's `words` (from `query_words`) name one of `metadata`'s values.
    Only a value written as a name counts, capitalised ("Melanie", "New York"; not a
    label such as "user" or "email", which would lift every memory carrying it): one
    that is one of the words, lowercased ("Melanie" in "What has Melanie painted?"),
    or one of 2 to MAX_NAME_WORDS words whose words (stopwords dropped) are all among
    them ("New York" in "trips to new york"). Numbers alone ("3", "2023") name
    nothing; nor does a one-word value the query only holds a part of ("D1:3")."""
    return any(_value_named(value, words) for value in metadata.values())


def _value_named(value: str, words: AbstractSet[str]) -> bool:
    if not value[:1].isupper():
        return False  # a label, not a name
    lowered = value.lower()
    if lowered in words:
        return not lowered.isdigit()
    if " " not in lowered or lowered.count(" ") >= MAX_NAME_WORDS:
        return False  # one word the query does not hold, or text rather than a name
    named = [w for w in _WORD.findall(lowered) if w not in STOPWORDS]
    return bool(named) and all(w in words for w in named) and not all(w.isdigit() for w in named)


def promote_named(
    ids: Sequence[str], metadata: Mapping[str, Mapping[str, str]], words: Sequence[str]
) -> list[str]:
    """`ids` with those whose metadata (by `metadata`) the query's `words` name first
    (`names_a_value`), each group in order."""
    wanted = frozenset(words)
    if not wanted:
        return list(ids)
    known: dict[str, bool] = {}  # values repeat across memories (a speaker's name)

    def named(record_id: str) -> bool:
        for value in metadata.get(record_id, {}).values():
            hit = known.get(value)
            if hit is None:
                hit = known[value] = _value_named(value, wanted)
            if hit:
                return True
        return False

    first = [i for i in ids if named(i)]
    return _distinct([*first, *ids])


def merged_score(rank: int) -> float:
    """The score of the hybrid merge's result at `rank` (from 1): 1 / rank."""
    return 1.0 / rank


def _distinct(ids: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for record_id in ids:
        if record_id not in seen:
            seen.add(record_id)
            out.append(record_id)
    return out
