"""The bounds of a claim's own fields, and the pure checks that enforce them.

A claim is a MemoryRecord (jennah.domain.models): its words (`text`, the body), what it is
(`type`, `about`, `summary`, `when_to_use`, `applies_to`), how strongly it binds
(`strength`, `pin`), who said it (`authority`, `confidence`), when it stops being true
(`durability`, `valid_until`, `status`), its links (`related`) and the front-matter keys
this service does not know (`extensions`). Every check raises InvalidArgument naming the
field (as the caller spelt it: `field` is its wire path) and the bound it breaks.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from jennah.domain import rules
from jennah.domain.models import Status
from jennah.errors import InvalidArgument

MAX_ABOUT_LENGTH = 256
MAX_SUMMARY_LENGTH = 1024
SUMMARY_CHARS = 200  # a summary derived from a claim's text (summary_line)
MAX_WHEN_TO_USE_LENGTH = 1024
MAX_APPLIES_TO = 32  # entity node ids, each an identifier
MAX_RELATED = 32  # memory ids, each an identifier
# extensions: as many keys and as long values as metadata (rules.validate_metadata)
MAX_EXTENSIONS = rules.MAX_METADATA_KEYS
MAX_EXTENSION_VALUE_LENGTH = rules.MAX_METADATA_VALUE_LENGTH

# The words that make a constraint a safety rule (design §13): a condition the body
# reacts to. One list, read by the formation's claim fields (a rule worded with them
# is hard) and by the local model's verbatim constraint finder. A regex alternation.
SAFETY_CONDITION_WORDS = (
    r"allergic|allerg(?:y|ies)|intoleran\w*|coeliac|celiac|anaphyla\w*|epi-?pens?"
)
# The other words of a safety rule both read: a reaction said as one, a diet by its
# name, a diet by its rule, an access need.
REACTION_WORDS = r"reacts? (?:badly|really badly|terribly) to|(?:bad|severe|serious) reactions? to"
DIET_WORDS = r"halal|kosher|vegan|vegetarian|pescatarian|gluten[- ]free|dairy[- ]free|nut[- ]free"
DIET_RULE_WORDS = (
    r"no (?:[\w-]+ ){0,2}?(?:meat|pork|beef|lamb|fish|shellfish|alcohol|dairy|eggs?|nuts?|"
    r"gluten|caffeine)|"
    r"low[- ](?:salt|sodium|sugar|fat|carb|fodmap)|(?:sugar|salt)[- ]free"
)
ACCESS_WORDS = (
    r"wheelchair|step[- ]free|"
    r"hearing aids?|deaf|hard of hearing|blind|partially sighted|visually impaired|"
    r"screen readers?|crutches|walking (?:stick|frame)|mobility scooter"
)

# The statuses a direct write (memory:commit) may give a new claim. `expired` is reached
# when validUntil arrives (the lifecycle pass closes the validity window) and
# `superseded` through a supersession, so neither is written by hand.
WRITABLE_STATUSES = (Status.ACTIVE, Status.DORMANT, Status.RETRACTED)

# The OKF front-matter keys of a claim (snake_case, as an exported file spells them): an
# extension may not reuse one, or an export would hold the key twice.
FRONT_MATTER_KEYS = frozenset(
    {
        "id", "type", "about", "summary", "when_to_use", "applies_to", "strength", "pin",
        "authority", "confidence", "durability", "formed_at", "last_reinforced_at",
        "reinforcement_count", "valid_until", "status", "supersedes", "superseded_by",
        "related", "sensitivity", "revision", "needs_enrichment",
    }
)  # fmt: skip

# Front-matter keys the service writes itself (an export's restore state): never an extension
# a caller gives.
RESERVED_PREFIX = "jennah_"


def check_length(value: str, bound: int, field: str) -> None:
    if len(value) > bound:
        raise InvalidArgument(
            f"{field} is {len(value)} characters; at most {bound} are allowed", field=field
        )


def summary_line(text: str) -> str:
    """The summary a claim gets when none is given: the text's first line, runs of
    whitespace folded, at most SUMMARY_CHARS characters (cut with `…`). Formation and
    edit derive summaries this way."""
    line = " ".join(text.strip().split("\n", 1)[0].split())
    return line if len(line) <= SUMMARY_CHARS else line[: SUMMARY_CHARS - 1].rstrip() + "…"


def check_confidence(value: float, field: str) -> None:
    """A finite number from 0 to 1."""
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise InvalidArgument(f"{field} is {value}; it must be from 0 to 1", field=field)


def check_identifiers(values: Sequence[str], bound: int, field: str, noun: str) -> None:
    """At most `bound` identifiers (rules.IDENTIFIER_PATTERN), each once."""
    if len(values) > bound:
        raise InvalidArgument(
            f"{field} has {len(values)} {noun}; at most {bound} are allowed", field=field
        )
    seen: set[str] = set()
    for i, value in enumerate(values):
        rules.validate_identifier(value, f"{field}[{i}]")
        if value in seen:
            raise InvalidArgument(
                f"{field}[{i}] {value!r} is listed twice; list each {noun[:-1]} once",
                field=f"{field}[{i}]",
            )
        seen.add(value)


def check_status(status: Status, field: str) -> None:
    if status not in WRITABLE_STATUSES:
        raise InvalidArgument(
            f"{field} {status.value!r} must be one of "
            + ", ".join(s.value for s in WRITABLE_STATUSES)
            + " (a claim expires when its validUntil arrives, and is superseded by a "
            "supersession)",
            field=field,
        )


def check_valid_until(valid_until: datetime, valid_at: datetime | None, field: str) -> None:
    """validUntil ends a window that starts at validAt: it must come after it."""
    if valid_at is not None and valid_until <= valid_at:
        raise InvalidArgument(
            f"{field} {valid_until.isoformat()} must be after validAt {valid_at.isoformat()}",
            field=field,
        )


def check_extensions(extensions: Mapping[str, str], field: str) -> None:
    """Unknown front-matter keys: bounded like metadata, each value JSON text, and no key
    that is one of a claim's own front-matter keys."""
    if len(extensions) > MAX_EXTENSIONS:
        raise InvalidArgument(
            f"{field} has {len(extensions)} keys; at most {MAX_EXTENSIONS} are allowed",
            field=field,
        )
    for key, value in extensions.items():
        where = f"{field}.{key}"[:200]
        if not rules.METADATA_KEY_PATTERN.match(key):
            raise InvalidArgument(
                f"{where[:120]}: the key must be 1-{rules.MAX_METADATA_KEY_LENGTH} "
                "characters of letters, digits, '_', '.' and '-'",
                field=where,
            )
        if key.startswith(RESERVED_PREFIX):
            raise InvalidArgument(
                f"{where}: keys starting {RESERVED_PREFIX!r} are reserved for the service's "
                "own front matter",
                field=where,
            )
        if key in FRONT_MATTER_KEYS:
            raise InvalidArgument(
                f"{where}: {key!r} is a claim field's own front-matter key, not an "
                "extension; give the field itself",
                field=where,
            )
        check_length(value, MAX_EXTENSION_VALUE_LENGTH, where)
        try:
            json.loads(value)
        except ValueError:
            raise InvalidArgument(
                f'{where} must be JSON text (the key\'s value as JSON, such as "blue" or [1, 2])',
                field=where,
            ) from None


def check_time_zone(name: str, field: str = "timeZone") -> ZoneInfo:
    """An IANA time zone name of this server's tz database, as a ZoneInfo."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidArgument(
            f"{field} {name[:80]!r} is not an IANA time zone name (such as UTC, "
            "Europe/Lisbon or America/Los_Angeles)",
            field=field,
        ) from None


def remembered_for(since: datetime, now: datetime) -> str:
    """How long a claim has been remembered, as a person says it: "today", "1 day",
    "12 days", "5 weeks", "3 months", "2 years" (whole units, rounded down; a time in the
    future counts as today). Search candidates and the memory card show it as `age`."""
    days = max(0, (now - since).days)
    if days == 0:
        return "today"
    for unit, size in (("year", 365), ("month", 30), ("week", 7), ("day", 1)):
        if days >= size * (2 if unit in ("month", "week") else 1):
            count = days // size
            return f"{count} {unit}{'' if count == 1 else 's'}"
    return "today"  # unreachable: days >= 1 matches "day"
