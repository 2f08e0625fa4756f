"""Keyed memory: an agent's notebook of durable entries named by subject, and bounded recall.

Pure rules (keyed-memory-and-recall.md), no I/O.

How entries are stored. A keyed entry is NOT a memory record (claim); it lives in its own
tables (`keyed_memories`, `keyed_memory_terms`, `keyed_memory_links`, in SQLite and in
Spanner), for four reasons that make the shared record clearly worse here:

- Version. An entry's `version` moves only when the entry is written with the right
  `expectedVersion`. A record's `revision` also moves when the lifecycle pass, a
  supersession, a memory:commit replace or an issue-17 edit touches the claim: an agent
  would see its expectedVersion fail for a change nobody made to the entry.
- Identity. An entry is updated in place under its key; a claim is edited by supersession
  (a new record, a new id), and its id is content-derived.
- The claim surfaces (memory:query, memory:search, the brief, the lifecycle pass, OKF
  export and import, the memory card) are built for claims with evidence, validity and a
  lifecycle. An entry has none of them; kept apart, none of those surfaces shows,
  expires, demotes, ranks or exports an entry, and none of them had to change.
- Recall compares request words with keys AND contents and must rank identically on both
  stores; the record's keyword index covers text only and ranks by each store's own
  relevance (BM25, SCORE). Entries get their own term index (`terms`), and recall its own
  score (distinct words matched). A remember also leaves the scope's claim generation alone, so it
  never invalidates the in-process vector index or claim cache of memory:query.

What stays unused: `memory_records.key` and its unique (scope, key) index stay in both
schemas, always NULL (dropping a column means rebuilding the SQLite table with its FTS
triggers and a Spanner schema change; a later schema version may drop it), and
`memory_links` stays the table of record-to-record links memory:commit plans write.

Versions: 0 means "absent": `expectedVersion` 0 creates (ALREADY_EXISTS when the key is
taken); N updates only while the stored version is N, else ABORTED with reason
KEYED_MEMORY_VERSION_MISMATCH and `currentVersion` (0 when the key is absent). A write
answers version N + 1. Linking and unlinking change an entry's links, never its version
or update time.

Links are symmetric: one stored row per linked pair, (lesser key, greater key). An entry
has at most MAX_LINKS links counting both directions; forgetting an entry removes every
link to or from it.

Recall (`select`): the shortlist is the entries sharing at least one scoring word with
the request, best first by score (how many distinct scoring words the key or content
holds), most recently updated first among equals, then key. Stop words never score, nor
does a word more than COMMON_WORD_ENTRIES entries of the scope hold (it tells them apart
no better than a stop word), unless no rarer word is left (`scoring_words`). An optional
judge keeps and re-orders a subset of the shortlist. Matches are added in that order
until the next one does not fit the token budget; then the directly linked neighbours of
the added matches, in the same order (each match's neighbours most recently updated
first), while each fits; the first that does not fit ends recall. Never over budget.
Tokens are counted with the brief's tokenizer (domain.brief.count_tokens) over
`key + "\\n" + content`, once, when the entry is written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field

from jennah.errors import Aborted, AlreadyExists, FailedPrecondition, InvalidArgument

KEY_PATTERN = re.compile(r"^[a-z0-9_-]{1,100}$")
MAX_KEY_CHARS = 100
MAX_CONTENT_CHARS = 4_000
MAX_LINKS = 12
MAX_REQUEST_CHARS = 10_000  # the words of a recall or search request
MAX_TOKEN_BUDGET = 100_000
SHORTLIST = 50  # entries the lexical shortlist holds (what a judge sees)
# A word held by more entries than this tells the scope's entries apart no better than a
# stop word: it does not count (unless the request has no rarer word; see scoring_words).
COMMON_WORD_ENTRIES = 500
MAX_QUERY_WORDS = 64  # distinct request words a recall or search compares
VERSION_MISMATCH = "KEYED_MEMORY_VERSION_MISMATCH"
LINK_BOUND = "KEYED_MEMORY_LINK_LIMIT"
_WORD = re.compile(r"[^\W_]+")
# Words too common to tell entries apart: left out of the term index and of requests.
STOP_WORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did", "do",
    "does", "for", "from", "had", "has", "have", "he", "her", "him", "his", "how", "i", "if",
    "in", "into", "is", "it", "its", "me", "my", "no", "not", "of", "on", "or", "our", "she",
    "so", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this",
    "those", "to", "too", "us", "was", "we", "were", "what", "when", "where", "which", "who",
    "why", "will", "with", "would", "you", "your",
})  # fmt: skip


class KeyedMemory(BaseModel):
    """One entry: its key, content, version (1 on create, +1 per update) and links."""

    key: str
    content: str
    version: int
    links: list[str] = Field(default_factory=list)  # linked keys, in key order
    token_count: int = 0
    create_time: datetime
    update_time: datetime


class Via(StrEnum):
    MATCH = "MATCH"
    LINK = "LINK"


class Recalled(BaseModel):
    entry: KeyedMemory
    via: Via


class Recall(BaseModel):
    memories: list[Recalled]
    token_count: int


class Match(BaseModel):
    """A shortlisted entry and how many distinct request words it holds."""

    entry: KeyedMemory
    score: int


# validation


def validate_key(key: str, field: str = "key") -> str:
    if not KEY_PATTERN.match(key):
        raise InvalidArgument(
            f"{field} {key[:120]!r} must be 1-{MAX_KEY_CHARS} characters of lowercase "
            "letters, digits, '-' and '_'",
            reason="INVALID_KEY",
            field=field,
        )
    return key


def validate_content(content: str) -> str:
    if not content.strip():
        raise InvalidArgument("content must not be empty", field="content")
    if len(content) > MAX_CONTENT_CHARS:
        raise InvalidArgument(
            f"content holds {len(content)} characters; at most {MAX_CONTENT_CHARS} are allowed",
            reason="CONTENT_TOO_LONG",
            field="content",
            metadata={"limit": str(MAX_CONTENT_CHARS)},
        )
    return content


def validate_expected_version(version: int) -> int:
    if version < 0:
        raise InvalidArgument(
            f"expectedVersion must be 0 (create) or a stored version; got {version}",
            field="expectedVersion",
        )
    return version


def validate_request(text: str, field: str) -> list[str]:
    """The distinct words of a recall request or search query (InvalidArgument when none)."""
    if len(text) > MAX_REQUEST_CHARS:
        raise InvalidArgument(
            f"{field} holds {len(text)} characters; at most {MAX_REQUEST_CHARS} are allowed",
            field=field,
            metadata={"limit": str(MAX_REQUEST_CHARS)},
        )
    found = words(text)
    if not found:
        raise InvalidArgument(f"{field} must hold at least one word", field=field)
    return found[:MAX_QUERY_WORDS]


def validate_budget(budget: int) -> int:
    if not 1 <= budget <= MAX_TOKEN_BUDGET:
        raise InvalidArgument(
            f"tokenBudget must be 1-{MAX_TOKEN_BUDGET}; got {budget}",
            field="tokenBudget",
            metadata={"limit": str(MAX_TOKEN_BUDGET)},
        )
    return budget


# the errors a write reports


def version_mismatch(key: str, expected: int, current: int) -> Aborted:
    return Aborted(
        f"keyed memory {key!r} is at version {current}, not {expected}: reread it, "
        "reconcile the content and write again with its current version",
        reason=VERSION_MISMATCH,
        metadata={"key": key, "expectedVersion": str(expected), "currentVersion": str(current)},
    )


def key_exists(key: str, current: int) -> AlreadyExists:
    return AlreadyExists(
        f"keyed memory {key!r} exists (version {current}); expectedVersion 0 only creates",
        reason="KEYED_MEMORY_EXISTS",
        metadata={"key": key, "currentVersion": str(current)},
    )


def too_many_links(key: str) -> FailedPrecondition:
    return FailedPrecondition(
        f"keyed memory {key!r} has {MAX_LINKS} links, the most an entry may have; unlink one first",
        reason=LINK_BOUND,
        metadata={"key": key, "limit": str(MAX_LINKS)},
    )


def check_write(key: str, expected: int, current: int) -> None:
    """The version rule: raise when a write expecting `expected` meets `current`."""
    if expected == current:
        return
    if expected == 0:
        raise key_exists(key, current)
    raise version_mismatch(key, expected, current)


# words and tokens


def words(text: str) -> list[str]:
    """Distinct lowercase words (runs of letters and digits; '-' and '_' split), in order,
    without STOP_WORDS."""
    found = (w.lower() for w in _WORD.findall(text))
    return list(dict.fromkeys(w for w in found if w not in STOP_WORDS))


def terms(key: str, content: str) -> list[str]:
    """What the term index holds for an entry: the words of its key and content."""
    return sorted(set(words(key)) | set(words(content)))


def counted_text(key: str, content: str) -> str:
    return f"{key}\n{content}"


def link_pair(a: str, b: str) -> tuple[str, str]:
    """The stored row of a symmetric link."""
    return (a, b) if a < b else (b, a)


# recall


def scoring_words(counts: dict[str, int]) -> list[str]:
    """The request words that score, from how many entries hold each (counted up to
    COMMON_WORD_ENTRIES + 1): those held by at most COMMON_WORD_ENTRIES entries; when none
    is, the least common word held at all (its holders then rank by recency alone)."""
    rare = [word for word, n in counts.items() if 0 < n <= COMMON_WORD_ENTRIES]
    if rare:
        return rare
    held = [(n, word) for word, n in counts.items() if n > 0]
    return [min(held)[1]] if held else []


def shortlist_order(match: Match) -> tuple[int, float, str]:
    return (-match.score, -match.entry.update_time.timestamp(), match.entry.key)


def select(
    matches: Sequence[KeyedMemory],
    neighbours: dict[str, list[KeyedMemory]],
    budget: int,
) -> Recall:
    """Matches in order until the next does not fit, then linked neighbours while they fit."""
    chosen: list[Recalled] = []
    used = 0
    seen: set[str] = set()
    for entry in matches:
        if used + entry.token_count > budget:
            break
        chosen.append(Recalled(entry=entry, via=Via.MATCH))
        used += entry.token_count
        seen.add(entry.key)
    for match in [r.entry for r in chosen]:
        for entry in neighbours.get(match.key, []):
            if entry.key in seen:
                continue
            if used + entry.token_count > budget:
                return Recall(memories=chosen, token_count=used)
            chosen.append(Recalled(entry=entry, via=Via.LINK))
            used += entry.token_count
            seen.add(entry.key)
    return Recall(memories=chosen, token_count=used)


def by_recency(entries: Sequence[KeyedMemory]) -> list[KeyedMemory]:
    return sorted(entries, key=lambda e: (-e.update_time.timestamp(), e.key))
