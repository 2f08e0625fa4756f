"""The memory card (family-memory-design.md §10, "Seeing what we know"): a scope's claims
one per item, newest first, and the filter a card request may carry.

Order: `created_at` descending (the commit that wrote the claim: its formedAt, except a
claim imported from OKF files, whose formedAt is the one it was imported with while its
place in the card is the import's), then id ascending. A card key is (created_at, id).

The filter is a subset of AIP-160: terms joined with `AND`, each `field = "value"` (the
value quoted or bare) on one of

    status      = active | dormant | expired | superseded | retracted
    type        = identity | directive | preference | fact | constraint | relationship
    sensitivity = normal | health | finances | minors
    appliesTo   = NODE_ID     (also `appliesTo: NODE_ID`: the claim applies to that node)

each field at most once. Without a status term the card lists every status but
`retracted`: the person sees what is remembered, corrected (superseded), lapsed
(expired) and resting (dormant) claims included, each with its status; a retracted claim
is one they asked to forget, shown only when the filter asks for it. Sensitive claims
are listed like any other. Anything else is INVALID_ARGUMENT naming the term. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from jennah.domain import rules
from jennah.domain.models import MemoryType, Sensitivity, Status
from jennah.errors import InvalidArgument

MAX_FILTER_LENGTH = 1000
# what the card lists when the filter names no status
DEFAULT_STATUSES = frozenset(Status) - {Status.RETRACTED}
FILTER_FIELDS = ("status", "type", "sensitivity", "appliesTo")

_TERM = re.compile(r'^\s*(?P<field>[A-Za-z_]+)\s*(?P<op>=|:)\s*(?P<value>"[^"]*"|[^\s"]+)\s*$')
_AND = re.compile(r"\s+AND\s+")

_E = TypeVar("_E", MemoryType, Sensitivity, Status)
CardKey = tuple[datetime, str]  # (created_at, id): the card lists claims by it


@dataclass(frozen=True)
class ClaimFilter:
    """What the card lists: claims of one of `statuses`, and of `type`, `sensitivity`
    and applying to node `applies_to` when given."""

    statuses: frozenset[Status] = DEFAULT_STATUSES
    type: MemoryType | None = None
    sensitivity: Sensitivity | None = None
    applies_to: str | None = None

    def canonical(self) -> str:
        """The filter as one string, equal for equal filters (a page token binds it)."""
        statuses = ",".join(sorted(s.value for s in self.statuses))
        return f"status={statuses};type={self.type};sensitivity={self.sensitivity};" + (
            f"appliesTo={self.applies_to}"
        )


def parse_filter(text: str, field: str = "filter") -> ClaimFilter:
    """The ClaimFilter a card request's filter spells (see the module docstring)."""
    if len(text) > MAX_FILTER_LENGTH:
        raise InvalidArgument(
            f"{field} is {len(text)} characters; at most {MAX_FILTER_LENGTH} are allowed",
            field=field,
        )
    if not text.strip():
        return ClaimFilter()
    given: dict[str, str] = {}
    for term in _AND.split(text.strip()):
        name, value = _term(term, field)
        if name in given:
            raise _bad(field, term, f"{name} is named twice; name each field once")
        given[name] = value
    return ClaimFilter(
        statuses=_statuses(given, field),
        type=_enum(given, "type", MemoryType, field),
        sensitivity=_enum(given, "sensitivity", Sensitivity, field),
        applies_to=_node(given, field),
    )


def _term(term: str, field: str) -> tuple[str, str]:
    match = _TERM.match(term)
    if match is None:
        raise _bad(field, term, 'a term must be FIELD = "VALUE", terms joined with AND')
    name, op, value = match["field"], match["op"], match["value"].strip('"')
    if name not in FILTER_FIELDS:
        raise _bad(
            field, term, f"{name!r} is not a field to filter on ({', '.join(FILTER_FIELDS)})"
        )
    if op == ":" and name != "appliesTo":
        raise _bad(field, term, f"{name} takes '=' (':' is for appliesTo)")
    return name, value


def _statuses(given: dict[str, str], field: str) -> frozenset[Status]:
    if "status" not in given:
        return DEFAULT_STATUSES
    status = _enum(given, "status", Status, field)
    assert status is not None
    return frozenset({status})


def _enum(given: dict[str, str], name: str, kind: type[_E], field: str) -> _E | None:
    if name not in given:
        return None
    value = given[name]
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(member.value for member in kind)
        raise _bad(field, f"{name} = {value!r}", f"{name} is one of {allowed}") from None


def _node(given: dict[str, str], field: str) -> str | None:
    value = given.get("appliesTo")
    if value is not None and not rules.IDENTIFIER_PATTERN.fullmatch(value):
        raise _bad(field, f"appliesTo = {value!r}", "appliesTo names a node id (an identifier)")
    return value


def _bad(field: str, term: str, why: str) -> InvalidArgument:
    return InvalidArgument(
        f"{field} term {term.strip()[:120]!r} is not understood: {why}",
        field=field,
        metadata={"term": term.strip()[:120]},
    )
